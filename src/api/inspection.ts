import type * as context from "../inspect/context.js";
import type * as history from "../inspect/history.js";
import type * as ledger from "../inspect/ledger.js";
import type * as report from "../inspect/report.js";
import type * as threads from "../inspect/threads.js";
import type * as workers from "../inspect/workers.js";
import type * as deletion from "../runs/delete.js";
import type * as control from "../runs/run-control.js";
import type * as travel from "../runs/thread-time-travel.js";

// The package root's reading and time-travel functions, each loading its module (SQLite, the
// redaction rules, the state layout) on its first call: they are async anyway, and a script that
// imports the package for openAgent alone should not pay for them at import.

/** The runs recorded in a workspace, newest first (as `ledgerloop threads`). */
export const listThreads: typeof threads.listThreads = async (...a) => (await import("../inspect/threads.js")).listThreads(...a);
/** A run's checkpoints, newest first (as `ledgerloop history`). */
export const getHistory: typeof history.getHistory = async (...a) => (await import("../inspect/history.js")).getHistory(...a);
/** A run's ledger events (as `ledgerloop ledger`). */
export const getLedgerEvents: typeof ledger.getLedgerEvents = async (...a) => (await import("../inspect/ledger.js")).getLedgerEvents(...a);
/** What the model saw at a step (as `ledgerloop context`). */
export const getContext: typeof context.getContext = async (...a) => (await import("../inspect/context.js")).getContext(...a);
/** A run's end-of-task report (as `ledgerloop report`). */
export const getReport: typeof report.getReport = async (...a) => (await import("../inspect/report.js")).getReport(...a);
/** Moves a run back to a checkpoint (as `ledgerloop rewind`). */
export const rewindThread: typeof travel.rewindThread = async (...a) => (await import("../runs/thread-time-travel.js")).rewindThread(...a);
/** Starts a new thread from a checkpoint (as `ledgerloop fork`). */
export const forkThread: typeof travel.forkThread = async (...a) => (await import("../runs/thread-time-travel.js")).forkThread(...a);
/** Re-runs a thread with its recorded model responses (as `ledgerloop replay`). */
export const replayThread: typeof travel.replayThread = async (...a) => (await import("../runs/thread-time-travel.js")).replayThread(...a);
/** Deletes one run whole (as `ledgerloop delete`). */
export const deleteThread: typeof deletion.deleteThread = async (...a) => (await import("../runs/delete.js")).deleteThread(...a);
/** Cancels a run of the PostgreSQL queue (as `ledgerloop cancel`). */
export const cancelSubmittedRun: typeof control.cancelSubmittedRun = async (...a) => (await import("../runs/run-control.js")).cancelSubmittedRun(...a);
/** Queues a run of the PostgreSQL queue again (as `ledgerloop requeue`). */
export const requeueSubmittedRun: typeof control.requeueSubmittedRun = async (...a) => (await import("../runs/run-control.js")).requeueSubmittedRun(...a);
/** The fleet of a PostgreSQL state (as `ledgerloop workers`). */
export const listWorkers: typeof workers.listWorkers = async (...a) => (await import("../inspect/workers.js")).listWorkers(...a);
