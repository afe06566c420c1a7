// Drives the console of a running `deadletter serve` in headless Chromium as an operator would
// (Debian's Chromium through playwright-core). Run by tests/test_dashboard.py, which starts the
// server, stops and restarts it when asked (a line "@stop" or "@start" on stdout, answered
// "done" on stdin), checks the database afterwards and reads the JSON this prints last.
//
// Usage: node dashboard.mjs URL TOKEN QUEUE LONG_QUEUE SCREENSHOT_DIR
// Steps: the token prompt; the queue table; every status tab of QUEUE with its rows and the
// next page; the message of row 40 opened beside the list; reload, back and forward; replay
// and delete one; the dead ones whose error contains "410" all selected and replayed; every
// succeeded one selected and deleted; pause and resume; the stored settings; the expired lease
// reaped; the server stopped and started again; a 400 px wide tab on LONG_QUEUE. Dialogs are
// accepted.

import { mkdir } from "node:fs/promises";
import { createInterface } from "node:readline";
import { TIMEOUT, act, rowIds, run, screenshot as shoot, settled, signedIn as signIn, tabs } from "./console_page.mjs";

const [url, token, queue, longQueue, shots] = process.argv.slice(2);
const answers = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

/** Asks the test to do `what` (stop, start) and waits until it is done. */
async function ask(what) {
  console.log(`@${what}`);
  await answers.next();
}

const text = (page, selector) => page.textContent(selector);
const selectedTab = (page) => page.$eval('#tabs [aria-selected="true"]', (tab) => tab.dataset.status);
const fields = (selector) => (page) => page.$$eval(`${selector} div`, (divs) =>
  Object.fromEntries(divs.map((d) => [d.querySelector("dt").textContent, d.querySelector("dd").textContent])));
const messageFields = fields("#message-fields");
const settings = fields("#settings-list");

/** Whether the element is on screen (its top within the viewport) and how far right it reaches. */
const placement = (page, selector) => page.$eval(selector, (el) => {
  const box = el.getBoundingClientRect();
  return { top: Math.round(box.top), right: Math.round(box.right), inView: box.top >= 0 && box.top < innerHeight };
});

const screenshot = (page, name, fullPage = false) => shoot(page, shots, name, { fullPage });

/** A new tab of `viewport` that has given the token the console asked for. */
async function signedIn(browser, viewport, hash) {
  const { page, asked } = await signIn(browser, { url, token, viewport, hash, dialogs: (result.dialogs ??= []) });
  result.askedForToken ??= asked;
  return page;
}

/** Selects every message the list's filters match: the page's checkbox, then "Select all N
 * matching" once N is counted. What the bulk bar then says. */
async function selectAllMatching(page) {
  await page.click("#select-page");
  await page.waitForFunction(() => /\d/.test(document.getElementById("select-matching").textContent), null, { timeout: TIMEOUT });
  await settled(page);
  await act(page, () => page.click("#select-matching"));
  return text(page, "#bulk-status");
}

const result = {};
await run(result, async (browser) => {
  await mkdir(shots, { recursive: true });
  const page = await signedIn(browser, { width: 1280, height: 800 }, "");
  result.state = await page.evaluate(() => document.body.dataset.state);
  result.queues = await page.$$eval("#queue-table tbody tr", (rows) => rows.map((r) => ({
    name: r.querySelector("a").title,
    cells: [...r.cells].slice(1).map((td) => td.textContent),
    countsRight: Math.max(...[...r.cells].slice(1).map((td) => td.getBoundingClientRect().right)),
  })));
  result.shotQueues = await screenshot(page, "console-queues.png");

  // The queue opens on its dead letters; every status tab shows its messages.
  await act(page, () => page.click(`#queue-table tbody tr[data-queue="${queue}"] a`));
  result.defaultTab = await selectedTab(page);
  result.tabs = await tabs(page);
  result.facts = await fields("#facts")(page);
  result.byStatus = {};
  for (const status of await page.$$eval("#tabs .tab", (all) => all.map((t) => t.dataset.status))) {
    await act(page, () => page.click(`#tab-${status}`));
    result.byStatus[status] = {
      ids: await rowIds(page),
      marked: await page.$$eval("#messages tbody tr", (rows) =>
        rows.filter((r) => r.querySelector(".badge")).map((r) => [Number(r.dataset.id), r.querySelector(".badge").textContent])),
      hash: await page.evaluate(() => location.hash),
    };
    if (await page.isEnabled("#next-page")) {
      await act(page, () => page.click("#next-page"));
      result.byStatus[status].next = { ids: await rowIds(page), hash: await page.evaluate(() => location.hash) };
      await act(page, () => page.click("#first-page"));
    }
  }
  // Arrow keys move between tabs.
  await page.focus("#tab-dead");
  await act(page, () => page.keyboard.press("ArrowLeft"));
  result.arrowLeftOfDead = await selectedTab(page);
  await act(page, () => page.click("#tab-dead"));

  // Row 40 opens beside the list, in view, its title focused.
  await page.locator("#messages tbody tr").nth(39).scrollIntoViewIfNeeded();
  result.row40 = (await rowIds(page))[39];
  await act(page, () => page.locator("#messages tbody tr").nth(39).locator("a").click());
  result.opened = await text(page, "#message-title");
  result.panel = await placement(page, "#message");
  result.focused = await page.evaluate(() => document.activeElement.id);
  result.current = await page.$$eval('#messages tbody tr[aria-current="true"]', (rows) => rows.map((r) => Number(r.dataset.id)));
  result.shotMessage = await screenshot(page, "console-message.png");
  result.hashOpen = await page.evaluate(() => location.hash);

  // A reload keeps the view (and the token); back closes the message, forward opens it again.
  await act(page, () => page.reload());
  result.afterReload = {
    hash: await page.evaluate(() => location.hash),
    tab: await selectedTab(page),
    title: await text(page, "#message-title"),
    panel: await placement(page, "#message"),
    askedForToken: await page.isVisible("#token-form"),
  };
  await act(page, () => page.goBack());
  result.afterBack = { hash: await page.evaluate(() => location.hash), panelHidden: await page.isHidden("#message") };
  await act(page, () => page.goForward());
  result.afterForward = await text(page, "#message-title");

  // The message with two failed attempts: its history and payload; replayed from the panel.
  await act(page, () => page.click('#messages tbody tr[data-id="2"] a'));
  result.history = await page.$$eval("#history li", (lis) => lis.map((li) => li.textContent));
  result.historyTitles = await page.$$eval("#history time", (times) => times.map((t) => t.title));
  result.payload = await text(page, "#payload");
  result.fields = await messageFields(page);
  await act(page, () => page.click("#replay-one"));
  result.replayNotice = await text(page, "#notice");
  result.replayedFields = await messageFields(page);
  result.replayDisabled = await page.isDisabled("#replay-one");
  result.tabsAfterReplay = await tabs(page);

  // Delete one with its row's button (confirmed).
  await act(page, () => page.click('#messages tbody tr[data-id="3"] button.delete'));
  result.deleteNotice = await text(page, "#notice");
  result.deadAfterDelete = await rowIds(page);

  // Filter by error "410", select all N matching, replay them (the dialog gives the count).
  await page.fill('#search [name="error_contains"]', "410");
  await act(page, () => page.click("#search button[type=submit]"));
  result.filteredIds = await rowIds(page);
  result.selectedAll = await selectAllMatching(page);
  await act(page, () => page.click("#bulk-replay"));
  result.replayAllNotice = await text(page, "#notice");
  result.tabsAfterReplayAll = await tabs(page);
  await act(page, () => page.click("#clear-filters"));

  // Delete every succeeded message: "Select all matching" at once (its count not made yet).
  await act(page, () => page.click("#tab-succeeded"));
  result.selectLabelBefore = await text(page, "#select-matching");
  await act(page, () => page.click("#select-matching"));
  result.selectedSucceeded = await text(page, "#bulk-status");
  result.checkedSucceeded = await page.$$eval("#messages tbody input:checked", (boxes) => boxes.length);
  await act(page, () => page.click("#bulk-delete"));
  result.deleteAllNotice = await text(page, "#notice");

  // Pause and resume; the stored settings.
  await act(page, () => page.click("#pause"));
  result.paused = { state: await text(page, "#queue-state"), button: await text(page, "#pause"), settings: await settings(page) };
  await act(page, () => page.click("#pause"));
  result.resumed = { state: await text(page, "#queue-state"), button: await text(page, "#pause"), settings: await settings(page) };
  // Take back the expired lease (only a claim did, and a paused queue claims nothing).
  result.reapShown = await page.isVisible("#reap");
  await act(page, () => page.click("#reap"));
  result.reapNotice = await text(page, "#notice");
  result.reapShownAfter = await page.isVisible("#reap");
  await act(page, () => page.click("#tab-dead"));
  result.shotQueue = await screenshot(page, "console-queue.png");

  // The server stops: a banner says so; it answers again: the banner goes by itself.
  await ask("stop");
  await page.waitForSelector("#banner:not([hidden])", { timeout: TIMEOUT });
  result.banner = (await text(page, "#banner")).replace(/\s+/g, " ").trim();
  result.shotDown = await screenshot(page, "console-down.png");
  await ask("start");
  await page.waitForSelector("#banner", { state: "hidden", timeout: TIMEOUT });
  result.recovered = await text(page, "#notice");
  await page.context().close();

  // 400 px wide, a 255-character queue name: nothing pushed off-screen.
  const narrow = await signedIn(browser, { width: 400, height: 800 }, "#");
  result.narrow = {
    scrollWidth: await narrow.evaluate(() => document.documentElement.scrollWidth),
    rows: await narrow.$$eval("#queue-table tbody tr", (rows) => rows.map((r) => ({
      name: r.querySelector("a").title,
      right: Math.max(...[...r.cells].map((td) => td.getBoundingClientRect().right)),
    }))),
  };
  result.shotNarrow = await screenshot(narrow, "console-narrow.png", true);
  await act(narrow, () => narrow.click(`#queue-table tbody tr[data-queue="${longQueue}"] a`));
  result.narrowQueue = {
    title: await narrow.$eval("#queue-title", (h) => ({ text: h.textContent, title: h.title, clipped: h.scrollWidth > h.clientWidth })),
    scrollWidth: await narrow.evaluate(() => document.documentElement.scrollWidth),
    selectable: { page: await narrow.isVisible("#select-page"), row: await narrow.isVisible("#messages tbody td.select input") },
  };
  result.shotNarrowQueue = await screenshot(narrow, "console-narrow-queue.png", true);
  await act(narrow, () => narrow.locator("#messages tbody tr a").first().click());
  result.narrowMessage = {
    panel: await placement(narrow, "#message"),
    listHidden: await narrow.isHidden("#list-pane"),
    scrollWidth: await narrow.evaluate(() => document.documentElement.scrollWidth),
  };
  result.shotNarrowMessage = await screenshot(narrow, "console-narrow-message.png");
  await act(narrow, () => narrow.click("#close-message"));
  result.narrowBack = { listVisible: await narrow.isVisible("#list-pane"), hash: await narrow.evaluate(() => location.hash) };
  await narrow.context().close();
});
