// The demo's offline outbox: the page registers sw.js (a module service worker) and posts through
// it; "Go offline" makes the worker's network fail, so the posts are kept by deadletter's outbox
// (answered 202) and sent once the toggle is off again. The table shows the outbox's messages:
// pending while offline, succeeded once sent, dead for the one its endpoint refuses (410), with
// its error history and a Replay button (Outbox.replay), which delivers it once "Fix endpoints"
// is ticked.

import { Outbox, open } from "deadletter";

const $ = (id) => document.getElementById(id);
const OUTBOX_DB = "deadletter-browser-demo-outbox";
let outbox;
let sent = 0;

async function post(path, body) {
  const response = await fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body });
  const queued = response.headers.get("x-deadletter-queued");
  return queued ? `#${queued} kept (202)` : `${response.status}`;
}

async function send() {
  const results = [];
  for (const path of ["/inbox/orders", "/inbox/orders", "/inbox/gone"]) {
    sent += 1;
    results.push(`${path} ${await post(path, JSON.stringify({ order: sent }))}`);
  }
  $("outbox-log").textContent = results.join("; ");
}

function cell(row, text) {
  const td = row.insertCell();
  td.textContent = text;
  return td;
}

async function refresh() {
  const messages = await (await outbox.queue()).list({ limit: 50 });
  const body = $("outbox").tBodies[0];
  body.replaceChildren();
  for (const m of messages) {
    const { method, url } = Outbox.requestOf(m);
    const row = body.insertRow();
    row.className = m.status;
    row.dataset.id = m.id;
    cell(row, `#${m.id}`);
    cell(row, `${method} ${new URL(url).pathname}`);
    cell(row, m.status);
    cell(row, m.errors.map((e) => `${e.attempt}. ${e.error}`).join(" · ") || "—");
    const action = row.insertCell();
    if (m.status === "dead") {
      const button = document.createElement("button");
      button.textContent = "Replay";
      button.addEventListener("click", () => outbox.replay(m.id));
      action.append(button);
    }
  }
  document.body.dataset.outbox = ["pending", "processing", "succeeded", "dead"]
    .map((s) => `${s}:${messages.filter((m) => m.status === s).length}`).join(",");
}

async function main() {
  await navigator.serviceWorker.register("sw.js", { type: "module" });
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) {
    await new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", resolve, { once: true }));
  }
  outbox = new Outbox(open(OUTBOX_DB), { queue: "outbox", maxRetries: 3 });
  outbox.listen(); // now, and the online event where there is no Background Sync
  $("offline").addEventListener("change", (event) => {
    navigator.serviceWorker.controller.postMessage({ offline: event.target.checked });
  });
  $("send").addEventListener("click", send);
  $("send").disabled = false;
  setInterval(() => refresh().catch(() => {}), 300);
  document.body.dataset.outboxReady = "yes";
}

main().catch((err) => {
  $("outbox-log").textContent = `the outbox could not start: ${err}`;
});
