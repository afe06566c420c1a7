// Drives the console's small things in headless Chromium: run by test_console_small.py against a
// running `deadletter serve` with a token (new-user findings M11, M17, session 7).
//
// Usage: node console_small.mjs URL TOKEN ORDERS HAY SCREENSHOT_DIR
// Steps: links to ORDERS with a tab that is no tab ("Dead", "nope") and with "delayed"; two
// dead messages selected on page 1, then Next page; a message open at 1000, 1200 and 1280 px
// (every row's buttons); the stored settings; a payload search of HAY that stops at the scan budget before
// finding anything. Dialogs are accepted.

import { mkdir } from "node:fs/promises";
import { act, run, screenshot, signedIn } from "./console_page.mjs";

const [url, token, orders, hay, shots] = process.argv.slice(2);
const text = (page, selector) => page.textContent(selector);
const hash = (page) => page.evaluate(() => location.hash);
const selectedTab = (page) => page.$eval('#tabs [aria-selected="true"]', (tab) => tab.dataset.status);
const noticeOf = async (page) => ({
  text: await text(page, "#notice-text"),
  error: await page.$eval("#notice", (notice) => notice.classList.contains("error")),
});

const result = { dialogs: [] };
await run(result, async (browser) => {
  await mkdir(shots, { recursive: true });
  const open = async (hash, viewport = { width: 1280, height: 800 }) =>
    (await signedIn(browser, { url, token, viewport, hash, dialogs: result.dialogs })).page;
  const q = `#queue=${encodeURIComponent(orders)}`;

  // Links whose tab is no tab, and the delayed tab by its name.
  result.links = {};
  for (const status of ["Dead", "nope", "delayed"]) {
    const page = await open(`${q}&status=${status}`);
    result.links[status] = { notice: await noticeOf(page), tab: await selectedTab(page), hash: await hash(page) };
    await page.context().close();
  }

  // A selection on page 1, then Next page.
  const page = await open(`${q}&status=dead`);
  for (const id of [1, 2]) {
    await act(page, () => page.click(`#messages tbody tr[data-id="${id}"] td.select input`));
  }
  result.paging = { before: await text(page, "#bulk-status") };
  await act(page, () => page.click("#next-page"));
  Object.assign(result.paging, { notice: await noticeOf(page), after: await text(page, "#bulk-status") });

  // The stored settings.
  result.settings = await page.$$eval("#settings-list div", (divs) =>
    Object.fromEntries(divs.map((d) => [d.querySelector("dt").textContent, d.querySelector("dd").textContent])));
  await page.context().close();

  // A message open at 1000, 1200 and 1280 px: each row's buttons inside the list's pane.
  result.layout = {};
  for (const width of [1000, 1200, 1280]) {
    const narrow = await open(`${q}&status=dead&message=3`, { width, height: 800 });
    result.layout[width] = await narrow.evaluate(() => {
      const pane = document.getElementById("list-pane").getBoundingClientRect();
      const buttons = [...document.querySelectorAll("#messages td.actions button")];
      return {
        buttons: buttons.length,
        clipped: buttons.filter((b) => b.getBoundingClientRect().right > pane.right + 0.5).map((b) => b.getAttribute("aria-label")),
      };
    });
    if (width === 1200) result.shotLayout = await screenshot(narrow, shots, "console-1200-open.png");
    await narrow.context().close();
  }

  // A payload search that stops at the scan budget before finding anything.
  const search = await open(`#queue=${encodeURIComponent(hay)}&status=pending&payload_contains=needle`);
  result.stopped = { empty: await text(search, "#empty"), note: await text(search, "#scan-note") };
  result.shotStopped = await screenshot(search, shots, "console-stopped-empty.png");
  await search.context().close();
});
