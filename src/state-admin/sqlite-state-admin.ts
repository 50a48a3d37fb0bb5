import path from "node:path";
import { CliError } from "../errors.js";
import { acquireLease, LeaseHeldError, threadScope, workspaceScope, type Lease } from "../ledger/lease.js";
import { openExistingState, type OpenedState, type WorkspaceArgs } from "../ledger/open-state.js";
import type { DeleteSweep, StateAdmin } from "./state-admin.js";

// The state admin of a workspace's own SQLite file (state.db): every operation opens the file for
// writing, under the lease that keeps the runs that write it out, and closes it.

/** The administrative operations on the SQLite state of the workspace `args` name. */
export function sqliteStateAdmin(args: WorkspaceArgs): StateAdmin {
  return {
    backend: "sqlite",
    deleteRun: async (thread, decide) => {
      const [{ deleteRunRecords, runExists, runFootprint }, { listRuns }] = await Promise.all([
        import("../ledger/delete-run.js"),
        import("../ledger/run-status.js"),
      ]);
      const st = await openExistingState(args, { write: true });
      let lease: Lease | undefined;
      try {
        const footprint = runFootprint(st.db, thread);
        if (!runExists(footprint)) throw new CliError(`unknown thread "${thread}" in ${st.dbPath}; list runs with \`ledgerloop threads\``, 1, "UNKNOWN_THREAD");
        const plan = { ...footprint, location: st.dbPath, run: listRuns(st.db).find((r) => r.thread === thread) };
        if (!(await decide(plan))) return { plan, done: null };
        // The thread's lease keeps every writer of the run out while its records go.
        lease = acquireLease(st.db, [threadScope(thread)], { command: "delete", thread });
        deleteRunRecords(st.db, st.stateDir, thread);
        lease.release();
        lease = undefined;
        return { plan, done: { stateDir: st.stateDir, sweep: await sweepRevisions(st) } };
      } catch (err) {
        throw st.named(err);
      } finally {
        lease?.release();
        st.close();
      }
    },
    gc: async (req) => {
      if (req.graceMinutes !== undefined)
        throw new CliError("--grace-minutes applies to a PostgreSQL state (--state); a local gc has no pushes to wait for", 2, "CONFIG_INVALID");
      if (req.staleHours !== undefined)
        throw new CliError("--stale-hours applies to a PostgreSQL state (--state); a local gc runs while no run writes the workspace", 2, "CONFIG_INVALID");
      const [{ collectGarbage }, { RevisionStore }] = await Promise.all([import("../ledger/maintenance.js"), import("../workspace/revisions.js")]);
      const st = await openExistingState(args, { write: true });
      // gc deletes checkpoints and blobs: never while a run writes the workspace.
      let lease: Lease | undefined;
      try {
        lease = acquireLease(st.db, [workspaceScope(st.workspace)], { command: "gc" });
        const revisions = new RevisionStore(st.db, st.workspace, { blobsDir: path.join(st.stateDir, "blobs") });
        return { backend: "sqlite", report: await collectGarbage(st.db, revisions, st.stateDir, { keepLast: req.keepLast }) };
      } catch (err) {
        throw st.named(err);
      } finally {
        lease?.release();
        st.close();
      }
    },
    // Doctor checks this machine; the workspace's state file is checked by every command that opens it.
    checks: async () => [],
    workers: async () => {
      throw new CliError("workers needs the PostgreSQL state the workers use: --state postgres://… or LEDGERLOOP_STATE_URL", 2, "CONFIG_INVALID");
    },
  };
}

/**
 * Gives the space back when the workspace is free: the same sweep as `gc` (which keeps every
 * checkpoint), removing the revisions only the deleted run named. Skipped, with the reason, while
 * another run uses the workspace.
 */
async function sweepRevisions(st: OpenedState): Promise<DeleteSweep> {
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
