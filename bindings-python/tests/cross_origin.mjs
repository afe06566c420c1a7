// Drives Chromium against a `deadletter serve` without a token, as a page of another site would
// (run by tests/test_cross_origin.py, which starts the servers and checks the database after).
//
// Usage: node cross_origin.mjs SERVER_URL FOREIGN_URL MOUNTED_URL
// 1. The page at FOREIGN_URL (another origin: another port of 127.0.0.1) posts to SERVER_URL
//    what a page may send anywhere without a CORS preflight: text/plain bodies (a purge, an
//    enqueue) and a POST without a body (replay every dead message). It cannot read the answers.
// 2. DNS rebinding: Chromium resolves rebind.test to 127.0.0.1, so a page of rebind.test at the
//    server's port is, to the browser, the server's own origin; its script reads /queues and a
//    queue's messages.
// 3. The dashboard's own requests: the dashboard of SERVER_URL, then of MOUNTED_URL (the API
//    mounted at a prefix of another application), replays a dead message of the queue "ui" with
//    its row's button.
// Prints one JSON object last.

import { chromium } from "playwright-core";
import { CHROMIUM } from "../../bindings-wasm/tests/browser/chromium.mjs";

const [server, foreign, mounted] = process.argv.slice(2);
const TIMEOUT = 30_000;
const port = new URL(server).port;

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP rebind.test 127.0.0.1"],
});
const result = {};
try {
  const context = await browser.newContext();
  const page = await context.newPage();

  // 1. A foreign page.
  await page.goto(`${foreign}/?${new URLSearchParams({ target: server })}`);
  result.foreign = await page.evaluate(() => window.outcomes);

  // 2. A rebinding page, once its name points at this machine.
  const landing = await page.goto(`http://rebind.test:${port}/`);
  result.rebindLanding = landing.status();
  result.rebindReads = await page.evaluate(async () => {
    const reads = [];
    for (const path of ["/queues", "/queues/jobs/messages"]) {
      const response = await fetch(path);
      reads.push({ path, status: response.status, body: await response.text() });
    }
    return reads;
  });

  // 3. The dashboard, served and mounted.
  result.dashboards = [];
  for (const [base, id] of [[server, 3], [mounted, 4]]) {
    await page.goto(`${base}/#${new URLSearchParams({ queue: "ui" })}`);
    await page.waitForSelector(`#messages tbody tr[data-id="${id}"]`, { timeout: TIMEOUT });
    await page.evaluate(() => { document.body.dataset.state = "clicked"; });
    await page.click(`#messages tbody tr[data-id="${id}"] button.replay`);
    await page.waitForFunction(() => ["ready", "error"].includes(document.body.dataset.state), null, { timeout: TIMEOUT });
    result.dashboards.push({
      base,
      state: await page.evaluate(() => document.body.dataset.state),
      notice: await page.textContent("#notice"),
    });
  }
} catch (error) {
  result.failure = String(error.stack ?? error);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
