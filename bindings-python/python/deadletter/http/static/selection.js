// The operator's selection for a bulk action, and the bar that shows it: some messages of the
// page (their checkboxes), or every message the list's filters match ("Select all N matching",
// N counted by the bulk route's dry run when the selection starts). It belongs to one list
// (queue, tab, filters and page) and is dropped when the list changes or an action ran.

import { $, number, plural } from "./views.js";

export const selection = {
  key: null, // the list it belongs to
  ids: new Set(), // the messages selected one by one
  all: false, // every message that matches, not only `ids`
  matching: null, // how many match, from a dry run (null: not counted yet)
  uncounted: false, // no dry run counts them before the action's target is known (a move)
};

/** Starts an empty selection for the list `key`. */
export function clear(key = selection.key) {
  Object.assign(selection, { key, ids: new Set(), all: false, matching: null, uncounted: false });
}

/** Whether message `id` is selected. */
export const has = (id) => selection.all || selection.ids.has(id);

/** Whether anything is selected. */
export const any = () => selection.all || selection.ids.size > 0;

/** Selects or unselects one message of the page (`pageIds`); unselecting one leaves "all". */
export function toggle(id, on, pageIds) {
  if (selection.all) {
    selection.all = false;
    selection.ids = new Set(pageIds);
  }
  if (on) selection.ids.add(id);
  else selection.ids.delete(id);
}

/** Selects every message of the page, or none. */
export function togglePage(on, pageIds) {
  selection.all = false;
  selection.ids = new Set(on ? pageIds : []);
}

/** Brings the checkboxes of the page in line with the selection. */
export function syncChecks(pageIds) {
  for (const id of pageIds) {
    const box = document.querySelector(`[data-key="select:${id}"]`);
    if (box) box.checked = has(id);
  }
  const page = document.querySelector('[data-key="select:page"]');
  if (page) {
    const count = pageIds.filter(has).length;
    page.checked = pageIds.length > 0 && count === pageIds.length;
    page.disabled = pageIds.length === 0;
    page.indeterminate = count > 0 && count < pageIds.length;
  }
}

/**
 * Draws the bulk bar for a tab whose messages are `noun`s ("dead message") and whose bulk
 * actions are `kinds` (names of actions.BULK), or hides it (`kinds` empty).
 */
export function renderBar(noun, kinds) {
  $("bulk").hidden = kinds.length === 0;
  const { all, ids, matching } = selection;
  const count = matching == null ? "" : `${number(matching)} `;
  $("bulk-status").textContent = all && matching == null ? `All matching ${noun}s selected (the move counts them).`
    : all ? `All ${plural(matching, `matching ${noun}`)} selected.`
    : ids.size ? `${plural(ids.size, noun)} selected on this page.`
    : matching === 0 ? `No ${noun} matches now.`
    : "No message selected.";
  $("select-matching").hidden = all || matching === 0;
  $("select-matching").textContent = `Select all ${count}matching`;
  $("clear-selection").hidden = !any();
  for (const [kind, id] of [["replay", "bulk-replay"], ["retryNow", "bulk-retry-now"], ["delete", "bulk-delete"]]) {
    $(id).hidden = !kinds.includes(kind);
    $(id).disabled = !any();
  }
  $("bulk-move").hidden = !kinds.includes("move");
  $("bulk-move").querySelector("button").disabled = !any();
}
