// What the console's Chromium drivers (dashboard.mjs, console_search.mjs) share: waiting until
// the console has loaded what a step started (body[data-state]), a signed-in tab, screenshots,
// and the run that prints what the steps saw.

import { join } from "node:path";
import { launchChromium, pageIn } from "../../bindings-wasm/tests/browser/chromium.mjs";

export const TIMEOUT = 30_000;

/**
 * Runs `steps(browser)` in headless Chromium, then prints `result` (where the steps write what
 * they saw, `failure` added when one threw) as the last line of stdout for chromium_driver.py.
 */
export async function run(result, steps) {
  const browser = await launchChromium();
  result.chromium = browser.version();
  try {
    await steps(browser);
  } catch (error) {
    result.failure = String(error.stack ?? error);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(result));
  process.exit(0);
}

/** Waits until the console is done: ready, or showing an error or the token form. */
export const settled = (page) =>
  page.waitForFunction(() => ["ready", "error", "needs-token"].includes(document.body.dataset.state), null, {
    timeout: TIMEOUT,
  });

/** Runs `step` (a click, a navigation) and waits until the console has loaded what it started. */
export async function act(page, step) {
  await page.evaluate(() => { document.body.dataset.state = "clicked"; });
  await step();
  await settled(page);
}

/**
 * A new tab of `viewport` (in its own context, in the time zone `timezoneId` if given) on `url` +
 * `hash` that has given `token` when the console asked for it; each dialog's message is pushed
 * to `dialogs` and accepted, unless `accept(message)` says false (then dismissed: Cancel).
 * `asked`: whether the token form showed.
 */
export async function signedIn(browser, { url, token, viewport, hash, dialogs, timezoneId, accept = () => true }) {
  const page = await pageIn(await browser.newContext({ viewport, timezoneId }), "console");
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    if (accept(dialog.message())) dialog.accept();
    else dialog.dismiss();
  });
  await page.goto(`${url}/${hash}`);
  await settled(page);
  const asked = await page.isVisible("#token-form");
  await act(page, async () => {
    await page.fill("#token", token);
    await page.click("#token-form button[type=submit]");
  });
  return { page, asked };
}

/** A screenshot of `page` in `dir`; its path. */
export async function screenshot(page, dir, name, options = {}) {
  const path = join(dir, name);
  await page.screenshot({ path, ...options });
  return path;
}

/** The ids of the list's rows, in order. */
export const rowIds = (page) => page.$$eval("#messages tbody tr", (rows) => rows.map((r) => Number(r.dataset.id)));

/** The tabs' texts ("dead 45"), whitespace collapsed. */
export const tabs = (page) =>
  page.$$eval("#tabs .tab", (all) => all.map((t) => t.textContent.replace(/\s+/g, " ").trim()));
