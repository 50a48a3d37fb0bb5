import type { WorkerRow } from "../queue/fleet.js";
import type { RunFootprint } from "../ledger/delete-run.js";
import type { GcReport } from "../ledger/maintenance.js";
import type { PgGcReport } from "../ledger/pg-maintenance.js";
import type { RunSummary } from "../ledger/run-status.js";

// The administrative side of a state (delete a run, collect garbage, describe it for doctor, list
// its workers), whichever backend holds it: the application layer and the entry points take one
// StateAdmin and never ask whether it is SQLite or PostgreSQL (the write side's twin is
// ledger/state-port.ts, the read side's ledger/inspection.ts). The adapters (sqlite-state-admin.ts,
// pg-state-admin.ts) are the only places that know; open-state-admin.ts loads the one a state needs.
// It sits above src/ledger/ and src/queue/ because administering a state reads both (doctor checks
// the run queue, `workers` lists the fleet), while the queue itself is built on the ledger's pool.

/** What deleting a run would remove, for the caller to refuse or go ahead. */
export interface DeletePlan extends RunFootprint {
  /** Where the run is: the workspace's state.db, or the PostgreSQL state (password hidden). */
  location: string;
  /** The run's registry row and status, when it has one. */
  run: RunSummary | undefined;
}

/** The revision sweep after a delete: bytes of the state before and after, or why it did not run. */
export type DeleteSweep = { bytesBefore: number; bytesAfter: number; revisionsDeleted: number } | { skipped: string };

/** What a delete did beyond the state's own records. */
export interface DeleteDone {
  /** This machine's state directory of the workspace, where the run's indexed events are to be forgotten; null when there is none. */
  stateDir: string | null;
  sweep: DeleteSweep;
}

/** The options of `gc`, as the command was given them; a backend refuses those that mean nothing to it. */
export interface GcRequest {
  keepLast?: number;
  graceMinutes?: number;
  staleHours?: number;
}

/** What gc did: the two backends keep different things, so their reports differ. */
export type GcOutcome = { backend: "sqlite"; report: GcReport } | { backend: "postgres"; report: PgGcReport };

/** One line of `doctor` about the state. */
export interface StateCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/** The administrative operations of a state, on either backend; each opens what it needs and closes it. */
export interface StateAdmin {
  readonly backend: "sqlite" | "postgres";
  /**
   * Deletes one run whole. Fails with UNKNOWN_THREAD unless the run is here, and (PostgreSQL) with
   * LEASE_HELD while the queue holds it; `decide` sees the plan and says whether to go ahead (it
   * throws to refuse). Returns the plan and, when deleted, what else was done.
   */
  deleteRun(thread: string, decide: (plan: DeletePlan) => Promise<boolean>): Promise<{ plan: DeletePlan; done: DeleteDone | null }>;
  /** Prunes old checkpoints and unreferenced revisions, never of a run that may be running. */
  gc(req: GcRequest): Promise<GcOutcome>;
  /** What doctor says about the state: reachable, schema, storage, queue (none for a workspace's own SQLite file). */
  checks(): Promise<StateCheck[]>;
  /** The fleet of queue workers: live ones, and those that stopped or died within `recentSeconds`. */
  workers(opts: { recentSeconds?: number }): Promise<WorkerRow[]>;
}
