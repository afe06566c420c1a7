// The local HTTP server of the browser demo and of the browser tests (Node, no dependencies).
//
// It serves, on 127.0.0.1 only:
// - static files from a few directories of the repository (the demo page, the browser tests, the
//   JS conformance runner, the shared conformance cases, the webhook examples) and the built npm
//   package under /pkg/ (no bundler: pages import it with <script type="module">), and with
//   `beforeDir` another build of it under /pkg-before/ (the benchmark's paired comparison);
// - GET /tests/conformance/index.json: the names of the conformance case files;
// - the simulated webhook subscribers, the same as in examples/webhook_relay.py:
//   POST /ok answers 200; /flaky 503 to the first two attempts of each delivery, then 200;
//   /gone 410; /strict 422 to the event types it does not understand (STRICT_EVENTS). Once
//   "fixed" (POST /subscribers/fix {"fixed": true}), /gone and /strict answer 200.
//   GET /subscribers/state returns the request counts and the overlapping deliveries seen;
// - the inbox of the outbox (offline sync through the service worker): POST /inbox/<name> records
//   the request (path and body) and answers 200, but /inbox/gone answers 410 until "fixed"
//   (POST /inbox-control/fix), and /inbox/slow answers after `inbox.slowMs` (the outbox's held
//   lease); GET /inbox-control/state lists what it received, with the status it answered; POST
//   /inbox-control/reset forgets it.
//
// Run it directly to serve the demo: `node examples/browser/server.mjs [--port N] [--pkg DIR]`
// (`make browser-demo` does it after building the package) and open the URL it prints.

import { createServer } from "node:http";
import { readFile, readdir, stat } from "node:fs/promises";
import { extname, join, normalize, posix, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
export const DEFAULT_PKG_DIR = join(ROOT, "build", "pkg");

/** URL prefixes served from the repository, and nothing else. */
const STATIC_PREFIXES = [
  "/examples/browser/",
  "/bindings-wasm/tests/browser/",
  "/bindings-wasm/js/",
  "/tests/conformance/",
  "/node_modules/@octokit/webhooks-examples/",
];

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".ts": "text/plain; charset=utf-8",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".md": "text/plain; charset=utf-8",
};

export const ENDPOINTS = ["/ok", "/flaky", "/gone", "/strict"];
/** The events /strict still understands; it answers 422 to every other event. */
export const STRICT_EVENTS = new Set([
  "check_run", "check_suite", "create", "delete", "issue_comment", "issues", "ping",
  "pull_request", "pull_request_review", "pull_request_review_comment", "push", "release",
  "status", "workflow_job", "workflow_run",
]);
const FLAKY_FAILURES = 2;
const SERVER_LATENCY_MS = 2;
export const MESSAGE_ID_HEADER = "x-deadletter-message-id";
const PHRASES = { 200: "OK", 400: "Bad Request", 404: "Not Found", 410: "Gone", 422: "Unprocessable Entity", 503: "Service Unavailable" };

/** The state of the simulated subscribers. */
export class Subscribers {
  constructor() {
    this.reset();
  }

  reset() {
    this.fixed = false;
    this.attempts = new Map(); // message id -> attempts seen
    this.inFlight = new Set();
    this.overlaps = [];
    this.requests = {}; // "path status" -> count
  }

  /** The status an endpoint answers to the attempt-th delivery of an event. */
  decide(path, event, attempt) {
    switch (path) {
      case "/ok": return 200;
      case "/flaky": return attempt <= FLAKY_FAILURES ? 503 : 200;
      case "/gone": return this.fixed ? 200 : 410;
      case "/strict": return this.fixed || STRICT_EVENTS.has(event) ? 200 : 422;
      default: return 404;
    }
  }

  async receive(path, headers, body) {
    const id = String(headers[MESSAGE_ID_HEADER] ?? "");
    if (this.inFlight.has(id)) this.overlaps.push(id);
    this.inFlight.add(id);
    const attempt = (this.attempts.get(id) ?? 0) + 1;
    this.attempts.set(id, attempt);
    let status = 400;
    try {
      await new Promise((r) => setTimeout(r, SERVER_LATENCY_MS));
      JSON.parse(body);
      status = this.decide(path, String(headers["x-github-event"] ?? ""), attempt);
    } catch {
      // not JSON: 400
    } finally {
      this.inFlight.delete(id);
    }
    const key = `${path} ${status}`;
    this.requests[key] = (this.requests[key] ?? 0) + 1;
    return status;
  }

  state() {
    const total = Object.values(this.requests).reduce((a, b) => a + b, 0);
    return { fixed: this.fixed, requests: this.requests, total, overlaps: this.overlaps };
  }
}

/** The inbox of the outbox tests and demo: what it received, in order. */
export class Inbox {
  constructor() {
    this.reset();
  }

  reset() {
    this.fixed = false;
    this.slowMs = 0;
    this.received = []; // { path, body, status }
  }

  receive(path, body) {
    const status = path === "/inbox/gone" && !this.fixed ? 410 : 200;
    this.received.push({ path, body, status });
    return status;
  }

  state() {
    return { fixed: this.fixed, received: this.received };
  }
}

function send(res, status, body, type = "text/plain; charset=utf-8") {
  res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store" });
  res.end(body);
}

function sendJson(res, value, status = 200) {
  send(res, status, JSON.stringify(value), MIME[".json"]);
}

function readBody(req, limit = 16 << 20) {
  return new Promise((resolveBody, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error("request body too large"));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", () => resolveBody(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** The file a URL path maps to, or null when it is outside the served directories. */
function staticFile(rawPath, pkgDir, beforeDir) {
  const pathname = posix.normalize(rawPath); // resolves "..", also any that decoding revealed
  if (!pathname.startsWith("/") || pathname.includes("\0")) return null;
  let base;
  let rest;
  if (pathname.startsWith("/pkg/")) {
    base = pkgDir;
    rest = pathname.slice("/pkg/".length);
  } else if (beforeDir && pathname.startsWith("/pkg-before/")) {
    base = beforeDir;
    rest = pathname.slice("/pkg-before/".length);
  } else if (STATIC_PREFIXES.some((p) => pathname.startsWith(p))) {
    base = ROOT;
    rest = pathname.slice(1);
  } else {
    return null;
  }
  if (rest === "" || rest.endsWith("/")) rest += "index.html";
  const file = normalize(join(base, rest));
  return file.startsWith(base + sep) ? file : null;
}

/**
 * Starts the server on 127.0.0.1 (port 0: the system picks one).
 * Returns { url, port, subscribers, inbox, close() }.
 */
export async function startServer({ port = 0, pkgDir = DEFAULT_PKG_DIR, beforeDir = null, quiet = true } = {}) {
  const subscribers = new Subscribers();
  const inbox = new Inbox();
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url, "http://127.0.0.1");
      const path = url.pathname;
      if (req.method === "POST" && path.startsWith("/inbox/")) {
        const status = inbox.receive(path, await readBody(req));
        if (path === "/inbox/slow") await new Promise((resolve) => setTimeout(resolve, inbox.slowMs));
        return send(res, status, `${status} ${PHRASES[status] ?? ""}\n`);
      }
      if (path === "/inbox-control/state") return sendJson(res, inbox.state());
      if (path === "/inbox-control/fix" && req.method === "POST") {
        inbox.fixed = true;
        return sendJson(res, inbox.state());
      }
      if (path === "/inbox-control/reset" && req.method === "POST") {
        inbox.reset();
        return sendJson(res, inbox.state());
      }
      if (req.method === "POST" && ENDPOINTS.includes(path)) {
        const status = await subscribers.receive(path, req.headers, await readBody(req));
        return send(res, status, `${status} ${PHRASES[status] ?? ""}\n`);
      }
      if (path === "/subscribers/fix" && req.method === "POST") {
        const body = JSON.parse((await readBody(req)) || "{}");
        subscribers.fixed = body.fixed !== false;
        return sendJson(res, subscribers.state());
      }
      if (path === "/subscribers/reset" && req.method === "POST") {
        subscribers.reset();
        return sendJson(res, subscribers.state());
      }
      if (path === "/subscribers/state") return sendJson(res, subscribers.state());
      if (req.method !== "GET" && req.method !== "HEAD") return send(res, 405, "method not allowed\n");
      if (path === "/") {
        res.writeHead(302, { Location: "/examples/browser/" });
        return res.end();
      }
      if (path === "/tests/conformance/index.json") {
        const names = (await readdir(join(ROOT, "tests", "conformance")))
          .filter((n) => n.endsWith(".json") && n !== "index.json")
          .sort();
        return sendJson(res, names);
      }
      const file = staticFile(decodeURIComponent(path), pkgDir, beforeDir);
      if (!file) return send(res, 404, "not found\n");
      let info;
      try {
        info = await stat(file);
      } catch {
        return send(res, 404, `not found: ${path}\n`);
      }
      if (info.isDirectory()) {
        res.writeHead(302, { Location: `${path}/` });
        return res.end();
      }
      const type = MIME[extname(file)] ?? "application/octet-stream";
      return send(res, 200, req.method === "HEAD" ? "" : await readFile(file), type);
    } catch (err) {
      if (!quiet) console.error(err);
      if (!res.headersSent) send(res, 500, `${err}\n`);
      else res.end();
    }
  });
  server.keepAliveTimeout = 1000;
  await new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", ok);
  });
  const actual = server.address().port;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    subscribers,
    inbox,
    close: () =>
      new Promise((ok) => {
        server.close(() => ok());
        server.closeAllConnections?.();
      }),
  };
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
  };
  const pkgDir = resolve(opt("--pkg", process.env.DEADLETTER_PKG ?? DEFAULT_PKG_DIR));
  try {
    await stat(join(pkgDir, "package.json"));
  } catch {
    console.error(`browser-demo: no built package in ${pkgDir}; build it with \`make js\` first`);
    process.exit(2);
  }
  const { url } = await startServer({ port: Number(opt("--port", process.env.PORT ?? 0)), pkgDir, quiet: false });
  console.log(`deadletter browser demo: open ${url}/examples/browser/ (Ctrl-C stops the server)`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main();
}
