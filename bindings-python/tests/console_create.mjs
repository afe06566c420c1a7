// Drives the console's Pause on a queue name that names no queue, in headless Chromium: run by
// test_console_create.py against a running `deadletter serve` with a token (session 8: Pause on
// a mistyped name created and paused that queue without a word).
//
// Usage: node console_create.mjs URL TOKEN QUEUE TYPO SCREENSHOT_DIR
// Steps: TYPO opened (a screenshot); Pause, the confirmation cancelled (the queues the server
// lists after it); Pause again, confirmed (a screenshot); then Pause on QUEUE, which exists and
// asks nothing, and Resume.

import { mkdir } from "node:fs/promises";
import { act, run, screenshot, signedIn } from "./console_page.mjs";

const [url, token, queue, typo, shots] = process.argv.slice(2);
const text = (page, selector) => page.textContent(selector);
const state = async (page) => ({
  state: await text(page, "#queue-state"),
  button: await text(page, "#pause"),
  notice: await text(page, "#notice-text"),
  note: (await page.isVisible("#queue-new")) ? await text(page, "#queue-new") : null,
  error: await page.$eval("#notice", (notice) => notice.classList.contains("error")),
});
/** The names of the queues the server lists now. */
const listed = (page) =>
  page.evaluate(async (bearer) => {
    const response = await fetch("queues", { headers: { Authorization: `Bearer ${bearer}` } });
    return (await response.json()).queues.map((q) => q.queue);
  }, token);

const result = { dialogs: [] };
await run(result, async (browser) => {
  await mkdir(shots, { recursive: true });
  let answer = false;
  const open = async (name) =>
    (await signedIn(browser, {
      url, token, viewport: { width: 1280, height: 800 }, hash: `#queue=${encodeURIComponent(name)}`,
      dialogs: result.dialogs, accept: () => answer,
    })).page;

  const page = await open(typo);
  result.opened = await state(page);
  result.shotOpened = await screenshot(page, shots, "console-unknown-queue.png");

  // Pause, then Cancel: nothing stored.
  await act(page, () => page.click("#pause"));
  result.cancelled = { ...(await state(page)), dialogs: result.dialogs.length, queues: await listed(page) };

  // Pause, then OK: the new queue, paused.
  answer = true;
  await act(page, () => page.click("#pause"));
  result.confirmed = { ...(await state(page)), dialogs: result.dialogs.length, queues: await listed(page) };
  result.shotConfirmed = await screenshot(page, shots, "console-unknown-queue-paused.png");
  await page.context().close();

  // A queue that exists: Pause asks nothing; Resume.
  const known = await open(queue);
  await act(known, () => known.click("#pause"));
  result.known = { ...(await state(known)), dialogs: result.dialogs.length };
  await act(known, () => known.click("#pause"));
  result.resumed = await state(known);
  await known.context().close();
});
