import fs from "node:fs";
import path from "node:path";
import { CliError } from "../errors.js";
import type { RunFootprint } from "../ledger/delete-run.js";
import { LEASE_EXIT_CODE } from "../ledger/lease.js";
import { checkpointsElsewhere } from "../ledger/checkpoint-home.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import type { RunSummary } from "../ledger/run-status.js";
import { openStateAdmin } from "../state-admin/open-state-admin.js";
import type { DeleteSweep } from "../state-admin/state-admin.js";

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
  sweep: DeleteSweep | null;
}

/**
 * Deletes one run whole from a workspace's SQLite state or a PostgreSQL state. Without `yes` it only
 * says what would go. Refused while the run may be running: its lease is held here, its runner is
 * alive, it is queued or held by a worker, or its runner is on a host this machine cannot check
 * (unless it has been silent for `staleHours`).
 */
export async function deleteThread(thread: string, args: DeleteArgs): Promise<DeleteReport> {
  const admin = await openStateAdmin(args);
  const { plan, done } = await admin.deleteRun(thread, async (plan) => {
    await refuseIfActive(plan.run, args);
    return args.yes === true;
  });
  const { location, run, ...footprint } = plan;
  const report = { ...footprint, state: location, deleted: false, indexEvents: 0, checkpointsElsewhere: elsewhere(run), sweep: null };
  if (!done) return report;
  const indexEvents = done.stateDir ? await forgetIndexedEvents(done.stateDir, thread) : 0;
  return { ...report, deleted: true, indexEvents, sweep: done.sweep };
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
