// Drives what the console shows of texts and of due times in headless Chromium: run by
// test_console_text.py against a running `deadletter serve` with a token.
//
// Usage: node console_text.mjs URL TOKEN BIDI HOOKS SCREENSHOT_DIR
// Steps: open BIDI's dead message 1 (payload, error, group and key holding U+202E) and read
// every text shown of it, in the list and in its panel; list which code points the console's
// `visible` escapes; open HOOKS' pending tab (a group's head in backoff, two members behind it,
// an expired message) and read the due column, a member's panel and whether Reap is offered,
// then reap; the queue list (a name stored with a zero-width space). Dialogs are accepted.

import { mkdir } from "node:fs/promises";
import { act, run, screenshot, signedIn } from "./console_page.mjs";

const [url, token, bidi, hooks, shots] = process.argv.slice(2);
const viewport = { width: 1280, height: 800 };
const text = (page, selector) => page.textContent(selector);
const fields = (page) => page.$$eval("#message-fields div", (divs) =>
  Object.fromEntries(divs.map((d) => [d.querySelector("dt").textContent, d.querySelector("dd").textContent])));
/** Each row's cells (by column class) and their titles, by message id. */
const rows = (page) => page.$$eval("#messages tbody tr", (all) => Object.fromEntries(all.map((row) => [
  row.dataset.id,
  Object.fromEntries([...row.cells].map((c) => [c.dataset.label, { text: c.textContent, title: c.title || c.firstElementChild?.title || "" }])),
])));

const result = { dialogs: [] };
await run(result, async (browser) => {
  await mkdir(shots, { recursive: true });
  const at = (queue, status, id) => `#queue=${encodeURIComponent(queue)}&status=${status}${id ? `&message=${id}` : ""}`;
  const { page } = await signedIn(browser, { url, token, viewport, hash: at(bidi, "dead", 1), dialogs: result.dialogs });

  // Every text of message 1, in its row and in its panel.
  result.bidi = {
    row: (await rows(page))["1"],
    fields: await fields(page),
    payload: await text(page, "#payload"),
    history: await page.$$eval("#history li", (items) => items.map((li) => li.textContent)),
    title: await text(page, "#queue-title"),
    documentTitle: await page.title(),
  };
  result.shotBidi = await screenshot(page, shots, "console-bidi.png");

  // The code points `visible` escapes, as ranges [first, last].
  result.escaped = await page.evaluate(async () => {
    const { visible } = await import("./static/visible.js");
    const ranges = [];
    for (let code = 0; code <= 0x10ffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const char = String.fromCodePoint(code);
      if (visible(char) === char) continue;
      const last = ranges.at(-1);
      if (last && last[1] === code - 1) last[1] = code;
      else ranges.push([code, code]);
    }
    return ranges;
  });

  // A group's members behind its head, an expired message; Reap offered for it.
  await act(page, () => page.goto(`${url}/${at(hooks, "pending")}`));
  result.hooks = { rows: await rows(page), reapShown: await page.isVisible("#reap") };
  result.shotHooks = await screenshot(page, shots, "console-due.png");
  const member = Object.keys(result.hooks.rows)[1];
  await act(page, () => page.click(`#messages tbody tr[data-id="${member}"] a`));
  result.hooks.member = (await fields(page))["next attempt"];
  const expired = Object.keys(result.hooks.rows).at(-1);
  await act(page, () => page.click(`#messages tbody tr[data-id="${expired}"] a`));
  result.hooks.expired = (await fields(page))["next attempt"];
  await act(page, () => page.click("#reap"));
  result.hooks.reapNotice = await text(page, "#notice-text");
  result.hooks.afterReap = Object.keys(await rows(page)).map(Number);

  // The queue list.
  await act(page, () => page.goto(`${url}/#`));
  result.queues = await page.$$eval("#queue-table tbody a.name", (links) => links.map((a) => [a.textContent, a.title]));
  result.shotQueues = await screenshot(page, shots, "console-queue-names.png");
});
