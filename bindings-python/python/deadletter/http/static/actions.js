// What the operator can do from the console, through the HTTP API: replay, delete or retry now
// or move one message; the same in bulk, on the messages selected one by one or on every message
// the list's filters match; pause and resume. Each returns the sentence the console shows once it
// is done (or {text, link}: the sentence and a link to follow, {href, text}), or null when the
// operator cancelled. A bulk action on every matching message asks
// the server first for the exact count (its dry run) and puts it in the confirmation; the
// result says how many were acted on, and says so when that differs from the count.

import { ApiError, api, messagePath, queuePath } from "./api.js";
import { visible } from "./visible.js";
import { bulkBody, describe } from "./filters.js";
import { href } from "./url.js";
import { plural } from "./views.js";

/** Asks the operator `question`, its names and filters with their invisible characters escaped. */
const ask = (question) => confirm(visible(question));

export async function replayOne(queue, id) {
  const message = await api("POST", `${messagePath(queue, id)}/replay`);
  return `Replayed message ${message.id}: it is ${message.status} again.`;
}

export async function retryNowOne(queue, id) {
  const message = await api("POST", `${messagePath(queue, id)}/retry-now`);
  return `Message ${message.id} is due now: the next claim may take it.`;
}

export async function deleteOne(queue, message) {
  const what = `message ${message.id} (${message.status}) of "${queue}"`;
  if (!ask(`Delete ${what}? It cannot be replayed afterwards.`)) return null;
  await api("DELETE", messagePath(queue, message.id));
  return `Deleted ${what}.`;
}

/**
 * Why a move of message `id` was refused, in words: a `key_taken` conflict names the target that
 * holds the key, a refused target says why; any other problem says what the server said.
 */
export function moveRefused(error, id, toQueue, key) {
  if (error.problem?.reason === "key_taken") {
    const which = key == null ? "its idempotency key" : `idempotency key "${key}"`;
    return `"${toQueue}" already holds a message with ${which}, so message ${id} stays where it is.`;
  }
  // A field error's message is a predicate ("must not be only whitespace"): said of the target
  // the operator typed rather than of the API's field name.
  const target = (error.problem?.errors ?? []).filter((e) => e.field === "to_queue");
  if (target.length) return `The target queue "${toQueue}" ${target.map((e) => e.message).join(" and ")}.`;
  return error.message;
}

/** A link to `queue`'s `status` tab, or to message `id` there. */
const linkTo = (queue, status, id) => ({
  href: href({ queue, status, message: id ?? null }),
  text: id == null ? `Open "${queue}"` : `Open message ${id} in "${queue}"`,
});

/** Moves `message` to `toQueue`; the sentence links to it there. A refusal is an ApiError
 * whose message says why (moveRefused). */
export async function moveOne(queue, message, toQueue) {
  let moved;
  try {
    moved = await api("POST", `${messagePath(queue, message.id)}/move`, { to_queue: toQueue });
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    throw new ApiError(error.status, { ...error.problem, detail: moveRefused(error, message.id, toQueue, message.idempotency_key) });
  }
  return {
    text: `Moved message ${moved.id} (${moved.status}) from "${queue}" to "${moved.queue}".`,
    link: linkTo(moved.queue, moved.status, moved.id),
  };
}

/** The bulk action moving to `toQueue` (BULK's shape, with the target in its body and words). */
export const moveTo = (toQueue, status) => ({
  route: "move", verb: "Move", to: ` to "${toQueue}"`, extra: { to_queue: toQueue },
  done: (what) => ({ text: `Moved ${what} to "${toQueue}".`, link: linkTo(toQueue, status) }),
  warn: "\n\nA message whose idempotency key the target already holds stays where it is and is not counted.",
  one: (queue, id) => api("POST", `${messagePath(queue, id)}/move`, { to_queue: toQueue }),
  refused: (error, id) => moveRefused(error, id, toQueue),
});

/**
 * The bulk actions: the route acting on every match of the filters (with `dry_run` to count),
 * the one acting on a single message, and their words (`done` makes the result's sentence).
 */
export const BULK = {
  replay: {
    route: "replay", verb: "Replay", done: (what) => `Replayed ${what}.`, warn: "",
    one: (queue, id) => api("POST", `${messagePath(queue, id)}/replay`),
  },
  retryNow: {
    route: "retry-now", verb: "Retry now", done: (what) => `${what} made due now.`, warn:
      "\n\nEach becomes due at once instead of waiting for its backoff or delay (a message behind " +
      "its group's head still waits for it).",
    one: (queue, id) => api("POST", `${messagePath(queue, id)}/retry-now`),
  },
  delete: {
    route: "delete", verb: "Delete", done: (what) => `Deleted ${what}.`, warn: "\n\nThey cannot be replayed afterwards.",
    one: (queue, id) => api("DELETE", messagePath(queue, id)),
  },
};

/** The bulk route's body for `view` (`status`: the one to narrow to, for delete). */
const body = (view, status, kind) => ({ ...bulkBody(view), ...(status ? { status } : {}), ...kind.extra });

/**
 * How many messages `kind` would act on now among those `view`'s filters match: the bulk
 * route's dry run (exact, nothing changed).
 */
export async function countMatching(queue, kind, view, status) {
  const result = await api("POST", `${queuePath(queue)}/${kind.route}`, { ...body(view, status, kind), dry_run: true });
  return result.count;
}

/** `kind` on every message `view`'s filters match, confirmed with the dry run's count. */
export async function onMatching(queue, kind, view, noun, status) {
  const filters = describe(view);
  const which = `of "${queue}"${filters ? ` ${filters}` : ""}`;
  const count = await countMatching(queue, kind, view, status);
  if (count === 0) return `No ${noun} ${which} now: nothing to do.`;
  if (!ask(`${kind.verb} ${plural(count, noun)} ${which}${kind.to ?? ""}?${kind.warn}`)) return null;
  const done = (await api("POST", `${queuePath(queue)}/${kind.route}`, body(view, status, kind))).count;
  const changed = done === count ? "" : ` (${count} matched when counted: the queue changed meanwhile.)`;
  return appended(kind.done(plural(done, noun)), changed);
}

/** `kind` on the messages `ids`, one call each; the ones it could not act on are named. */
export async function onSelected(queue, kind, ids, noun) {
  const sorted = [...ids].sort((a, b) => a - b);
  const shown = sorted.slice(0, 10).map((id) => `#${id}`).join(", ");
  const more = sorted.length > 10 ? ` and ${sorted.length - 10} more` : "";
  const what = `${plural(sorted.length, `selected ${noun}`)} of "${queue}" (${shown}${more})`;
  if (!ask(`${kind.verb} ${what}${kind.to ?? ""}?${kind.warn}`)) return null;
  const failed = [];
  for (const id of sorted) {
    try {
      await kind.one(queue, id);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error; // the server down: the banner says it
      const why = kind.refused ? kind.refused(error, id) : error.message;
      failed.push(`#${id}: ${why.replace(/\.$/, "")}`); // the list ends with its own period
    }
  }
  const done = sorted.length - failed.length;
  if (failed.length === 0) return kind.done(plural(done, `selected ${noun}`));
  const result = appended(kind.done(`${done} of ${plural(sorted.length, `selected ${noun}`)}`), ` Not done: ${failed.join("; ")}.`);
  return done === 0 && result.link ? result.text : result; // no link to where none went
}

/** A result (a sentence or {text, link}) with `more` added to its sentence. */
const appended = (result, more) => (typeof result === "string" ? result + more : { ...result, text: result.text + more });

/** The server's 404 for a queue that holds no message and has no stored settings (no `id`). */
const noQueue = (error) => error instanceof ApiError && error.status === 404 && error.problem?.code === "not_found" &&
  error.problem.queue != null && error.problem.id == null;

/**
 * Pauses or resumes `queue`. Pausing a name that names no queue (mistyped in the URL or the
 * form) would store a new, paused queue while the real one runs on: the server refuses it
 * (404), and the operator is asked first, with the queues there are, closest first (new-user
 * finding, session 8); only a yes pauses it (`create=true`).
 */
export async function setPaused(queue, paused) {
  const path = `${queuePath(queue)}/${paused ? "pause" : "resume"}`;
  try {
    await api("POST", path);
  } catch (error) {
    if (!paused || !noQueue(error)) throw error;
    const why = error.message.replace(/; give create=true to create it$/, ""); // the API's words
    if (!ask(`There is ${why}.\n\nPause "${queue}" anyway? That creates a new, paused queue; no other queue is paused.`)) {
      return null;
    }
    await api("POST", `${path}?create=true`);
  }
  return paused ? `Paused "${queue}": workers claim nothing from it until it is resumed.`
    : `Resumed "${queue}".`;
}

/** Takes back the queue's expired leases now (and takes out its messages whose expiry came). */
export async function reap(queue) {
  const { reaped } = await api("POST", `${queuePath(queue)}/reap`);
  return `Reaped ${plural(reaped, "message")} in "${queue}": each lease that ran out counts as a failed attempt.`;
}
