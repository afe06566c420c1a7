// What the operator can do from the console, each one call of the HTTP API: replay or delete one
// message, replay all the dead messages a filter selects, purge, pause and resume. Each returns
// the sentence the console shows once it is done, or null when the operator cancelled. The
// confirmations say what is known before acting: this API cannot count what a filter selects
// without acting (no dry run yet), so they give the queue's count and say so.

import { api, messagePath, queuePath } from "./api.js";
import { duration } from "./time.js";
import { plural } from "./views.js";

export async function replayOne(queue, id) {
  const message = await api("POST", `${messagePath(queue, id)}/replay`);
  return `Replayed message ${message.id}: it is ${message.status} again.`;
}

export async function deleteOne(queue, message) {
  const what = `message ${message.id} (${message.status}) of "${queue}"`;
  if (!confirm(`Delete ${what}? It cannot be replayed afterwards.`)) return null;
  await api("DELETE", messagePath(queue, message.id));
  return `Deleted ${what}.`;
}

/** The replay-all filters of the form, as the API takes them (local times sent in UTC). */
export function replayFilters(form) {
  const filters = {};
  const errorContains = form.querySelector("#error-contains").value;
  if (errorContains) filters.error_contains = errorContains;
  for (const [field, id] of [["dead_after", "#dead-after"], ["dead_before", "#dead-before"]]) {
    const local = form.querySelector(id).value; // a local date and time, without a zone
    if (local) filters[field] = new Date(local).toISOString();
  }
  return filters;
}

export async function replayAll(queue, deadCount, filters) {
  const described = [];
  if (filters.error_contains) described.push(`whose last error contains "${filters.error_contains}"`);
  if (filters.dead_after) described.push(`that died at or after ${new Date(filters.dead_after).toLocaleString()}`);
  if (filters.dead_before) described.push(`that died before ${new Date(filters.dead_before).toLocaleString()}`);
  const question = described.length
    ? `Replay the dead messages of "${queue}" ${described.join(" and ")}?\n\nThe queue holds ` +
      `${plural(deadCount, "dead message")} now; the server cannot count the matching ones ` +
      `before acting, so up to ${deadCount} may be replayed.`
    : `Replay every dead message of "${queue}"?\n\nThe queue holds ${plural(deadCount, "dead message")} ` +
      "now (more may die meanwhile).";
  if (!confirm(question)) return null;
  const result = await api("POST", `${queuePath(queue)}/replay`, filters);
  return `Replayed ${plural(result.replayed, "dead message")}.`;
}

export async function purge(queue, status, count, days) {
  const olderThan = days * 86400;
  const which = olderThan > 0 ? `not changed for ${duration(olderThan)}` : "whatever its age";
  const known = olderThan > 0
    ? `The queue holds ${plural(count, `${status} message`)} now; how many are that old is not ` +
      "known before acting."
    : `The queue holds ${plural(count, `${status} message`)} now.`;
  if (!confirm(`Delete every ${status} message of "${queue}", ${which}?\n\n${known}`)) return null;
  const result = await api("POST", `${queuePath(queue)}/purge`, { status, older_than: olderThan });
  return `Purged ${plural(result.purged, "message")}.`;
}

export async function setPaused(queue, paused) {
  await api("POST", `${queuePath(queue)}/${paused ? "pause" : "resume"}`);
  return paused ? `Paused "${queue}": workers claim nothing from it until it is resumed.`
    : `Resumed "${queue}".`;
}
