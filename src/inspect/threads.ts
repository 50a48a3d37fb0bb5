import type { RunSummary } from "../ledger/run-status.js";
import { openExistingState, openPgInspection, stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";

/** One run as `threads` lists it: the same rows, status and order as the viewer. */
export type ThreadRow = Omit<RunSummary, "steps">;

/** Every run recorded in a workspace's state database, whatever started it, newest first. */
export async function listThreads(args: WorkspaceArgs): Promise<ThreadRow[]> {
  const url = stateUrlOf(args);
  if (url) {
    const [{ listRunsPg }, pg] = await Promise.all([import("../ledger/pg-run-status.js"), openPgInspection(url)]);
    try {
      return (await listRunsPg(pg.pool)).map(({ steps: _steps, ...row }) => row);
    } finally {
      await pg.close();
    }
  }
  const { listRuns } = await import("../ledger/run-status.js");
  const st = await openExistingState(args);
  try {
    return listRuns(st.db).map(({ steps: _steps, ...row }) => row);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}
