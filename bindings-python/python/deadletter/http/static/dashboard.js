// The console's wiring: it loads the view the URL names (url.js) with its filters (filters.js)
// from the API (api.js), draws it (views.js), keeps the operator's selection (selection.js),
// runs the operator's actions (actions.js), refreshes every few seconds unless paused, and tells
// a server that stopped answering apart from an error it answered with.

import { ApiError, ServerDown, api, loadSchema, messagePath, queuePath, serverName, token } from "./api.js";
import * as actions from "./actions.js";
import { describe, fillForm, filtered, listQuery, noFilters, readForm } from "./filters.js";
import * as picked from "./selection.js";
import { queueName, visible } from "./visible.js";
import { clock, tick, utc } from "./time.js";
import { currentView, go, href, listKey, onViewChange } from "./url.js";
import {
  $, DEAD, DELAYED, expired, plural, renderMessage, renderMessages, renderQueueHead, renderQueues, renderTabs, tabNames,
  tabOf, tabView,
} from "./views.js";

const PAGE = 50;
const LIVE_EVERY = 5000; // ms between refreshes

let schema = null;
let shown = null; // what the last load drew: {view, tab, stats, page, message}
let filledFor = null; // the list (url.js listKey) whose filters the search form shows
let live = true;
let busy = false;
let lastUpdate = null;
let downSince = null;

/** Says `result`: a sentence, or {text, link} (link: {href, text}, followed in this tab). */
function notice(result, isError = false) {
  const { text, link } = typeof result === "string" ? { text: result, link: null } : result;
  $("notice-text").textContent = visible(text);
  $("notice-link").hidden = !link;
  $("notice-link").href = link?.href ?? "";
  $("notice-link").textContent = visible(link?.text ?? "");
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
  const [stats, settings, { queues }] = await Promise.all([
    api("GET", `${queuePath(view.queue)}/stats`),
    api("GET", `${queuePath(view.queue)}/settings`),
    api("GET", "queues"), // the move forms offer the other queues
  ]);
  offerQueues(queues.map((q) => q.queue).filter((name) => name !== view.queue));
  // A name that names no queue (mistyped in the URL or the form) reads as an empty queue
  // otherwise: said, as the CLI notes it (session 8).
  const listed = queues.some((q) => q.queue === view.queue);
  $("queue-new").hidden = listed;
  $("queue-new").textContent = listed ? ""
    : visible(`No queue "${queueName(view.queue)}" yet: it holds no message and no settings (the queues are listed under Queues).`);
  if (view.status === DELAYED) {
    // The delayed tab by its name (its own link names the status that holds it, and `delayed`).
    Object.assign(view, tabView(schema, DELAYED));
    go(tabView(schema, DELAYED), { replace: true });
  } else if (!schema.statuses.includes(view.status)) {
    // No status (or an unknown one) in the URL: the dead letters when there are any. An unknown
    // one is said, as a bad id is: a hand-written link opened the dead tab without a word, and
    // "Select all matching" acted on those (new-user finding M17, session 7).
    const asked = view.status;
    view.status = stats.dead > 0 ? DEAD : schema.statuses[0];
    go({ status: view.status }, { replace: true });
    if (asked) {
      notice(`The link's tab "${asked}" is none of ${tabNames(schema).join(", ")}: showing the ${view.status} messages.`, true);
    }
  }
  const tab = tabOf(schema, view);
  const query = listQuery(view, { limit: PAGE, after_id: view.after });
  const [page, message] = await Promise.all([
    api("GET", `${queuePath(view.queue)}/messages?${query}`),
    view.message ? api("GET", messagePath(view.queue, view.message)).catch(gone) : null,
  ]);
  const opened = view.message && view.message !== shown?.view?.message;
  shown = { view, tab, stats, page, message };
  const key = href({ ...view, message: null }); // the selection is this page's
  if (picked.selection.key !== key) {
    // Said, not dropped without a word: an operator who picked on two pages acted on the last
    // page's picks only (new-user finding M17, session 7).
    const { all, ids } = picked.selection;
    const which = all ? "all matching messages"
      : `${plural(ids.size, "message")} on the page left: ${[...ids].slice(0, 5).map((id) => `#${id}`).join(", ")}` +
        (ids.size > 5 ? ", …" : "");
    if (all || ids.size) notice(`Selection cleared (${which}): a selection holds one page's messages, or all that match.`);
    picked.clear(key);
  }
  if (filledFor !== listKey(view)) {
    fillForm($("search"), view); // not on a live refresh: it would undo what is being typed
    filledFor = listKey(view);
  }
  $("clear-filters").disabled = !filtered(view);
  renderQueueHead(schema, stats, settings, page.messages.some((m) => expired(schema, m)));
  renderTabs(schema, stats, tab, (name) => go({ ...tabView(schema, name), after: null, message: null }));
  const kinds = bulkKinds(tab);
  renderMessages(schema, view, page, {
    tab, limit: PAGE, filters: describe(view), actions: rowActions, open: (id) => go({ message: id }),
    select: kinds.length ? selecting : null,
  });
  picked.syncChecks(pageIds());
  picked.renderBar(`${tab} message`, kinds);
  drawMessage(view, message);
  document.title = visible(`${queueName(view.queue)} · ${tab} · deadletter console`);
  if (opened) {
    // The message opens where the operator looks: the panel beside the list (or in its place
    // on a narrow screen), its title focused.
    $("message").scrollIntoView({ block: "nearest" });
    $("message-title").focus({ preventScroll: true });
  }
}

/** The queue names the move forms offer (a datalist: any other name can be typed). */
function offerQueues(names) {
  const list = $("queue-names");
  if ([...list.options].map((o) => o.value).join("\n") === names.join("\n")) return;
  list.replaceChildren(...names.map((name) => Object.assign(document.createElement("option"), { value: name })));
}

/** Whether a message in `status` can move to another queue (move_all's statuses). */
const movable = (status) => schema.movable.includes(status);

/** A message that is no longer there (deleted, purged) is shown as such, not as an error. */
function gone(error) {
  if (error instanceof ApiError && error.status === 404) return { missing: error.message };
  throw error;
}

/** Whether a message waits for a time (its backoff or delay) that retry now skips. */
const waiting = (message) =>
  message.status === schema.delayedIn && message.retry_after != null && Date.parse(message.retry_after) > Date.now();

function drawMessage(view, message) {
  $("workspace").classList.toggle("with-message", Boolean(message));
  $("message").hidden = !message;
  if (!message) return;
  const missing = Boolean(message.missing);
  $("message").classList.toggle("missing", missing);
  if (missing) {
    $("message-title").textContent = `Message #${view.message}`;
    $("message-why").textContent = visible(`${message.missing} (deleted or purged).`);
    return;
  }
  renderMessage(schema, message);
  const replayable = message.status === DEAD;
  const deletable = schema.finished.includes(message.status);
  $("replay-one").disabled = !replayable;
  $("delete-one").disabled = !deletable;
  $("retry-now-one").hidden = !waiting(message);
  $("move-one").hidden = !movable(message.status);
  if ($("move-one").dataset.id !== String(message.id)) $("move-error").textContent = ""; // another message
  $("move-one").dataset.id = String(message.id);
  $("message-moved").hidden = !message.moved_from;
  if (message.moved_from) {
    $("moved-from-link").textContent = queueName(message.moved_from);
    $("moved-from-link").title = visible(`Open "${queueName(message.moved_from)}"`);
    $("moved-from-link").href = href({ queue: message.moved_from });
  }
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
  if (waiting(message)) {
    buttons.push(button("Retry now", "retry-now", message, () => actions.retryNowOne(queue, message.id)));
  }
  if (schema.finished.includes(message.status)) {
    buttons.push(button("Delete…", "delete danger", message, () => actions.deleteOne(queue, message)));
  }
  return buttons;
}

// ---------------------------------------------------------------------------------------------
// Selecting messages and acting on them in bulk

/** The bulk actions (actions.BULK names) of a tab's messages. */
function bulkKinds(tab) {
  const kinds = [];
  if (tab === DEAD) kinds.push("replay");
  if (movable(tab)) kinds.push("move");
  if (tab === DELAYED) kinds.push("retryNow");
  if (schema.finished.includes(tab)) kinds.push("delete");
  return kinds;
}

/** The status a bulk action narrows to: delete and move take the tab's (they may act on two). */
const narrowTo = (kind, tab) => (kind === "delete" || kind === "move" ? tab : undefined);

const pageIds = () => shown.page.messages.map((m) => m.id);

const selecting = {
  toggle: (id, on) => selectionChanged(() => picked.toggle(id, on, pageIds())),
  page: (on) => selectionChanged(() => picked.togglePage(on, pageIds())),
};

/** Applies a change of the selection; the first one counts what "all matching" would be. */
function selectionChanged(change) {
  change();
  picked.syncChecks(pageIds());
  picked.renderBar(`${shown.tab} message`, bulkKinds(shown.tab));
  if (picked.any() && picked.selection.matching == null && !picked.selection.uncounted) {
    act(countMatching, "Counting the matching messages");
  }
}

/** Counts the messages the list's filters match, for "Select all N matching" (a dry run). A tab
 * whose only bulk action is a move has no count before its target is known: its confirmation
 * gives the count (uncounted: no request here). */
async function countMatching() {
  const { view, tab } = shown;
  const key = picked.selection.key;
  const kind = bulkKinds(tab)[0];
  if (kind === "move") {
    picked.selection.uncounted = true;
    return null;
  }
  const count = await actions.countMatching(view.queue, actions.BULK[kind], view, narrowTo(kind, tab));
  if (picked.selection.key === key) picked.selection.matching = count; // not if the list changed
  return null;
}

/** Runs the bulk action `kind` on the selection: the messages picked, or all that match.
 * `action`: the action itself when it is not one of actions.BULK (a move, with its target). */
function bulk(kind, action = actions.BULK[kind]) {
  const { view, tab } = shown;
  const noun = `${tab} message`;
  act(async () => {
    const result = picked.selection.all
      ? await actions.onMatching(view.queue, action, view, noun, narrowTo(kind, tab))
      : await actions.onSelected(view.queue, action, picked.selection.ids, noun);
    if (result) picked.clear();
    return result;
  }, action.verb);
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
$("retry-now-one").addEventListener("click", () =>
  act(() => actions.retryNowOne(shown.view.queue, shown.message.id), "Retry now"));
$("delete-one").addEventListener("click", () =>
  act(() => actions.deleteOne(shown.view.queue, shown.message), "The delete"));
$("pause").addEventListener("click", () =>
  act(() => actions.setPaused(shown.view.queue, !shown.stats.paused), "Pausing or resuming"));
$("reap").addEventListener("click", () => act(() => actions.reap(shown.view.queue), "Reaping"));
onSubmit("search", () => go({ ...readForm($("search")), after: null, message: null }));
$("clear-filters").addEventListener("click", () => {
  $("search").reset();
  go({ ...noFilters(), after: null, message: null });
});
$("select-matching").addEventListener("click", async () => {
  await act(async () => {
    if (picked.selection.matching == null) await countMatching();
    picked.selection.all = picked.selection.uncounted || picked.selection.matching > 0;
    return null;
  }, "Counting the matching messages");
  // The button is gone: the focus goes to the one that undoes it, where it stood.
  if (picked.selection.all && document.activeElement === document.body) $("clear-selection").focus();
});
$("clear-selection").addEventListener("click", () => {
  selectionChanged(() => picked.clear());
  $("select-page").focus(); // the pressed button is gone
});
$("select-page").addEventListener("change", () => selecting.page($("select-page").checked));
$("bulk-replay").addEventListener("click", () => bulk("replay"));
$("bulk-retry-now").addEventListener("click", () => bulk("retryNow"));
$("bulk-delete").addEventListener("click", () => bulk("delete"));
onSubmit("bulk-move", () => bulk("move", actions.moveTo($("bulk-to-queue").value, shown.tab)));
onSubmit("move-one", () => {
  const target = $("move-to-queue").value;
  $("move-error").textContent = "";
  act(async () => {
    let result;
    try {
      result = await actions.moveOne(shown.view.queue, shown.message, target);
    } catch (error) {
      // Said beside the form too: the notice at the top may be scrolled out of view.
      if (error instanceof ApiError) $("move-error").textContent = visible(error.message);
      throw error;
    }
    $("move-to-queue").value = "";
    go({ message: null }); // it is not in this queue any more: the notice links to it
    return result;
  }, "The move");
});
onSubmit("open-queue", () => { location.hash = href({ queue: $("queue-input").value }); });
onSubmit("token-form", () => {
  token.set($("token").value);
  notice("");
  show();
});
onViewChange(() => {
  notice(""); // what the last action said belongs to the view it was done in
  show();
});

(async () => {
  await show();
  if (schema) $("queue-input").maxLength = schema.maxQueueChars;
})();
