// The view in the URL's fragment, so that a link pasted into an incident channel opens the same
// view, and reload, back and forward keep it: #queue=NAME&status=S&after=ID&message=ID (each
// optional; `after` is the page's keyset cursor). The fragment never reaches the server's logs.

const KEYS = ["queue", "status", "after", "message"];

/** The view the URL names: {queue, status, after, message}, each a string or null. */
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
