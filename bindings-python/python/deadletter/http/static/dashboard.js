// The console's wiring: it loads the view the URL names (url.js) from the API (api.js), draws it
// (views.js), runs the operator's actions (actions.js), refreshes every few seconds unless
// paused, and tells a server that stopped answering apart from an error it answered with.

import { ApiError, ServerDown, api, loadSchema, messagePath, queuePath, serverName, token } from "./api.js";
import * as actions from "./actions.js";
import { clock, tick, utc } from "./time.js";
import { currentView, go, onViewChange } from "./url.js";
import { $, DEAD, renderMessage, renderMessages, renderQueueHead, renderQueues, renderTabs } from "./views.js";

const PAGE = 50;
const LIVE_EVERY = 5000; // ms between refreshes

let schema = null;
let shown = null; // what the last load drew: {view, stats, page, message}
let live = true;
let busy = false;
let lastUpdate = null;
let downSince = null;

function notice(text, isError = false) {
  $("notice").textContent = text;
  $("notice").classList.toggle("error", isError);
}

// ---------------------------------------------------------------------------------------------
// Loading and drawing the view

/** Fetches what the URL's view needs, then draws it all at once. */
async function load() {
  schema ??= await loadSchema();
  const view = currentView();
  $("queues-view").hidden = Boolean(view.queue);
  $("queue-view").hidden = !view.queue;
  if (!view.queue) {
    const { queues } = await api("GET", "queues");
    renderQueues(schema, queues);
    document.title = "Queues · deadletter console";
    shown = { view };
    return;
  }
  const [stats, settings] = await Promise.all([
    api("GET", `${queuePath(view.queue)}/stats`),
    api("GET", `${queuePath(view.queue)}/settings`),
  ]);
  if (!schema.statuses.includes(view.status)) {
    // No status (or an unknown one) in the URL: the dead letters when there are any.
    view.status = stats.dead > 0 ? DEAD : schema.statuses[0];
    go({ status: view.status }, { replace: true });
  }
  const params = new URLSearchParams({ status: view.status, limit: String(PAGE) });
  if (view.after) params.set("after_id", view.after);
  const [page, message] = await Promise.all([
    api("GET", `${queuePath(view.queue)}/messages?${params}`),
    view.message ? api("GET", messagePath(view.queue, view.message)).catch(gone) : null,
  ]);
  const opened = view.message && view.message !== shown?.view?.message;
  shown = { view, stats, page, message };
  renderQueueHead(schema, stats, settings);
  renderTabs(schema, stats, view.status, (status) => go({ status, after: null, message: null }));
  renderMessages(schema, view, page, { actions: rowActions, open: (id) => go({ message: id }) });
  drawTools(view.status, stats);
  drawMessage(view, message);
  document.title = `${view.queue} · ${view.status} · deadletter console`;
  if (opened) {
    // The message opens where the operator looks: the panel beside the list (or in its place
    // on a narrow screen), its title focused.
    $("message").scrollIntoView({ block: "nearest" });
    $("message-title").focus({ preventScroll: true });
  }
}

/** A message that is no longer there (deleted, purged) is shown as such, not as an error. */
function gone(error) {
  if (error instanceof ApiError && error.status === 404) return { missing: error.message };
  throw error;
}

function drawTools(status, stats) {
  $("replay-all-form").hidden = status !== DEAD;
  $("replay-all").disabled = stats.dead === 0;
  const purgeable = schema.finished.includes(status);
  $("purge-form").hidden = !purgeable;
  $("purge-legend").textContent = `Purge the ${status} messages of this queue (${stats[status]} now)`;
}

function drawMessage(view, message) {
  $("workspace").classList.toggle("with-message", Boolean(message));
  $("message").hidden = !message;
  if (!message) return;
  const missing = Boolean(message.missing);
  $("message").classList.toggle("missing", missing);
  if (missing) {
    $("message-title").textContent = `Message #${view.message}`;
    $("message-why").textContent = `${message.missing} (deleted or purged).`;
    return;
  }
  renderMessage(schema, message);
  const replayable = message.status === DEAD;
  const deletable = schema.finished.includes(message.status);
  $("replay-one").disabled = !replayable;
  $("delete-one").disabled = !deletable;
  $("message-why").textContent = replayable && deletable ? ""
    : `A ${message.status} message cannot be ${deletable ? "replayed" : "replayed or deleted"}: ` +
      `only a ${DEAD} one is replayed, only a ${schema.finished.join(" or ")} one deleted.`;
}

/** The buttons of a message's row. */
function rowActions(message) {
  const queue = shown.view.queue;
  const buttons = [];
  if (message.status === DEAD) {
    buttons.push(button("Replay", "replay", message, () => actions.replayOne(queue, message.id)));
  }
  if (schema.finished.includes(message.status)) {
    buttons.push(button("Delete…", "delete danger", message, () => actions.deleteOne(queue, message)));
  }
  return buttons;
}

function button(text, className, message, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = className;
  b.textContent = text;
  b.dataset.key = `${className}:${message.id}`;
  b.setAttribute("aria-label", `${text.replace("…", "")} message ${message.id}`);
  b.addEventListener("click", () => act(action));
  return b;
}

// ---------------------------------------------------------------------------------------------
// Refreshing, live, and what went wrong

let running = null;
let again = false;

/** Loads the view; a call during a load makes it load once more afterwards. */
function refresh() {
  if (running) {
    again = true;
    return running;
  }
  running = (async () => {
    do {
      again = false;
      await load();
    } while (again);
    answered();
  })().finally(() => { running = null; });
  return running;
}

/** The server answered: "updated at", and the banner goes if it was shown. */
function answered() {
  lastUpdate = new Date();
  $("updated").textContent = `Updated at ${clock(lastUpdate)}`;
  $("updated").title = utc(lastUpdate.toISOString());
  $("token-form").hidden = true;
  if (downSince) {
    downSince = null;
    $("banner").hidden = true;
    notice(`The server answers again (${clock(lastUpdate)}).`);
  }
  tick();
}

/** Shows what went wrong: a banner when the server does not answer, the token form on 401. */
function report(error, what) {
  if (error instanceof ServerDown) {
    downSince ??= new Date();
    $("banner").hidden = false;
    const retrying = live ? `Retrying every ${LIVE_EVERY / 1000} s.` : "Live updates are paused: try again when it is back.";
    const since = lastUpdate ? ` What you see is from ${clock(lastUpdate)}.` : "";
    $("banner-text").textContent =
      `No answer from ${serverName} since ${clock(downSince)} (${error.message}). ${retrying}${since}`;
    if (what) notice(`${what} got no answer: whether it was done shows once the server is back.`, true);
    document.body.dataset.state = "error";
    return;
  }
  if (error instanceof ApiError && error.status === 401) {
    $("token-form").hidden = false;
    $("token").focus();
    notice(token.get() ? "The token was refused: give the right one." : "This server needs a token.", true);
    document.body.dataset.state = "needs-token";
    return;
  }
  notice(what ? `${what} failed: ${error.message}` : error.message, true);
  document.body.dataset.state = "error";
}

/** Runs one operator action (null: cancelled), then reloads; `data-state` tells tests when. */
async function act(action, what = "The action") {
  busy = true;
  document.body.dataset.state = "busy";
  try {
    const result = await action();
    if (result) notice(result);
    await refresh();
    document.body.dataset.state = "ready";
  } catch (error) {
    report(error, what);
  } finally {
    busy = false;
  }
}

/** Loads the view as a navigation or a live refresh does (no action, no notice). While an
 * action runs, the action alone says when the console is ready again. */
async function show() {
  if (!busy) document.body.dataset.state = "busy";
  try {
    await refresh();
    if (!busy) document.body.dataset.state = "ready";
  } catch (error) {
    report(error);
  }
}

setInterval(() => {
  tick();
  if (live && !busy && !document.hidden && $("token-form").hidden) show();
}, LIVE_EVERY);

// ---------------------------------------------------------------------------------------------
// Wiring

function onSubmit(id, handler) {
  $(id).addEventListener("submit", (event) => {
    event.preventDefault();
    handler();
  });
}

$("live").addEventListener("click", () => {
  live = !live;
  $("live").setAttribute("aria-pressed", String(live));
  $("live").textContent = live ? "Pause live updates" : "Resume live updates";
  if (live) show();
});
$("refresh").addEventListener("click", show);
$("retry").addEventListener("click", show);
$("first-page").addEventListener("click", () => go({ after: null, message: null }));
$("next-page").addEventListener("click", () => go({ after: shown.page.next_after_id, message: null }));
$("close-message").addEventListener("click", () => go({ message: null }));
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && currentView().message && !event.defaultPrevented) go({ message: null });
});
$("replay-one").addEventListener("click", () =>
  act(() => actions.replayOne(shown.view.queue, shown.message.id), "The replay"));
$("delete-one").addEventListener("click", () =>
  act(() => actions.deleteOne(shown.view.queue, shown.message), "The delete"));
$("pause").addEventListener("click", () =>
  act(() => actions.setPaused(shown.view.queue, !shown.stats.paused), "Pausing or resuming"));
onSubmit("replay-all-form", () => act(() =>
  actions.replayAll(shown.view.queue, shown.stats.dead, actions.replayFilters($("replay-all-form"))), "Replay all"));
onSubmit("purge-form", () => {
  const { queue, status } = shown.view;
  act(() => actions.purge(queue, status, shown.stats[status], Number($("purge-days").value)), "The purge");
});
onSubmit("open-queue", () => go({ queue: $("queue-input").value, status: null, after: null, message: null }));
onSubmit("token-form", () => {
  token.set($("token").value);
  notice("");
  show();
});
onViewChange(show);

(async () => {
  await show();
  if (schema) $("queue-input").maxLength = schema.maxQueueChars;
})();
