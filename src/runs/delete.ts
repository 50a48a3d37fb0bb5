import fs from "node:fs";
import path from "node:path";
import { CliError } from "../errors.js";
import type { RunFootprint } from "../ledger/delete-run.js";
import { acquireLease, LEASE_EXIT_CODE, LeaseHeldError, threadScope, workspaceScope, type Lease } from "../ledger/lease.js";
import { checkpointsElsewhere } from "../ledger/checkpoint-home.js";
import { openExistingState, stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import type { RunSummary } from "../ledger/run-status.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import { refuseIfQueued } from "./thread-runtime.js";

export interface DeleteArgs extends WorkspaceArgs {
  yes?: boolean;
  staleHours?: number;
}

/** What `ledgerloop delete` did (or, without --yes, would do). */
export interface DeleteReport extends RunFootprint {
  deleted: boolean;
  /** Where the run was deleted from: the workspace's state.db, or the PostgreSQL state (redacted URL). */
  state: string;
  /** Events of the run forgotten by this machine's search index (index.db). */
  indexEvents: number;
  /** Set when the run's checkpoints are kept by another checkpointer (the LangGraph server's, a script's): those are not deleted. */
  checkpointsElsewhere: string | null;
  /** The revision sweep after the delete: bytes of the state before and after, or why it did not run. */
  sweep: { bytesBefore: number; bytesAfter: number; revisionsDeleted: number } | { skipped: string } | null;
}

/**
 * Deletes one run whole from a workspace's SQLite state or a PostgreSQL state. Without `yes` it only
 * says what would go. Refused while the run may be running: its lease is held here, its runner is
 * alive, it is queued or held by a worker, or its runner is on a host this machine cannot check
 * (unless it has been silent for `staleHours`).
 */
export async function deleteThread(thread: string, args: DeleteArgs): Promise<DeleteReport> {
  const url = stateUrlOf(args);
  return url ? deleteFromPg(url, thread, args) : deleteFromSqlite(thread, args);
}

/** One line refusing a run that may be running, or nothing. */
async function refuseIfActive(run: RunSummary | undefined, args: DeleteArgs): Promise<void> {
  const { mayBeRunning } = await import("../ledger/run-status.js");
  if (!run || !mayBeRunning(run, Date.now(), args.staleHours === undefined ? undefined : args.staleHours * 3_600_000)) return;
  const why =
    run.status === "unknown"
      ? "its runner is on a host this machine cannot check (--stale-hours H deletes it once it has recorded nothing for H hours)"
      : run.status === "queued"
        ? "it is queued for the workers"
        : "its runner is alive";
  throw new CliError(`run ${run.thread} may be running (${run.status}: ${why}); stop it first, then delete it`, LEASE_EXIT_CODE, "RUN_RUNNING");
}

function elsewhere(run: RunSummary | undefined): string | null {
  return run?.checkpointsIn === "external" ? `${checkpointsElsewhere(run)}. Those are not deleted here: delete the thread there too` : null;
}

function unknownThread(thread: string, where: string): CliError {
  return new CliError(`unknown thread "${thread}" in ${where}; list runs with \`ledgerloop threads\``, 1, "UNKNOWN_THREAD");
}

async function deleteFromSqlite(thread: string, args: DeleteArgs): Promise<DeleteReport> {
  const [{ deleteRunRecords, runExists, runFootprint }, { listRuns }] = await Promise.all([
    import("../ledger/delete-run.js"),
    import("../ledger/run-status.js"),
  ]);
  const st = await openExistingState(args, { write: true });
  let lease: Lease | undefined;
  try {
    const footprint = runFootprint(st.db, thread);
    if (!runExists(footprint)) throw unknownThread(thread, st.dbPath);
    const run = listRuns(st.db).find((r) => r.thread === thread);
    await refuseIfActive(run, args);
    const report = { ...footprint, state: st.dbPath, deleted: false, indexEvents: 0, checkpointsElsewhere: elsewhere(run), sweep: null };
    if (!args.yes) return report;
    // The thread's lease keeps every writer of the run out while its records go.
    lease = acquireLease(st.db, [threadScope(thread)], { command: "delete", thread });
    deleteRunRecords(st.db, st.stateDir, thread);
    lease.release();
    lease = undefined;
    return { ...report, deleted: true, indexEvents: await forgetIndexedEvents(st.stateDir, thread), sweep: await sweepRevisions(st) };
  } catch (err) {
    throw st.named(err);
  } finally {
    lease?.release();
    st.close();
  }
}

async function deleteFromPg(url: string, thread: string, args: DeleteArgs): Promise<DeleteReport> {
  const [{ openPgState }, { deletePgRunRecords, pgRunFootprint }, { removeRunFiles, runExists }, { listRunsPg }] = await Promise.all([
    import("../ledger/pg-db.js"),
    import("../ledger/pg-delete-run.js"),
    import("../ledger/delete-run.js"),
    import("../ledger/pg-run-status.js"),
  ]);
  // Migrated on open: the guard that lets a whole run's events go is migration 8.
  const st = await openPgState(url, { max: 2 });
  try {
    const footprint = await pgRunFootprint(st.pool, thread);
    if (!runExists(footprint)) throw unknownThread(thread, st.location);
    await refuseIfQueued(st.pool, thread, "delete");
    const run = (await listRunsPg(st.pool, { thread }))[0];
    await refuseIfActive(run, args);
    const report = { ...footprint, state: st.location, deleted: false, indexEvents: 0, checkpointsElsewhere: elsewhere(run), sweep: null };
    if (!args.yes) return report;
    await deletePgRunRecords(st.pool, thread);
    // This machine's copy of the workspace keeps the run's log, report and indexed events; other
    // machines' copies keep theirs (see README).
    const { stateDir } = stateLocation(resolveWorkspace(args.workspace ?? process.cwd()), args.stateDir);
    let indexEvents = 0;
    if (fs.existsSync(stateDir)) {
      removeRunFiles(stateDir, thread);
      indexEvents = await forgetIndexedEvents(stateDir, thread);
    }
    return {
      ...report,
      deleted: true,
      indexEvents,
      sweep: { skipped: "on PostgreSQL, `ledgerloop gc --state …` sweeps the revisions only the run named from the replica" },
    };
  } finally {
    await st.close();
  }
}

/** Drops the run's events from the search index of a state directory (their vectors follow at the index's next sync). */
async function forgetIndexedEvents(stateDir: string, thread: string): Promise<number> {
  const file = path.join(stateDir, "index.db");
  if (!fs.existsSync(file)) return 0;
  const { NgramIndex } = await import("../retrieval/ngram-index.js");
  const index = NgramIndex.open(file);
  try {
    return index.deleteThreadEvents(thread);
  } finally {
    index.close();
  }
}

/**
 * Gives the space back when the workspace is free: the same sweep as `gc` (which keeps every
 * checkpoint), removing the revisions only the deleted run named. Skipped, with the reason, while
 * another run uses the workspace.
 */
async function sweepRevisions(st: Awaited<ReturnType<typeof openExistingState>>): Promise<DeleteReport["sweep"]> {
  const [{ collectGarbage }, { RevisionStore }] = await Promise.all([import("../ledger/maintenance.js"), import("../workspace/revisions.js")]);
  let lease: Lease;
  try {
    lease = acquireLease(st.db, [workspaceScope(st.workspace)], { command: "delete" });
  } catch (err) {
    if (err instanceof LeaseHeldError) return { skipped: `${err.message}; run \`ledgerloop gc\` later to free the run's workspace revisions` };
    throw err;
  }
  try {
    const revisions = new RevisionStore(st.db, st.workspace, { blobsDir: path.join(st.stateDir, "blobs") });
    const r = await collectGarbage(st.db, revisions, st.stateDir);
    return { bytesBefore: r.bytesBefore, bytesAfter: r.bytesAfter, revisionsDeleted: r.revisionsDeleted };
  } finally {
    lease.release();
  }
}
