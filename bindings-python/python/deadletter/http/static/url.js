// The view in the URL's fragment, so that a link pasted into an incident channel opens the same
// view, and reload, back and forward keep it:
// #queue=NAME&status=S&delayed=true&payload_contains=TEXT&...&after=ID&message=ID (each optional;
// the filters are the list route's query parameters, with their names and values, instants in
// UTC; `after` is the page's keyset cursor). The fragment never reaches the server's logs.

/** The list filters the URL may hold besides `status`, named as the HTTP API names them. */
export const FILTERS = [
  "delayed", "payload_contains", "error_contains", "group", "idempotency_key",
  "created_after", "created_before", "updated_after", "updated_before", "dead_after", "dead_before",
];

const KEYS = ["queue", "status", ...FILTERS, "after", "message"];

/** The view the URL names: {queue, status, ...filters, after, message}, each a string or null. */
export function currentView() {
  const params = new URLSearchParams(location.hash.slice(1));
  return Object.fromEntries(KEYS.map((key) => [key, params.get(key) || null]));
}

/** The fragment of `view` (keys with a null value left out). */
export function href(view) {
  const params = new URLSearchParams();
  for (const key of KEYS) if (view[key] != null) params.set(key, String(view[key]));
  const text = params.toString();
  return text ? `#${text}` : "#";
}

/** The view's list: its queue, status and filters, without the page and the open message. */
export const listKey = (view) => href({ ...view, after: null, message: null });

/**
 * Shows `view` (the current one with `changes`) as a new history entry, and calls the
 * `onViewChange` listener as a back or forward would. With `replace`, rewrites the current entry
 * instead and calls nothing (for a default the console chose, such as the status tab).
 */
export function go(changes, { replace = false } = {}) {
  const next = href({ ...currentView(), ...changes });
  if (next === (location.hash || "#")) return;
  history[replace ? "replaceState" : "pushState"](null, "", next);
  if (!replace) listener?.();
}

let listener = null;

/** Calls `onChange` whenever the view in the URL changes (go, back, forward, an edited URL). */
export function onViewChange(onChange) {
  listener = onChange;
  window.addEventListener("popstate", onChange);
  window.addEventListener("hashchange", onChange);
}
