// The dashboard of `deadletter serve`. It uses only the public HTTP API, with URLs relative to
// the page (so it works wherever the app is mounted). State lives in the URL hash:
// #queue=NAME&message=ID. Data is only ever written with textContent, never parsed as HTML.
// The status names and limits it shows are the server's, read from its OpenAPI document.

const API = new URL(".", document.baseURI);
const PAGE = 50;
const TOKEN_KEY = "deadletter-token";
const $ = (id) => document.getElementById(id);

/** What the server's queue allows, from its OpenAPI document (`loadSchema`); never retyped here. */
let schema = null;
let token = sessionStorage.getItem(TOKEN_KEY);
let nextAfterId = null;

/** An HTTP error answered with an RFC 9457 problem. */
class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.problem = problem;
  }
}

/** A queue name (or id) as one path segment; "." and ".." too, which clients would remove. */
function segment(name) {
  const text = String(name);
  return text === "." || text === ".." ? "%2E".repeat(text.length) : encodeURIComponent(text);
}

/** Calls the API: `path` relative to where the app is mounted; JSON in and out, null for 204. */
async function api(method, path, body) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(new URL(path, API), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

function queuePath(queue) {
  return `queues/${segment(queue)}`;
}

function hashState() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { queue: params.get("queue"), message: params.get("message") };
}

function link(queue, message) {
  const params = new URLSearchParams({ queue });
  if (message !== undefined) params.set("message", String(message));
  return `#${params}`;
}

function notice(text, isError = false) {
  $("notice").textContent = text;
  $("notice").classList.toggle("error", isError);
}

/** Shows what went wrong; a 401 asks for the token. */
function report(error) {
  if (error instanceof ApiError && error.status === 401) {
    $("token-form").hidden = false;
    notice(token ? "The token was refused." : "This server needs a token.", true);
    document.body.dataset.state = "needs-token";
    return;
  }
  notice(error.message, true);
  document.body.dataset.state = "error";
}

/** "42 s", "5 min", "3 h 12 min", "2 d 4 h". */
function age(seconds) {
  if (seconds < 1) return "< 1 s";
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

function since(timestamp) {
  return `${age((Date.now() - Date.parse(timestamp)) / 1000)} ago`;
}

/** "1 message", "3 messages". */
function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** One entry of a message's failure history. */
function attemptText(entry) {
  return `attempt ${entry.attempt}, ${entry.at}: ${entry.error}`;
}

/** An ordered list of a message's failed attempts. */
function historyList(message, list = document.createElement("ol")) {
  list.classList.add("history");
  list.replaceChildren();
  for (const entry of message.errors) {
    const li = document.createElement("li");
    li.textContent = attemptText(entry);
    list.append(li);
  }
  return list;
}

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text ?? "–";
  if (className) td.className = className;
  return td;
}

function button(text, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.addEventListener("click", onClick);
  return b;
}

/**
 * Reads, once, the status names (in lifecycle order), the statuses purge takes and the longest
 * queue name from the server's `openapi.json`, and lays out what depends on them: a column per
 * status in the queue table, the purge form's choices, the queue field's length.
 */
async function loadSchema() {
  if (schema) return schema;
  const { schemas } = (await api("GET", "openapi.json")).components;
  const loaded = {
    statuses: schemas.Message.properties.status.enum,
    purgeable: schemas.PurgeRequest.properties.status.enum,
    maxQueueChars: schemas.Message.properties.queue.maxLength,
  };
  const oldest = $("oldest-dead-head");
  for (const status of loaded.statuses) {
    const th = document.createElement("th");
    th.className = "n";
    th.textContent = status;
    oldest.before(th);
  }
  const purgeStatus = $("purge-status");
  purgeStatus.replaceChildren(...loaded.purgeable.map((status) => new Option(status)));
  purgeStatus.value = "dead"; // this page is about dead letters
  $("queue-input").maxLength = loaded.maxQueueChars;
  schema = loaded;
  return schema;
}

// ---------------------------------------------------------------------------------------------
// Queues

async function renderQueues() {
  const { queues } = await api("GET", "queues");
  const body = $("queue-table").tBodies[0];
  body.replaceChildren();
  for (const stats of queues) {
    const row = body.insertRow();
    row.className = "queue-row";
    row.dataset.queue = stats.queue;
    const name = cell(row, "");
    const a = document.createElement("a");
    a.href = link(stats.queue);
    a.textContent = stats.queue;
    name.append(a);
    for (const status of schema.statuses) {
      cell(row, String(stats[status]), status === "dead" && stats.dead > 0 ? "n dead" : "n");
    }
    cell(row, stats.oldest_dead_age == null ? "–" : age(stats.oldest_dead_age), "oldest-dead");
    row.addEventListener("click", () => { location.hash = link(stats.queue); });
  }
  $("queue-table").hidden = queues.length === 0;
  $("no-queues").hidden = queues.length > 0;
}

// ---------------------------------------------------------------------------------------------
// One queue: counts and dead letters

async function renderCounts(queue) {
  const stats = await api("GET", `${queuePath(queue)}/stats`);
  const counts = $("counts");
  counts.replaceChildren();
  const items = schema.statuses.map((status) => [status, String(stats[status])]);
  items.push(["oldest dead", stats.oldest_dead_age == null ? "–" : age(stats.oldest_dead_age)]);
  for (const [name, value] of items) {
    const div = document.createElement("div");
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = name;
    dd.textContent = value;
    dd.id = `count-${name.replace(" ", "-")}`;
    if (name === "dead" && stats.dead > 0) dd.className = "dead";
    div.append(dt, dd);
    counts.append(div);
  }
}

function deadRow(queue, message) {
  const row = document.createElement("tr");
  row.dataset.id = String(message.id);
  const id = cell(row, "", "n");
  const a = document.createElement("a");
  a.href = link(queue, message.id);
  a.textContent = String(message.id);
  id.append(a);
  const died = message.dead_at ?? message.updated_at;
  cell(row, since(died)).title = died;
  cell(row, `${message.retry_count}/${message.max_retries}`, "n");
  const errors = cell(row, "", "error");
  const last = document.createElement("span");
  last.className = "last";
  last.textContent = message.last_error ?? "–";
  if (message.errors.length > 1 || message.errors_dropped > 0) {
    // The history, folded under the last error.
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.append(last, ` (${plural(message.errors.length + message.errors_dropped, "attempt")})`);
    details.append(summary, historyList(message));
    errors.append(details);
  } else {
    errors.append(last);
  }
  const replay = button("Replay", () => act(() => replayOne(queue, message.id)));
  replay.className = "replay";
  row.insertCell().append(replay);
  return row;
}

async function loadDead(queue, more = false) {
  const body = $("dead-table").tBodies[0];
  if (!more) {
    body.replaceChildren();
    nextAfterId = null;
  }
  const params = new URLSearchParams({ status: "dead", limit: String(PAGE) });
  if (more && nextAfterId !== null) params.set("after_id", String(nextAfterId));
  const page = await api("GET", `${queuePath(queue)}/messages?${params}`);
  for (const message of page.messages) body.append(deadRow(queue, message));
  nextAfterId = page.next_after_id;
  $("more").hidden = nextAfterId === null;
  $("dead-empty").hidden = body.rows.length > 0;
}

async function renderQueue(queue) {
  $("queue").hidden = false;
  $("queue-name").textContent = queue;
  await Promise.all([renderCounts(queue), loadDead(queue)]);
}

async function replayOne(queue, id) {
  const message = await api("POST", `${queuePath(queue)}/messages/${segment(id)}/replay`);
  $("dead-table").querySelector(`tr[data-id="${message.id}"]`)?.remove();
  $("dead-empty").hidden = $("dead-table").tBodies[0].rows.length > 0;
  notice(`Replayed message ${message.id}: it is ${message.status} again.`);
  await Promise.all([renderCounts(queue), renderQueues()]);
  if (hashState().message === String(id)) await renderMessage(queue, id);
}

/** The replay-all filters of the form, as the API takes them (instants in UTC). */
function replayFilters() {
  const filters = {};
  const errorContains = $("error-contains").value;
  if (errorContains) filters.error_contains = errorContains;
  for (const [field, input] of [["dead_after", "dead-after"], ["dead_before", "dead-before"]]) {
    const local = $(input).value; // a local date and time, without a zone
    if (local) filters[field] = new Date(local).toISOString();
  }
  return filters;
}

async function replayAll(queue) {
  const filters = replayFilters();
  const described = Object.entries(filters).map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(", ");
  if (!confirm(`Replay every dead message of "${queue}"${described ? ` with ${described}` : ""}?`)) return;
  const result = await api("POST", `${queuePath(queue)}/replay`, filters);
  notice(`Replayed ${plural(result.replayed, "dead message")}.`);
  await Promise.all([renderQueue(queue), renderQueues()]);
}

async function purge(queue) {
  const status = $("purge-status").value;
  const olderThan = Number($("purge-days").value) * 86400;
  const which = olderThan > 0 ? `not changed for ${age(olderThan)}` : "whatever its age";
  if (!confirm(`Delete every ${status} message of "${queue}", ${which}?`)) return;
  const result = await api("POST", `${queuePath(queue)}/purge`, { status, older_than: olderThan });
  notice(`Purged ${plural(result.purged, "message")}.`);
  await Promise.all([renderQueue(queue), renderQueues()]);
}

// ---------------------------------------------------------------------------------------------
// One message

async function renderMessage(queue, id) {
  const message = await api("GET", `${queuePath(queue)}/messages/${segment(id)}`);
  $("message").hidden = false;
  $("message-id").textContent = `${message.id} of “${queue}”`;
  const fields = $("message-fields");
  fields.replaceChildren();
  for (const name of ["status", "retry_count", "max_retries", "created_at", "updated_at",
    "first_failed_at", "dead_at", "retry_after", "lease_expires_at", "replay_count", "replayed_at",
    "idempotency_key"]) {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = name;
    dd.textContent = message[name] ?? "–";
    if (name === "status" && message.status === "dead") dd.className = "dead";
    fields.append(dt, dd);
  }
  historyList(message, $("history"));
  $("history-dropped").hidden = message.errors_dropped === 0;
  $("history-dropped").textContent = `${plural(message.errors_dropped, "older attempt")} not kept.`;
  let payload = message.payload;
  try {
    payload = JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    // not JSON: shown as stored
  }
  $("payload").textContent = payload;
  const replay = $("replay-one");
  replay.disabled = message.status !== "dead";
  replay.title = replay.disabled ? `only a dead message can be replayed; this one is ${message.status}` : "";
  replay.onclick = () => act(() => replayOne(queue, message.id));
}

// ---------------------------------------------------------------------------------------------
// Wiring

/** Runs one user action, reporting its failure; `data-state` tells tests when it is over. */
async function act(action) {
  document.body.dataset.state = "busy";
  if ($("notice").classList.contains("error")) notice("");
  try {
    await action();
    document.body.dataset.state = "ready";
  } catch (error) {
    report(error);
  }
}

async function render() {
  const { queue, message } = hashState();
  $("queue").hidden = true;
  $("message").hidden = true;
  $("token-form").hidden = true;
  await loadSchema();
  const work = [renderQueues()];
  if (queue) work.push(renderQueue(queue));
  if (queue && message) work.push(renderMessage(queue, message));
  await Promise.all(work);
  if (!queue && !$("notice").textContent) notice("Pick or open a queue.");
}

$("refresh").addEventListener("click", () => act(render));
window.addEventListener("hashchange", () => act(render));
$("open-queue").addEventListener("submit", (event) => {
  event.preventDefault();
  location.hash = link($("queue-input").value);
});
$("more").addEventListener("click", () => act(() => loadDead(hashState().queue, true)));
$("replay-all-form").addEventListener("submit", (event) => {
  event.preventDefault();
  act(() => replayAll(hashState().queue));
});
$("purge-form").addEventListener("submit", (event) => {
  event.preventDefault();
  act(() => purge(hashState().queue));
});
$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  token = $("token").value;
  sessionStorage.setItem(TOKEN_KEY, token);
  notice("");
  act(render);
});

act(render);
