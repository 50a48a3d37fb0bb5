import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { RunFootprint } from "../ledger/delete-run.js";
import { acquireLease, LEASE_EXIT_CODE, LeaseHeldError, threadScope, workspaceScope, type Lease } from "../ledger/lease.js";
import { log, openExistingState, printJson, stateOption, stateUrlOf, workspaceOptions, type WorkspaceArgs } from "./common.js";

export interface DeleteArgs extends WorkspaceArgs {
  yes?: boolean;
}

/** What `ledgerloop delete` did (or, without --yes, would do). */
export interface DeleteReport extends RunFootprint {
  deleted: boolean;
  /** Events of the run forgotten by the search index (index.db). */
  indexEvents: number;
  /** The revision sweep after the delete: bytes of the state before and after, or why it did not run. */
  sweep: { bytesBefore: number; bytesAfter: number; revisionsDeleted: number } | { skipped: string } | null;
}

/**
 * Deletes one run whole from a workspace's SQLite state. Without `yes` it only says what would go.
 * Refused while the run is running (its lease is held, or its runner is alive).
 */
export async function handleDelete(thread: string, args: DeleteArgs): Promise<DeleteReport> {
  if (stateUrlOf(args)) {
    throw new CliError(
      "delete works on a workspace's SQLite state only; deleting a run from a PostgreSQL state (--state / LEDGERLOOP_STATE_URL) is not implemented yet",
      2,
      "NOT_SUPPORTED",
    );
  }
  const [{ deleteRunRecords, runExists, runFootprint }, { listRuns }] = await Promise.all([import("../ledger/delete-run.js"), import("../ledger/run-status.js")]);
  const st = await openExistingState(args, { write: true });
  let lease: Lease | undefined;
  try {
    const footprint = runFootprint(st.db, thread);
    if (!runExists(footprint)) throw new CliError(`unknown thread "${thread}" in ${st.dbPath}; list runs with \`ledgerloop threads\``, 1, "UNKNOWN_THREAD");
    const status = listRuns(st.db).find((r) => r.thread === thread)?.status;
    if (status === "running") {
      throw new CliError(`run ${thread} is running (its runner is alive); stop it first, then delete it`, LEASE_EXIT_CODE, "RUN_RUNNING");
    }
    if (!args.yes) return { ...footprint, deleted: false, indexEvents: 0, sweep: null };
    // The thread's lease keeps every writer of the run out while its records go.
    lease = acquireLease(st.db, [threadScope(thread)], { command: "delete", thread });
    deleteRunRecords(st.db, st.stateDir, thread);
    lease.release();
    lease = undefined;
    const indexEvents = await forgetIndexedEvents(st.stateDir, thread);
    const sweep = await sweepRevisions(st);
    return { ...footprint, deleted: true, indexEvents, sweep };
  } catch (err) {
    throw st.named(err);
  } finally {
    lease?.release();
    st.close();
  }
}

/** Drops the run's events from the search index, when there is one (its vectors are unreachable without them). */
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

export function registerDelete(program: Command): void {
  stateOption(
    workspaceOptions(
      program
        .command("delete <thread>")
        .description("delete one run whole (ledger, checkpoints, prompts, run log, report, indexed events); without --yes, only say what would go")
        .option("--yes", "delete it (otherwise nothing is written)")
        .option("--json", "one JSON object"),
    ),
  ).action(async (thread: string, opts: DeleteArgs) => {
    const r = await handleDelete(thread, opts);
    if (opts.json) return printJson(r);
    const what = `${r.events} event(s), ${r.checkpoints} checkpoint(s), ${r.writes} pending write(s), ${r.prompts} stored prompt(s)${r.registered ? ", its registry entry" : ""}, its run log and report`;
    const lessons = r.lessons ? `; ${r.lessons} lesson(s) drawn from it stay in long-term memory (\`ledgerloop memory forget\` removes one)` : "";
    if (!r.deleted) {
      log(`delete: would remove ${what} of ${r.thread}${lessons}. Nothing was written; add --yes to delete it.`);
      return;
    }
    log(`delete: removed ${what} of ${r.thread}; ${r.indexEvents} indexed event(s) forgotten${lessons}`);
    const s = r.sweep;
    if (s && "skipped" in s) log(`  workspace revisions not swept: ${s.skipped}`);
    else if (s) log(`  ${s.revisionsDeleted} workspace revision(s) no run names any more removed; ${(s.bytesBefore / 1e6).toFixed(2)} MB → ${(s.bytesAfter / 1e6).toFixed(2)} MB`);
  });
}
