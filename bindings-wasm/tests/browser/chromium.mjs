// Headless Chromium for the browser tests, the demo test and the benchmark: the system's Debian
// Chromium (scripts/setup.sh browser installs it) driven by playwright-core, which downloads
// nothing. Only loopback traffic: the pages come from examples/browser/server.mjs on 127.0.0.1.

import { existsSync } from "node:fs";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Launches headless Chromium; exits with a hint when it is not installed. */
export async function launchChromium() {
  if (!existsSync(CHROMIUM)) {
    console.error(`${CHROMIUM} is missing: install it with \`scripts/setup.sh browser\``);
    process.exit(2);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

/**
 * A new page (in its own context: its own IndexedDB) whose console errors and uncaught
 * exceptions are printed, prefixed with `label`.
 */
export async function newPage(browser, label, { viewport = { width: 1280, height: 900 } } = {}) {
  return pageIn(await browser.newContext({ viewport }), label);
}

/**
 * A new page (a tab) in `context`, sharing its IndexedDB and BroadcastChannels with the
 * context's other pages; its console errors and uncaught exceptions are printed as by `newPage`.
 */
export async function pageIn(context, label) {
  const page = await context.newPage();
  page.on("pageerror", (err) => console.error(`[${label}] uncaught: ${err.stack ?? err}`));
  page.on("console", (msg) => {
    // The demo's subscribers answer 4xx and 5xx on purpose; Chromium logs each such response.
    const expected = msg.text().startsWith("Failed to load resource: the server responded with a status of");
    if ((msg.type() === "error" && !expected) || process.env.BROWSER_CONSOLE) {
      console.error(`[${label}] console.${msg.type()}: ${msg.text()}`);
    }
  });
  return page;
}
