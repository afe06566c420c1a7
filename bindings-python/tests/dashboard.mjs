// Drives the dashboard of a running `deadletter serve` in headless Chromium (the launcher of the
// browser tests: Debian's Chromium through playwright-core). Run by tests/test_dashboard.py, which
// starts the server, checks the database afterwards, and reads the JSON this prints last.
//
// Usage: node dashboard.mjs URL TOKEN QUEUE SCREENSHOT_DIR
// Steps: open the page on QUEUE, give the token it asks for, read the dead letters, open one
// message (payload and error), replay it with its row's button, check that its row is gone (and
// the counts changed, when the server has queue statistics), screenshot each view.

import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { launchChromium, newPage } from "../../bindings-wasm/tests/browser/chromium.mjs";

const [url, token, queue, shots] = process.argv.slice(2);
const TIMEOUT = 30_000;

const ready = (page) =>
  page.waitForFunction(() => ["ready", "error", "needs-token"].includes(document.body.dataset.state), null, {
    timeout: TIMEOUT,
  });

async function deadIds(page) {
  return page.$$eval("#dead-table tbody tr", (rows) => rows.map((r) => Number(r.dataset.id)));
}

async function counts(page) {
  if (!(await page.isVisible("#count-dead"))) return null;
  return page.$$eval(".counts dd", (dds) => Object.fromEntries(dds.map((dd) => [dd.id.slice(6), Number(dd.textContent)])));
}

const browser = await launchChromium();
const result = { chromium: browser.version() };
try {
  const page = await newPage(browser, "dashboard");
  await mkdir(shots, { recursive: true });
  await page.goto(`${url}/#${new URLSearchParams({ queue })}`);
  await ready(page);
  result.askedForToken = await page.isVisible("#token-form");
  await page.fill("#token", token);
  await page.click("#token-form button[type=submit]");
  await page.waitForSelector("#dead-table tbody tr", { timeout: TIMEOUT });
  await ready(page);
  result.state = await page.evaluate(() => document.body.dataset.state);
  result.queueTitle = await page.textContent("#queue-name");
  result.deadBefore = await deadIds(page);
  result.errors = await page.$$eval("#dead-table tbody td.error", (tds) => tds.map((td) => td.textContent));
  result.countsBefore = await counts(page);
  result.countsWaiting = await page.isVisible("#counts-waiting");
  result.queuesWaiting = await page.isVisible("#queues-waiting");
  result.replayAllDisabled = await page.isDisabled("#replay-all");
  result.purgeDisabled = await page.isDisabled("#purge");
  result.screenshotQueue = join(shots, "dashboard.png");
  await page.screenshot({ path: result.screenshotQueue, fullPage: true });

  // One message: its payload and its error.
  const target = result.deadBefore[0];
  await page.click(`#dead-table tbody tr[data-id="${target}"] a`);
  await page.waitForSelector("#message:not([hidden])", { timeout: TIMEOUT });
  await ready(page);
  result.payload = await page.textContent("#payload");
  result.history = await page.$$eval("#history li", (lis) => lis.map((li) => li.textContent));
  result.screenshotMessage = join(shots, "dashboard-message.png");
  await page.screenshot({ path: result.screenshotMessage, fullPage: true });

  // Replay it with its row's button.
  result.replayed = target;
  await page.click(`#dead-table tbody tr[data-id="${target}"] button.replay`);
  await page.waitForFunction((id) => !document.querySelector(`#dead-table tbody tr[data-id="${id}"]`), target, {
    timeout: TIMEOUT,
  });
  await ready(page);
  result.notice = await page.textContent("#notice");
  result.deadAfter = await deadIds(page);
  result.countsAfter = await counts(page);
  result.replayOneDisabled = await page.isDisabled("#replay-one");
  result.screenshotReplayed = join(shots, "dashboard-replayed.png");
  await page.screenshot({ path: result.screenshotReplayed, fullPage: true });
  await page.context().close();
} catch (error) {
  result.failure = String(error.stack ?? error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
