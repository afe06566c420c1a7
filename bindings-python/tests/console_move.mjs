// Drives the console's move (issue 22) in headless Chromium as an operator would: run by
// test_console_move.py against a running `deadletter serve` with a token.
//
// Usage: node console_move.mjs URL TOKEN QUEUE TARGET MOVED TAKEN SCREENSHOT_DIR
// Steps: open pending message MOVED of QUEUE, see TARGET offered, move it there from its panel
// and follow the notice's link to it (its panel says where it came from); try to move message
// TAKEN, whose idempotency key TARGET already holds (the key_taken conflict shown), and to QUEUE
// itself (the 422 shown); on QUEUE's dead tab select all N matching and move them to TARGET
// (the confirmation says N); search QUEUE's pending ones by payload "drain", select all matching
// and move them to "overflow" (the confirmation counts them); pick TAKEN by its checkbox and
// move it to TARGET (refused, said in the result). Dialogs are accepted; their texts are in `dialogs`.

import { mkdir } from "node:fs/promises";
import { TIMEOUT, act, rowIds, run, screenshot, settled, signedIn } from "./console_page.mjs";

const [url, token, queue, target, moved, taken, shots] = process.argv.slice(2);
const viewport = { width: 1280, height: 800 };
const text = (page, selector) => page.textContent(selector);
const hash = (page) => page.evaluate(() => location.hash);
const at = (name, status, id) =>
  `#queue=${encodeURIComponent(name)}&status=${status}${id ? `&message=${id}` : ""}`;

/** Types `to` in the open message's move form and submits it. */
async function moveOne(page, to) {
  await page.fill("#move-to-queue", to);
  await act(page, () => page.click("#move-one button[type=submit]"));
}

const notice = async (page) => ({
  text: await text(page, "#notice-text"),
  error: await page.$eval("#notice", (p) => p.classList.contains("error")),
});

const result = { dialogs: [] };
await run(result, async (browser) => {
  await mkdir(shots, { recursive: true });
  const { page } = await signedIn(browser, { url, token, viewport, hash: at(queue, "pending", moved), dialogs: result.dialogs });

  // One pending message moved from its panel; the notice links to it in its new queue.
  result.offered = await page.$$eval("#queue-names option", (options) => options.map((o) => o.value));
  result.formShown = await page.isVisible("#move-one");
  await moveOne(page, target);
  result.movedOne = {
    notice: await notice(page),
    link: await text(page, "#notice-link"),
    panelHidden: await page.isHidden("#message"),
    ids: await rowIds(page),
  };
  result.shotMoved = await screenshot(page, shots, "console-moved.png");
  await act(page, () => page.click("#notice-link"));
  result.followed = {
    hash: await hash(page),
    title: await text(page, "#message-title"),
    movedFrom: await text(page, "#message-moved"),
    movedFromHref: await page.getAttribute("#moved-from-link", "href"),
  };
  result.shotMovedFrom = await screenshot(page, shots, "console-moved-from.png");

  // Refused: the target holds the key; the queue itself.
  await act(page, () => page.evaluate((h) => { location.hash = h; }, at(queue, "pending", taken)));
  await moveOne(page, target);
  result.keyTaken = {
    notice: await notice(page),
    inPanel: await text(page, "#move-error"),
    inView: await page.$eval("#move-error", (p) => { const box = p.getBoundingClientRect(); return box.top >= 0 && box.bottom <= innerHeight; }),
    title: await text(page, "#message-title"),
  };
  result.shotKeyTaken = await screenshot(page, shots, "console-key-taken.png");
  await moveOne(page, queue);
  result.sameQueue = await notice(page);

  // Every dead message of the queue, moved in bulk with the count in the confirmation.
  await act(page, () => page.evaluate((h) => { location.hash = h; }, at(queue, "dead")));
  result.deadBefore = await rowIds(page);
  result.bulkMoveHidden = await page.isHidden("#bulk-move");
  result.bulkMoveDisabled = await page.isDisabled("#bulk-move button");
  await page.click("#select-page"); // counts the matching ones (a dry run)
  await page.waitForFunction(() => /\d/.test(document.getElementById("select-matching").textContent), null, { timeout: TIMEOUT });
  await settled(page);
  await act(page, () => page.click("#select-matching"));
  result.allSelected = await text(page, "#bulk-status");
  await page.fill("#bulk-to-queue", target);
  result.shotBulk = await screenshot(page, shots, "console-bulk-move.png");
  await act(page, () => page.click("#bulk-move button[type=submit]"));
  result.bulkMoved = { notice: await notice(page), link: await text(page, "#notice-link"), ids: await rowIds(page) };
  await act(page, () => page.click("#notice-link"));
  result.targetDead = { hash: await hash(page), ids: await rowIds(page) };

  // Pending messages found by payload, all selected and moved (the confirmation counts them).
  await act(page, () => page.evaluate((h) => { location.hash = h; }, at(queue, "pending")));
  await page.fill('#search [name="payload_contains"]', "drain");
  await act(page, () => page.click("#search button[type=submit]"));
  result.drain = { ids: await rowIds(page) };
  await act(page, () => page.click("#select-page"));
  result.drain.selectLabel = await text(page, "#select-matching");
  await act(page, () => page.click("#select-matching"));
  result.drain.allSelected = await text(page, "#bulk-status");
  await page.fill("#bulk-to-queue", "overflow");
  result.shotDrain = await screenshot(page, shots, "console-bulk-move-pending.png");
  await act(page, () => page.click("#bulk-move button[type=submit]"));
  result.drain.notice = await text(page, "#notice-text");
  result.drain.after = await rowIds(page);

  // One picked by its checkbox whose key the target holds: the result names it and says why.
  await act(page, () => page.click("#clear-filters"));
  await act(page, () => page.click(`#messages tbody tr[data-id="${taken}"] td.select input`));
  await page.fill("#bulk-to-queue", target);
  await act(page, () => page.click("#bulk-move button[type=submit]"));
  result.picked = { notice: await notice(page), linkHidden: await page.isHidden("#notice-link"), ids: await rowIds(page) };
  await page.context().close();

  // 400 px wide: a moved message's panel (in the list's place) with its move form.
  const narrow = await signedIn(browser, {
    url, token, viewport: { width: 400, height: 800 }, hash: at(target, "pending", moved), dialogs: result.dialogs,
  });
  result.narrow = await narrow.page.$eval("#move-one", (form) => ({
    right: Math.round(form.getBoundingClientRect().right),
    scrollWidth: document.documentElement.scrollWidth,
  }));
  result.shotNarrow = await screenshot(narrow.page, shots, "console-narrow-move.png");
  await narrow.page.context().close();
});
