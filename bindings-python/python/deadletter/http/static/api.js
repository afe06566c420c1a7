// The console's access to the HTTP API: relative URLs (so the console works wherever the app is
// mounted), the bearer token kept for the tab, the errors it can meet, and what the server's
// OpenAPI document says about statuses and limits (never retyped here).

const BASE = new URL(".", document.baseURI);
const TOKEN_KEY = "deadletter-token";

/** The bearer token of this tab (sessionStorage: asked once, forgotten with the tab). */
export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
};

/** An answer with an error status: `problem` is its RFC 9457 body when it has one. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.problem = problem;
  }
}

/** No answer from the server: the connection failed, or a proxy answered 502, 503 or 504. */
export class ServerDown extends Error {
  constructor(reason) {
    super(reason);
    this.name = "ServerDown";
  }
}

/** The server's own origin and mount path, as the banner names it. */
export const serverName = BASE.href;

/** A queue name (or id) as one path segment; "." and ".." too, which clients would remove. */
export function segment(name) {
  const text = String(name);
  return text === "." || text === ".." ? "%2E".repeat(text.length) : encodeURIComponent(text);
}

export const queuePath = (queue) => `queues/${segment(queue)}`;
export const messagePath = (queue, id) => `${queuePath(queue)}/messages/${segment(id)}`;

/** Calls the API (`path` relative to the mount point): JSON in and out, null for 204. */
export async function api(method, path, body) {
  const headers = {};
  const bearer = token.get();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(new URL(path, BASE), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
    });
  } catch {
    throw new ServerDown("the connection failed"); // the browser says no more ("Failed to fetch")
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if ([502, 503, 504].includes(response.status)) {
    throw new ServerDown(data?.detail ?? `HTTP ${response.status} from a proxy`);
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** The enum of a schema, or of the branch of its anyOf that has one (a nullable enum). */
const enumOf = (schema) => schema?.enum ?? schema?.anyOf?.find((branch) => branch.enum)?.enum;

/**
 * What the console needs from `openapi.json`: the status names in lifecycle order, the statuses
 * a message can be deleted or purged in (purge's enum), those it can be moved from (move_all's;
 * none when the server has no move route), the status each partial count of the
 * statistics belongs to (`x-part-of-status`: expired leases, delayed messages) and the longest
 * queue name.
 */
export async function loadSchema() {
  const document = await api("GET", "openapi.json");
  const { schemas } = document.components;
  const stats = schemas.QueueStats.properties;
  return {
    statuses: schemas.Message.properties.status.enum,
    finished: schemas.PurgeRequest.properties.status.enum,
    movable: enumOf(schemas.MoveAllRequest?.properties.status) ?? [],
    expiredIn: stats.expired["x-part-of-status"],
    delayedIn: stats.delayed["x-part-of-status"],
    maxQueueChars: schemas.Message.properties.queue.maxLength,
  };
}
