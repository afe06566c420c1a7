// The service worker of the offline sync test (sync.html, run.mjs suite "sync"): a module service
// worker that imports the package's service-worker entry by URL (workers have no import maps).
// Its fetch handler hands every POST to /inbox/ to the outbox, which sends it or, offline, keeps
// it; the outbox drains on the Background Sync `sync` event, on a page's message, on activation
// and when the worker starts.
import { Outbox, open } from "/pkg/service-worker.js";

const outbox = new Outbox(open("sync-test"), { queue: "posts", maxRetries: 3 });
outbox.listen();

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  // Only this origin's (finding M12: a cross-origin answer without CORS headers reads as a network failure).
  if (event.request.method === "POST" && url.origin === location.origin && url.pathname.startsWith("/inbox/")) {
    event.respondWith(outbox.fetch(event.request));
  }
});
