// @ts-check
// The viewer's JSON API, one typed function per route; the types are the server's own (../data.ts).

/**
 * @typedef {import("../data.js").ThreadList} ThreadList
 * @typedef {import("../data.js").ThreadDetail} ThreadDetail
 * @typedef {import("../data.js").StepsView} StepsView
 * @typedef {import("../data.js").EventsPage} EventsPage
 * @typedef {import("../data.js").ContextView} ContextView
 * @typedef {import("../data.js").CheckpointsPage} CheckpointsPage
 * @typedef {import("../../events.js").LedgerEvent} LedgerEvent
 */

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * @param {string} path
 * @returns {Promise<unknown>}
 */
async function get(path) {
  let res;
  try {
    res = await fetch(path, { headers: { accept: "application/json" }, cache: "no-store" });
  } catch {
    throw new ApiError(0, "the viewer server is not reachable (was `ledgerloop web` stopped?)");
  }
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) throw new ApiError(res.status, (body && body.error) || `HTTP ${res.status}`);
  return body;
}

export const enc = encodeURIComponent;
/** @param {string} id */
export const threadPath = (id) => `/api/threads/${enc(id)}`;

/** @returns {Promise<ThreadList>} */
export const getThreads = async () => /** @type {ThreadList} */ (await get("/api/threads"));

/** @param {string} id @returns {Promise<ThreadDetail>} */
export const getDetail = async (id) => /** @type {ThreadDetail} */ (await get(threadPath(id)));

/**
 * A page of steps; `query` is the query string (`last=100`, `from=1&to=40`, …).
 * @param {string} id @param {string} query @returns {Promise<StepsView>}
 */
export const getSteps = async (id, query) => /** @type {StepsView} */ (await get(`${threadPath(id)}/steps?${query}`));

/** @param {string} id @param {string} query @returns {Promise<EventsPage>} */
export const getEvents = async (id, query) => /** @type {EventsPage} */ (await get(`${threadPath(id)}/events?${query}`));

/** @param {string} id @param {string} eventId @returns {Promise<LedgerEvent>} */
export const getEvent = async (id, eventId) => /** @type {LedgerEvent} */ (await get(`${threadPath(id)}/events/${enc(eventId)}`));

/** @param {string} id @param {number} step @returns {Promise<ContextView>} */
export const getContext = async (id, step) => /** @type {ContextView} */ (await get(`${threadPath(id)}/context/${step}`));

/** @param {string} id @returns {Promise<CheckpointsPage>} */
export const getCheckpoints = async (id) => /** @type {CheckpointsPage} */ (await get(`${threadPath(id)}/checkpoints`));
