// @ts-check
// The page's state and its routes (`#/t/<thread>[/ledger|/checkpoints][/s/<step>]`).

import { enc } from "./api.js";

/**
 * @typedef {import("../data.js").ThreadSummary} ThreadSummary
 * @typedef {import("../data.js").ThreadDetail} ThreadDetail
 * @typedef {import("../data.js").StepView} StepView
 * @typedef {import("../data.js").Interlude} Interlude
 * @typedef {import("../../events.js").LedgerEvent} LedgerEvent
 * @typedef {"timeline" | "ledger" | "checkpoints"} Tab
 */

export const POLL_MS = 2000;
export const LIST_REFRESH_MS = 10000;
export const IDLE_POLL_MS = 10000;
export const IDLE_WARN_MS = 120000;
/** Steps drawn at first (the end of the run) and fetched per "load earlier steps". */
export const STEP_PAGE = 100;

/**
 * @typedef {object} ViewState
 * @property {ThreadSummary[]} threads
 * @property {string} [workspace] The workspace directory, or for a PostgreSQL state its URL (password hidden).
 * @property {"sqlite" | "postgres"} [backend]
 * @property {string} [threadsError]
 * @property {string | null} threadId
 * @property {ThreadDetail | null} detail
 * @property {Map<number, StepView>} steps
 * @property {Interlude[]} before
 * @property {number} earlier Steps of the run before the first one loaded.
 * @property {number} totalSteps All steps of the run.
 * @property {number} stepsGen Bumped whenever the steps are loaded afresh, so that an older page in flight is dropped.
 * @property {number | null} loadingEarlier The stepsGen a load of earlier steps is running for.
 * @property {number} lastSeq
 * @property {number | null} selectedStep
 * @property {Tab} tab
 * @property {boolean} polling
 * @property {string | null} rendered The thread whose view is drawn.
 * @property {string | null} lastPoll
 * @property {{ type: string; events: LedgerEvent[]; next: number; more: boolean; loaded?: boolean }} ledger
 * @property {number} token Bumped per route change, so that a slower earlier one does not draw over it.
 */

/** @type {ViewState} */
export const state = {
  threads: [],
  threadId: null,
  detail: null,
  steps: new Map(),
  before: [],
  earlier: 0,
  totalSteps: 0,
  stepsGen: 0,
  loadingEarlier: null,
  lastSeq: 0,
  selectedStep: null,
  tab: "timeline",
  polling: false,
  rendered: null,
  lastPoll: null,
  ledger: { type: "", events: [], next: 0, more: false },
  token: 0,
};

/** @returns {{ thread: string | null; tab: Tab; step: number | null }} */
export function parseRoute() {
  const m = /^#\/t\/([^/]+)(?:\/(timeline|ledger|checkpoints))?(?:\/s\/(\d+))?$/.exec(location.hash);
  if (!m) return { thread: null, tab: "timeline", step: null };
  let thread;
  try {
    thread = decodeURIComponent(/** @type {string} */ (m[1]));
  } catch {
    return { thread: null, tab: "timeline", step: null };
  }
  return { thread, tab: /** @type {Tab | undefined} */ (m[2]) || "timeline", step: m[3] ? Number(m[3]) : null };
}

/**
 * @param {string | null} thread
 * @param {{ tab?: Tab; step?: number | null }} [to]
 */
export function routeTo(thread, { tab = "timeline", step = null } = {}) {
  let hash = `#/t/${enc(String(thread))}`;
  if (tab !== "timeline") hash += `/${tab}`;
  if (step !== null) hash += `/s/${step}`;
  if (location.hash !== hash) location.hash = hash;
}
