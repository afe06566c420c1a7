// The list filters: the search form above a queue's list, the view's filters as the HTTP API
// takes them (the list route's query, the bulk routes' body), and the words the console uses
// for them in its sentences ("whose last error contains "410""). Their names are the API's
// (url.js FILTERS); text is matched case-sensitively, group and key exactly, and a time range
// is half-open (at or after, before), as the server does. Instants are UTC in the URL and the
// API, and the browser's local time in the form.

import { FILTERS } from "./url.js";
import { local } from "./time.js";

/** The filters the form edits (`delayed` is a tab, not a field). */
const FIELDS = FILTERS.filter((name) => name !== "delayed");
/** Those under "More filters" (the form opens it when one of them is set). */
const MORE = FIELDS.filter((name) => !["payload_contains", "error_contains"].includes(name));
const isInstant = (name) => /_(after|before)$/.test(name);

/** The view changes that clear every filter but the tab's. */
export const noFilters = () => Object.fromEntries(FIELDS.map((name) => [name, null]));

/** Whether `view` has a filter set besides its tab (status and `delayed`). */
export const filtered = (view) => FIELDS.some((name) => view[name] != null);

/** An RFC 3339 instant as a datetime-local value in the browser's zone (whole seconds). */
function localInput(instant) {
  if (!instant) return "";
  const date = new Date(instant);
  if (Number.isNaN(date.getTime())) return "";
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 19);
}

/** Shows `view`'s filters in the search form. */
export function fillForm(form, view) {
  for (const name of FIELDS) {
    form.elements[name].value = isInstant(name) ? localInput(view[name]) : view[name] ?? "";
  }
  if (MORE.some((name) => view[name] != null)) form.querySelector("details").open = true;
}

/** The form's filters as view changes: {name: value or null}, local times sent in UTC. */
export function readForm(form) {
  const changes = {};
  for (const name of FIELDS) {
    const value = form.elements[name].value; // text as typed: a space is part of a search
    changes[name] = !value ? null : isInstant(name) ? new Date(value).toISOString() : value;
  }
  return changes;
}

/** The list route's query for `view`: its status and filters, then `extra` (limit, after_id). */
export function listQuery(view, extra) {
  const params = new URLSearchParams({ status: view.status });
  for (const name of FILTERS) if (view[name] != null) params.set(name, view[name]);
  for (const [name, value] of Object.entries(extra)) if (value != null) params.set(name, String(value));
  return params;
}

/** The bulk routes' body for `view`'s filters (`delayed` left to the route: retry-now implies it). */
export function bulkBody(view) {
  return Object.fromEntries(FIELDS.filter((name) => view[name] != null).map((name) => [name, view[name]]));
}

const WORDS = {
  payload_contains: (v) => `whose payload contains "${v}"`,
  error_contains: (v) => `whose last error contains "${v}"`,
  group: (v) => `of group "${v}"`,
  idempotency_key: (v) => `with idempotency key "${v}"`,
  created_after: (v) => `created at or after ${local(v)}`,
  created_before: (v) => `created before ${local(v)}`,
  updated_after: (v) => `changed at or after ${local(v)}`,
  updated_before: (v) => `changed before ${local(v)}`,
  dead_after: (v) => `that died at or after ${local(v)}`,
  dead_before: (v) => `that died before ${local(v)}`,
};

/** `view`'s filters in words ("whose payload contains "x" and created before ..."), or "". */
export function describe(view) {
  return FIELDS.filter((name) => view[name] != null).map((name) => WORDS[name](view[name])).join(" and ");
}
