// The demo's service worker: its fetch handler hands the POSTs to /inbox/ to deadletter's outbox,
// which sends them, or keeps them while offline and sends them again once the network is back
// (Background Sync, the page's online message), with retries, backoff and dead letters. The page's
// "Go offline" toggle makes this worker's requests fail as if the network were down (a page cannot
// switch the real network off); `online` tells the outbox so, so it does not try meanwhile.
import { Outbox, open } from "/pkg/service-worker.js";

let offline = false;
const outbox = new Outbox(open("deadletter-browser-demo-outbox"), {
  queue: "outbox",
  maxRetries: 3,
  fetch: (request) => (offline ? Promise.reject(new TypeError("Failed to fetch (offline)")) : fetch(request)),
  online: () => !offline,
});
outbox.listen();

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("message", (event) => {
  if (typeof event.data?.offline !== "boolean") return;
  offline = event.data.offline;
  if (!offline) event.waitUntil(outbox.drain());
});
self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  // Only this origin's (finding M12: a cross-origin answer without CORS headers reads as a network failure).
  if (event.request.method === "POST" && url.origin === location.origin && url.pathname.startsWith("/inbox/")) {
    event.respondWith(outbox.fetch(event.request));
  }
});
