import path from "node:path";
import { latestValues } from "../ledger/checkpoints.js";
import { currentHead, noteCheckpointHome, openExistingState, openPgInspection, requirePgThread, requireThread, stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import type { RunReport } from "../report/report.js";
import type { TaskStateValue } from "../state.js";

/** The report of a thread's current branch. */
export async function getReport(thread: string, args: WorkspaceArgs): Promise<RunReport> {
  const [{ buildReport }, { RevisionStore }] = await Promise.all([import("../report/report.js"), import("../workspace/revisions.js")]);
  const url = stateUrlOf(args);
  if (url) {
    // Ledger and checkpoints from PostgreSQL; the file changes from the workspace's own revision
    // store, when this machine has it (a report does not pull revisions from the PostgreSQL replica).
    const pg = await openPgInspection(url);
    let local: import("better-sqlite3").Database | undefined;
    try {
      await requirePgThread(pg, thread);
      const values = await latestValues<TaskStateValue>(pg.checkpointer, thread);
      const [{ openStateDb }, { resolveWorkspace, stateLocation }, fs] = await Promise.all([import("../ledger/state-db.js"), import("../workspace/location.js"), import("node:fs")]);
      const workspace = resolveWorkspace(args.workspace ?? process.cwd());
      const { stateDir, dbPath } = stateLocation(workspace, args.stateDir);
      local = fs.existsSync(dbPath) ? openStateDb(dbPath, { create: false, readonly: true }) : undefined;
      const revisions = local ? new RevisionStore(local, workspace, { blobsDir: path.join(stateDir, "blobs") }) : null;
      return await buildReport(pg.ledger, revisions, thread, values?.ledgerHead ?? null, values?.subtasks ?? []);
    } finally {
      local?.close();
      await pg.close();
    }
  }
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    noteCheckpointHome(st, thread);
    const head = await currentHead(st, thread);
    const revisions = new RevisionStore(st.db, st.workspace, { blobsDir: path.join(st.stateDir, "blobs") });
    return await buildReport(st.ledger, revisions, thread, head.ledgerHead, head.subtasks);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}
