import fs from "node:fs";
import path from "node:path";
import { withInspection } from "../ledger/inspection.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import type { RunReport } from "../report/report.js";

/**
 * The report of a thread's current branch: the ledger and where the thread stands from its state
 * (either backend), the file changes from the workspace's own revision store when this machine has
 * it (a report does not pull revisions from the PostgreSQL replica).
 */
export async function getReport(thread: string, args: WorkspaceArgs): Promise<RunReport> {
  const [{ buildReport }, { RevisionStore }, { openStateDb }, { resolveWorkspace, stateLocation }] = await Promise.all([
    import("../report/report.js"),
    import("../workspace/revisions.js"),
    import("../ledger/state-db.js"),
    import("../workspace/location.js"),
  ]);
  return withInspection(args, async (st) => {
    await st.requireThread(thread);
    await st.checkpointsHere(thread);
    const head = await st.head(thread);
    const workspace = resolveWorkspace(args.workspace ?? process.cwd());
    const { stateDir, dbPath } = stateLocation(workspace, args.stateDir);
    const local = fs.existsSync(dbPath) ? openStateDb(dbPath, { create: false, readonly: true }) : undefined;
    try {
      const revisions = local ? new RevisionStore(local, workspace, { blobsDir: path.join(stateDir, "blobs") }) : null;
      return await buildReport(st.ledger, revisions, thread, head.ledgerHead, head.subtasks);
    } finally {
      local?.close();
    }
  });
}
