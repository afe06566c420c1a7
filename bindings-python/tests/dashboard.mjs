// Drives the dashboard of a running `deadletter serve` in headless Chromium (the launcher of the
// browser tests: Debian's Chromium through playwright-core). Run by tests/test_dashboard.py, which
// starts the server, checks the database afterwards, and reads the JSON this prints last.
//
// Usage: node dashboard.mjs URL TOKEN QUEUE SCREENSHOT_DIR
// Steps: open the page on QUEUE, give the token it asks for, read the queue list, the counts and
// the dead letters; open the first dead message (payload, errors); replay it with its row's
// button and read the counts again; open the message with a history of several attempts; replay
// all the dead messages whose error contains "410"; purge the succeeded ones; screenshot each
// view. Confirmation dialogs are accepted.

import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { launchChromium, newPage } from "../../bindings-wasm/tests/browser/chromium.mjs";

const [url, token, queue, shots] = process.argv.slice(2);
const TIMEOUT = 30_000;

const ready = (page) =>
  page.waitForFunction(() => ["ready", "error", "needs-token"].includes(document.body.dataset.state), null, {
    timeout: TIMEOUT,
  });

/** Clicks `selector` and waits until the action it started is over. */
async function act(page, selector) {
  await page.evaluate(() => { document.body.dataset.state = "clicked"; });
  await page.click(selector);
  await ready(page);
}

async function deadIds(page) {
  return page.$$eval("#dead-table tbody tr", (rows) => rows.map((r) => Number(r.dataset.id)));
}

async function counts(page) {
  return page.$$eval("#counts dd", (dds) => Object.fromEntries(dds.map((dd) => [dd.id.slice(6), dd.textContent])));
}

async function queueRows(page) {
  return page.$$eval("#queue-table tbody tr", (rows) =>
    rows.map((r) => [...r.cells].map((td) => td.textContent)),
  );
}

async function screenshot(page, name) {
  const path = join(shots, name);
  await page.screenshot({ path, fullPage: true });
  return path;
}

const browser = await launchChromium();
const result = { chromium: browser.version() };
try {
  const page = await newPage(browser, "dashboard");
  page.on("dialog", (dialog) => {
    (result.dialogs ??= []).push(dialog.message());
    dialog.accept();
  });
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
  result.queuesBefore = await queueRows(page);
  result.deadBefore = await deadIds(page);
  result.errors = await page.$$eval("#dead-table tbody td.error .last", (spans) => spans.map((s) => s.textContent));
  result.rowHistories = await page.$$eval("#dead-table tbody tr", (rows) =>
    rows.map((r) => [...r.querySelectorAll("ol.history li")].map((li) => li.textContent)),
  );
  result.countsBefore = await counts(page);
  result.screenshotQueue = await screenshot(page, "dashboard.png");

  // One message: its payload and its error.
  const target = result.deadBefore[0];
  await page.click(`#dead-table tbody tr[data-id="${target}"] a`);
  await page.waitForSelector("#message:not([hidden])", { timeout: TIMEOUT });
  await ready(page);
  result.payload = await page.textContent("#payload");
  result.history = await page.$$eval("#history li", (lis) => lis.map((li) => li.textContent));

  // Replay it with its row's button.
  result.replayed = target;
  await act(page, `#dead-table tbody tr[data-id="${target}"] button.replay`);
  result.notice = await page.textContent("#notice");
  result.deadAfter = await deadIds(page);
  result.countsAfter = await counts(page);
  result.replayOneDisabled = await page.isDisabled("#replay-one");
  result.screenshotReplayed = await screenshot(page, "dashboard-replayed.png");

  // The message with several failed attempts.
  const several = result.rowHistories.findIndex((h) => h.length > 1);
  const other = result.deadBefore[several];
  await page.click(`#dead-table tbody tr[data-id="${other}"] a`);
  await page.waitForFunction((id) => document.querySelector("#message-id").textContent.startsWith(`${id} `), other, {
    timeout: TIMEOUT,
  });
  await ready(page);
  result.longHistory = await page.$$eval("#history li", (lis) => lis.map((li) => li.textContent));
  result.screenshotMessage = await screenshot(page, "dashboard-message.png");

  // Replay all matching a filter.
  await page.fill("#error-contains", "410");
  await act(page, "#replay-all");
  result.replayAllNotice = await page.textContent("#notice");
  result.deadAfterReplayAll = await deadIds(page);
  result.countsAfterReplayAll = await counts(page);

  // An empty age purges nothing: the form does not submit (no confirmation asked).
  await page.selectOption("#purge-status", "succeeded");
  await page.fill("#purge-days", "");
  const asked = (result.dialogs ?? []).length;
  await page.click("#purge");
  await page.waitForTimeout(300); // a confirmation would have been reported by now
  result.emptyAgeDialogs = (result.dialogs ?? []).length - asked;
  result.emptyAgeValid = await page.$eval("#purge-days", (input) => input.validity.valid);
  result.countsAfterEmptyAge = await counts(page);

  // Purge the succeeded messages.
  await page.fill("#purge-days", "0");
  await act(page, "#purge");
  result.purgeNotice = await page.textContent("#notice");
  result.countsAfterPurge = await counts(page);
  result.queuesAfter = await queueRows(page);
  result.screenshotEnd = await screenshot(page, "dashboard-end.png");
  result.finalState = await page.evaluate(() => document.body.dataset.state);
  await page.context().close();
} catch (error) {
  result.failure = String(error.stack ?? error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
