// Drives the console's search, bulk actions and retry now in headless Chromium as an operator
// would (Debian's Chromium through playwright-core). Run by tests/test_console_search.py, which
// starts the server, checks the database afterwards and reads the JSON this prints last.
//
// Usage: node console_search.mjs URL TOKEN QUEUE ARCHIVE_QUEUE INVOICE SCREENSHOT_DIR
// Steps: search QUEUE's dead letters for INVOICE and open the one found; paste that link into a
// new tab; back twice; a time range in the browser's zone, its link opened in another zone;
// filter by the error "timeout", select all N matching and replay them; select two messages
// from the keyboard and delete them; retry one delayed message now from its row, one from its
// panel, then all the others; search ARCHIVE_QUEUE for "needle", which stops at the scan
// budget, and search further. Dialogs are accepted.

import { mkdir } from "node:fs/promises";
import { TIMEOUT, act, rowIds, run, screenshot, settled, signedIn } from "./console_page.mjs";

const [url, token, queue, archive, invoice, shots] = process.argv.slice(2);
const viewport = { width: 1280, height: 800 };
const KOLKATA = "Asia/Kolkata"; // UTC+5:30: a zone whose offset is not whole hours
const text = (page, selector) => page.textContent(selector);
const hash = (page) => page.evaluate(() => location.hash);
const search = async (page, field, value) => {
  await page.fill(`#search [name="${field}"]`, value);
  await act(page, () => page.click("#search button[type=submit]"));
};
const checkbox = (id) => `#messages tbody tr[data-id="${id}"] td.select input`;

/** Checks the box of `selector` (or runs `selector`, a step that checks one), and waits for
 * "Select all N matching" to have its N. */
async function check(page, selector) {
  await (typeof selector === "function" ? selector() : page.click(selector));
  await page.waitForFunction(() => /\d/.test(document.getElementById("select-matching").textContent), null, {
    timeout: TIMEOUT,
  });
  await settled(page);
}

const result = { dialogs: [] };
await run(result, async (browser) => {
  await mkdir(shots, { recursive: true });
  const tab = (hash, timezoneId) => signedIn(browser, { url, token, viewport, hash, dialogs: result.dialogs, timezoneId });
  const { page } = await tab(`#queue=${queue}`, KOLKATA);

  // Search the dead letters by payload; open the one found.
  await search(page, "payload_contains", invoice);
  result.byPayload = { ids: await rowIds(page), caption: await text(page, "#list-caption") };
  await act(page, () => page.click('#messages tbody tr[data-id="7"] a'));
  Object.assign(result.byPayload, {
    title: await text(page, "#message-title"),
    payload: await text(page, "#payload"),
    hash: await hash(page),
  });
  result.shotSearch = await screenshot(page, shots, "console-search.png");

  // The link, pasted into a new tab, restores the search and the open message.
  const pasted = await tab(result.byPayload.hash, KOLKATA);
  result.pasted = {
    asked: pasted.asked,
    input: await pasted.page.inputValue('#search [name="payload_contains"]'),
    ids: await rowIds(pasted.page),
    title: await text(pasted.page, "#message-title"),
  };
  await pasted.page.context().close();

  // Back twice: the message closes, then the search goes.
  await act(page, () => page.goBack());
  await act(page, () => page.goBack());
  result.back = { ids: await rowIds(page), input: await page.inputValue('#search [name="payload_contains"]') };

  // A time range in the browser's zone (UTC+5:30 here) goes to the URL in UTC; the link opened
  // in New York (UTC-5 in January) shows the same instant in its zone.
  await page.click("#search details summary");
  await search(page, "dead_before", "2000-01-01T05:30:00");
  result.timeRange = { hash: await hash(page), ids: await rowIds(page), empty: await text(page, "#empty") };
  const elsewhere = await tab(result.timeRange.hash, "America/New_York");
  result.timeRange.elsewhere = {
    input: await elsewhere.page.inputValue('#search [name="dead_before"]'),
    open: await elsewhere.page.$eval("#search details", (details) => details.open),
    empty: await text(elsewhere.page, "#empty"),
  };
  await elsewhere.page.context().close();
  await act(page, () => page.click("#clear-filters"));
  await page.click("#search details summary"); // "More filters" closed again

  // Filter by error; select one, then all N matching; replay them (the dialog says N).
  await search(page, "error_contains", "timeout");
  result.byError = await rowIds(page);
  await check(page, "#messages tbody tr:first-child td.select input");
  result.beforeAll = await text(page, "#bulk-status");
  result.selectAllLabel = await text(page, "#select-matching");
  await act(page, () => page.click("#select-matching"));
  result.allSelected = await text(page, "#bulk-status");
  result.focusAfterSelectAll = await page.evaluate(() => document.activeElement.id);
  result.shotBulk = await screenshot(page, shots, "console-bulk.png");
  await act(page, () => page.click('#messages tbody tr[data-id="3"] a')); // the selection stays
  result.openWhileSelected = await text(page, "#bulk-status");
  await page.evaluate(() => scrollTo(0, 0));
  // The README's (docs/console.png: scaled to 1024 px wide, 256 colours).
  result.shotReadme = await screenshot(page, shots, "console-readme.png", { clip: { x: 0, y: 0, width: 1280, height: 720 } });
  await act(page, () => page.click("#bulk-replay"));
  result.replayed = await text(page, "#notice");
  result.afterReplay = { ids: await rowIds(page), empty: await text(page, "#empty") };
  await act(page, () => page.click("#select-matching")); // none left: nothing to select
  Object.assign(result.afterReplay, {
    bar: await text(page, "#bulk-status"),
    selectHidden: await page.isHidden("#select-matching"),
    replayDisabled: await page.isDisabled("#bulk-replay"),
  });

  // Two messages selected from the keyboard (Space; Tab past row 1's link and buttons to row 2's
  // box, its focus visible), then deleted (Enter on the bulk button).
  await act(page, () => page.click("#clear-filters"));
  await page.focus(checkbox(1));
  await check(page, () => page.keyboard.press("Space"));
  for (let i = 0; i < 4; i += 1) await page.keyboard.press("Tab");
  result.keyboard = await page.evaluate(() => ({
    focused: document.activeElement.dataset.key,
    outline: getComputedStyle(document.activeElement).outlineStyle,
  }));
  await page.keyboard.press("Space");
  result.keyboard.selected = await text(page, "#bulk-status");
  await page.focus("#bulk-delete");
  await act(page, () => page.keyboard.press("Enter"));
  result.deleted = await text(page, "#notice");
  result.deadAfterDelete = await rowIds(page);

  // The delayed tab: one retried now from its row, one from its panel, then all the others.
  await act(page, () => page.click("#tab-delayed"));
  result.delayedTab = { ids: await rowIds(page), hash: await hash(page) };
  const [first, second] = result.delayedTab.ids;
  await act(page, () => page.click(`#messages tbody tr[data-id="${first}"] button.retry-now`));
  result.retriedOne = await text(page, "#notice");
  result.delayedAfterOne = await rowIds(page);
  await act(page, () => page.click(`#messages tbody tr[data-id="${second}"] a`));
  await act(page, () => page.click("#retry-now-one"));
  result.retriedInPanel = {
    notice: await text(page, "#notice"),
    buttonHidden: await page.isHidden("#retry-now-one"),
    nextAttempt: await page.$eval("#message-fields", (dl) =>
      [...dl.querySelectorAll("div")].find((d) => d.querySelector("dt").textContent === "next attempt").querySelector("dd").textContent),
    ids: await rowIds(page),
  };
  await check(page, "#select-page");
  await act(page, () => page.click("#select-matching"));
  await act(page, () => page.click("#bulk-retry-now"));
  result.retriedAll = await text(page, "#notice");
  result.delayedAfterAll = await rowIds(page);

  // A payload search over more messages than the server examines per request.
  await act(page, () => page.evaluate((name) => { location.hash = `#queue=${encodeURIComponent(name)}`; }, archive));
  result.archiveTab = await page.$eval("#tab-pending", (tab) => tab.textContent.replace(/\s+/g, " ").trim());
  await search(page, "payload_contains", "needle");
  result.stopped = {
    ids: await rowIds(page),
    note: await text(page, "#scan-note"),
    button: await text(page, "#next-page"),
  };
  result.shotStopped = await screenshot(page, shots, "console-stopped.png");
  await act(page, () => page.click("#next-page"));
  result.further = {
    ids: await rowIds(page),
    noteHidden: await page.isHidden("#scan-note"),
    nextDisabled: await page.isDisabled("#next-page"),
    hash: await hash(page),
  };
  await page.context().close();
});
