// What the console draws from the API's answers: the queue table, a queue's head (state, facts,
// stored settings), its tabs, a page of messages and the open message. Data is only ever
// written with textContent, never parsed as HTML, with its invisible characters escaped
// (visible.js: payloads, errors, groups, keys and names hold what others wrote). Status names
// come from `schema` (api.js); the console names only `dead`, its subject, and its `delayed`
// tab (the messages not due yet, the list route's `delayed` filter). Meaning is never in colour
// alone: badges carry words.

import { href } from "./url.js";
import { queueName, visible } from "./visible.js";
import { duration, setting, timeElement } from "./time.js";

export const DEAD = "dead";
export const DELAYED = "delayed";
export const $ = (id) => document.getElementById(id);

/** A count in the browser's locale: "10,010". */
export const number = (count) => count.toLocaleString();

/** "1 message", "3 messages", "1,234 messages". */
export const plural = (count, word) => `${number(count)} ${word}${count === 1 ? "" : "s"}`;

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text != null) node.textContent = visible(text);
  if (className) node.className = className;
  return node;
}

/** A cell labelled for the stacked layout of narrow screens (CSS shows data-label). */
function cell(row, label, content, className) {
  const td = row.insertCell();
  td.dataset.label = label;
  td.className = [column(label), className].filter(Boolean).join(" ");
  if (content instanceof Node) td.append(content);
  else td.textContent = visible(content) ?? "–";
  return td;
}

function header(table, labels) {
  table.tHead.rows[0].replaceChildren(...labels.map((label) => element("th", label, column(label))));
}

/** The class of a column's cells ("col-last-error"), for the CSS that hides some when narrow. */
const column = (label) => `col-${label.replace(/\s+/g, "-") || "actions"}`;

/** `text` on one line (line breaks shown as ↵), cut with an ellipsis, in full on hover. */
function clipped(text) {
  const div = element("div", text?.replace(/\r?\n/g, " ↵ ") ?? "–", "clip");
  if (text) div.title = visible(text);
  return div;
}

/** `label` as a badge: its words carry the meaning, its colour only repeats it. */
export const badge = (label, kind) => element("span", label, `badge ${kind}`);

/** Replaces `parent`'s children, then gives the focus back to the element of the same key. */
function replaceKeepingFocus(parent, children) {
  const key = document.activeElement?.dataset?.key;
  parent.replaceChildren(...children);
  if (key) parent.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

/** The parts of a status's count worth marking (expired leases, delayed messages). */
function countNotes(schema, stats, status) {
  const notes = [];
  if (status === schema.expiredIn && stats.expired) notes.push(`${stats.expired} lease expired`);
  if (status === schema.delayedIn && stats.delayed) notes.push(`${stats.delayed} delayed`);
  return notes;
}

const age = (seconds) => (seconds == null ? "–" : duration(seconds));

/**
 * Whether `message` waits (`schema.delayedIn`) past its `expires_at`: the core never delivers
 * it, and the next claim or reap takes it out (README "Expiry"). The API's own fields, read as
 * the lease's are.
 */
export const expired = (schema, message) =>
  message.status === schema.delayedIn && message.expires_at != null && Date.parse(message.expires_at) <= Date.now();

/**
 * When a waiting message is due, in words, where its `retry_after` alone would mislead: one past
 * its expiry never is; a group's member without a `retry_after` is claimed only while it is its
 * group's head, which the API does not say, so "now" was wrong for the members behind it
 * (new-user finding M6, session 7). Null otherwise: due at its `retry_after`, or now.
 */
function dueWords(schema, message) {
  if (expired(schema, message)) return ["not delivered", "expired", "expired: the next claim or reap takes it out"];
  if (message.status === schema.delayedIn && message.group != null && message.retry_after == null) {
    return ["in group order", null, "a group's messages are claimed one at a time, in order: now if it is its " +
      "group's first message not yet finished, else once those ahead of it have left the group"];
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// The queue table

export function renderQueues(schema, queues) {
  const table = $("queue-table");
  header(table, ["queue", ...schema.statuses, "lag", "oldest dead", "state"]);
  const rows = queues.map((stats) => {
    const row = document.createElement("tr");
    row.dataset.queue = stats.queue;
    const link = element("a", queueName(stats.queue), "name");
    link.href = href({ queue: stats.queue });
    link.title = queueName(stats.queue);
    link.dataset.key = `queue:${stats.queue}`;
    cell(row, "queue", link, "queue-name");
    for (const status of schema.statuses) {
      const count = element("span", number(stats[status]));
      const td = cell(row, status, count, status === DEAD && stats.dead > 0 ? "n dead" : "n");
      for (const note of countNotes(schema, stats, status)) td.append(" ", badge(note, "warn"));
    }
    cell(row, "lag", age(stats.oldest_due_age), "n lag").title = "Age of the oldest due message";
    cell(row, "oldest dead", age(stats.oldest_dead_age), "n oldest-dead");
    cell(row, "state", stats.paused ? badge("paused", "warn") : "running", "state");
    return row;
  });
  replaceKeepingFocus(table.tBodies[0], rows);
  table.hidden = queues.length === 0;
  $("no-queues").hidden = queues.length > 0;
}

// ---------------------------------------------------------------------------------------------
// A queue's head, facts, settings and tabs

/** `expiredShown`: whether the list shows a waiting message past its expiry (Reap takes it out). */
export function renderQueueHead(schema, stats, settings, expiredShown) {
  $("queue-title").textContent = queueName(stats.queue);
  $("queue-title").title = queueName(stats.queue);
  $("queue-state").replaceChildren(stats.paused ? badge("paused", "warn") : badge("running", "ok"));
  $("pause").textContent = stats.paused ? "Resume" : "Pause";
  $("pause").title = stats.paused ? "Workers claim again" : "Workers claim nothing until resumed";
  // Only a claim reaps otherwise, and a paused queue claims nothing (F9); it also takes out the
  // waiting messages past their expiry, which the stats do not count (M6, session 7).
  $("reap").hidden = !stats.expired && !expiredShown;
  const facts = [
    ["lag", age(stats.oldest_due_age), "how long the oldest due message has waited"],
    ["delayed", number(stats.delayed), "not due yet: in backoff or enqueued with a delay"],
    ["expired leases", number(stats.expired), "held by a worker past its lease, not reaped yet"],
    ["oldest dead", age(stats.oldest_dead_age), "since the oldest dead message died"],
  ];
  const next = stats.next_due_at ? timeElement(stats.next_due_at) : "–";
  fieldList($("facts"), [...facts.map(([name, value, why]) => [name, value, why]), ["next due", next]]);
  fieldList($("settings-list"), settingsFields(settings));
}

/** The stored settings as (name, value) pairs; durations in words as elsewhere (time.js setting). */
function settingsFields(settings) {
  const seconds = (value) => (value == null ? "unset" : setting(value));
  const backoff = settings.backoff;
  return [
    ["max_retries", settings.max_retries ?? "unset"],
    ["lease", seconds(settings.lease)],
    ["expires_in", seconds(settings.expires_in)],
    ["on_expiry", settings.on_expiry ?? "unset"],
    ["backoff", backoff == null ? "unset (the default)"
      : `${setting(backoff.initial)} × ${backoff.multiplier}, cap ${setting(backoff.cap)}, jitter ${backoff.jitter ?? "none"}`],
    ["paused", settings.paused ? "yes" : "no"],
  ];
}

/** Fills a <dl> with [name, value (text or node), tooltip?] items. */
function fieldList(list, items) {
  list.replaceChildren();
  for (const [name, value, tooltip] of items) {
    const div = element("div");
    const dt = element("dt", name);
    const dd = element("dd", value instanceof Node ? null : String(value));
    if (value instanceof Node) dd.append(value);
    if (tooltip) div.title = tooltip;
    div.append(dt, dd);
    list.append(div);
  }
}

/** A queue's tabs: one per status, and `delayed` after the status whose count holds it. */
export const tabNames = (schema) => schema.statuses.flatMap((s) => (s === schema.delayedIn ? [s, DELAYED] : [s]));

/** The tab `view` shows. */
export const tabOf = (schema, view) =>
  (view.status === schema.delayedIn && view.delayed === "true" ? DELAYED : view.status);

/** The view's status and `delayed` filter that show `tab`. */
export const tabView = (schema, tab) =>
  (tab === DELAYED ? { status: schema.delayedIn, delayed: "true" } : { status: tab, delayed: null });

/** One tab per status (and the delayed one) with its count, expired leases marked; `tab` is selected. */
export function renderTabs(schema, stats, tab, onSelect) {
  const names = tabNames(schema);
  const tabs = names.map((name) => {
    const button = element("button", null, "tab");
    button.type = "button";
    button.id = `tab-${name}`;
    button.dataset.key = `tab:${name}`;
    button.dataset.status = name;
    button.setAttribute("role", "tab");
    button.setAttribute("aria-selected", String(name === tab));
    button.setAttribute("aria-controls", "list-pane");
    button.tabIndex = name === tab ? 0 : -1;
    button.append(element("span", name), " ", element("span", number(stats[name]), "count"));
    if (name === DELAYED) button.title = `The ${schema.delayedIn} messages not due yet (in backoff or enqueued with a delay)`;
    if (name === schema.expiredIn && stats.expired) button.append(" ", badge(`${stats.expired} lease expired`, "warn"));
    button.addEventListener("click", () => onSelect(name));
    button.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      const next = names[(names.indexOf(name) + step + names.length) % names.length];
      onSelect(next);
      requestAnimationFrame(() => $(`tab-${next}`)?.focus());
    });
    return button;
  });
  replaceKeepingFocus($("tabs"), tabs);
  $("list-pane").setAttribute("aria-labelledby", `tab-${tab}`);
}

// ---------------------------------------------------------------------------------------------
// A page of messages

/** The column telling where a message stands in its status: the lease, the due time, death. */
function whenColumn(schema, status) {
  if (status === schema.expiredIn) return ["lease ends", (m) => m.lease_expires_at, "lease expired"];
  if (status === schema.delayedIn) return ["due", (m) => m.retry_after, "delayed"];
  if (status === DEAD) return ["died", (m) => m.dead_at, null];
  return ["changed", (m) => m.updated_at, null];
}

/** A checkbox labelled for screen readers; its data-key keeps the focus across redraws. */
function checkbox(key, label, onChange) {
  const box = element("input");
  box.type = "checkbox";
  box.dataset.key = key;
  box.setAttribute("aria-label", label);
  box.addEventListener("change", () => onChange(box.checked));
  return box;
}

/**
 * The rows of one page of `tab` (at most `limit`), `filters` its filters in words. Each row's
 * buttons come from `actions(message)`; `open(id)` opens one; `select` (for a tab with bulk
 * actions) adds a checkbox per row: {toggle(id, on)} (the page's own is the bulk bar's).
 * The open message's row is marked with aria-current (and a border and bold id, not colour
 * alone). A page that is short yet has a next id is a search that stopped at the server's scan
 * budget: it is said, and "Search further" continues it.
 */
export function renderMessages(schema, view, page, { tab, limit, filters, actions, open, select }) {
  const [whenLabel, when, overdue] = whenColumn(schema, view.status);
  const labels = ["id", whenLabel, "attempts", "group", "last error", "payload", ""];
  header($("messages"), select ? ["select", ...labels] : labels);
  if (select) $("messages").tHead.rows[0].cells[0].replaceChildren(element("span", "selected", "visually-hidden"));
  const rows = page.messages.map((message) => {
    const row = document.createElement("tr");
    row.dataset.id = String(message.id);
    if (String(message.id) === view.message) row.setAttribute("aria-current", "true");
    if (select) {
      const box = checkbox(`select:${message.id}`, `Select message ${message.id}`, (on) => select.toggle(message.id, on));
      cell(row, "select", box, "select");
    }
    const link = element("a", `#${message.id}`);
    link.href = href({ ...view, message: message.id });
    link.dataset.key = `message:${message.id}`;
    link.setAttribute("aria-label", `Open message ${message.id}`);
    cell(row, "id", link, "n id");
    const at = when(message);
    const words = overdue === "delayed" ? dueWords(schema, message) : null;
    const whenCell = cell(row, whenLabel, at && !words ? timeElement(at) : words?.[0] ?? "now");
    // Past for a lease (it ran out), future for a due time (not claimable yet).
    const late = at && (overdue === "delayed" ? Date.parse(at) > Date.now() : Date.parse(at) <= Date.now());
    if (words) {
      if (words[1]) whenCell.append(" ", badge(words[1], "warn"));
      whenCell.title = words[2];
    } else if (overdue && late) whenCell.append(" ", badge(overdue, "warn"));
    cell(row, "attempts", `${message.retry_count}/${message.max_retries}`, "n");
    cell(row, "group", clipped(message.group));
    cell(row, "last error", clipped(message.last_error), "error");
    cell(row, "payload", clipped(message.payload), "payload");
    cell(row, "", null, "actions").replaceChildren(...actions(message));
    row.addEventListener("click", (event) => {
      if (!event.target.closest("a, button, input, td.select")) open(message.id);
    });
    return row;
  });
  replaceKeepingFocus($("messages").tBodies[0], rows);
  const which = `${tab} message${filters ? ` ${filters}` : ""}`;
  $("list-caption").textContent = filters ? visible(`Showing each ${which}, by id.`) : "";
  $("list-caption").hidden = !filters;
  $("messages").hidden = rows.length === 0;
  $("empty").hidden = rows.length > 0;
  const first = page.messages[0]?.id;
  const last = page.messages.at(-1)?.id;
  const next = page.next_after_id;
  const stopped = next != null && page.messages.length < limit;
  // A search the scan budget stopped knows only what it examined: a plain "No ..." above the
  // note that more may match read as a definitive no (new-user finding M11, session 7).
  const where = view.after ? ` after #${view.after}` : filters ? "" : " in this queue";
  const known = stopped ? ` among the messages examined so far (up to #${next})` : "";
  $("empty").textContent = visible(`No ${which}${where}${known}.`);
  $("scan-note").hidden = !stopped;
  $("scan-note").textContent = stopped ? `This search stopped at message #${next} before the page was ` +
    "full: the server examines a bounded number of messages per request, so more may match " +
    `after it. "Search further" goes on from #${next}.` : "";
  $("page-range").textContent = first ? `#${first} – #${last}` : "";
  $("first-page").disabled = !view.after;
  $("next-page").disabled = next == null;
  $("next-page").textContent = stopped ? "Search further" : "Next page";
}

// ---------------------------------------------------------------------------------------------
// One message

/** "attempt 2, 2 Dec 2026, 01:19:28 (3 min ago): error", the instant in UTC on hover. */
function attemptItem(entry) {
  const li = element("li");
  li.append(`attempt ${entry.attempt}, `, timeElement(entry.at, true), ": ", element("span", entry.error, "error"));
  return li;
}

/** The payload, pretty-printed when it is JSON (shown as stored otherwise). */
function prettyPayload(payload) {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return payload;
  }
}

/** "0", or "2, last 2 Dec 2026, 01:19:28 (3 min ago)". */
function replays(message, at) {
  if (!message.replayed_at) return String(message.replay_count);
  const span = element("span", `${message.replay_count}, last `);
  span.append(at(message.replayed_at));
  return span;
}

export function renderMessage(schema, message) {
  $("message-title").textContent = `Message #${message.id}`;
  const at = (value) => (value ? timeElement(value, true) : "–");
  const lease = message.lease_expires_at;
  const leaseValue = lease ? at(lease) : "–";
  if (lease && Date.parse(lease) <= Date.now()) {
    leaseValue.append(" ", badge("lease expired: counted as a failed attempt when reaped", "warn"));
  }
  const words = dueWords(schema, message);
  const retry = words ? `${words[0]} (${words[2]})` : message.retry_after ? at(message.retry_after) : "–";
  fieldList($("message-fields"), [
    ["status", message.status],
    ["attempts", `${message.retry_count} failed of at most ${message.max_retries}`],
    ["next attempt", retry],
    ["group", message.group ?? "–"],
    ["expires at", at(message.expires_at)],
    ["lease ends", leaseValue],
    ["created", at(message.created_at)],
    ["changed", at(message.updated_at)],
    ["first failed", at(message.first_failed_at)],
    ["died", at(message.dead_at)],
    ["replays", replays(message, at)],
    ["idempotency key", message.idempotency_key ?? "–"],
  ]);
  $("history").replaceChildren(...message.errors.map(attemptItem));
  if (message.errors.length === 0) $("history").append(element("li", "none", "muted"));
  $("history-dropped").hidden = message.errors_dropped === 0;
  $("history-dropped").textContent = `${plural(message.errors_dropped, "older attempt")} not kept.`;
  $("payload").textContent = visible(prettyPayload(message.payload));
}
