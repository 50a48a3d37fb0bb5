import type { RunSummary } from "../ledger/run-status.js";
import { withInspection } from "../ledger/inspection.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";

/** One run as `threads` lists it: the same rows, status and order as the viewer. */
export type ThreadRow = Omit<RunSummary, "steps">;

/** Every run recorded in a workspace's state database, whatever started it, newest first. */
export async function listThreads(args: WorkspaceArgs): Promise<ThreadRow[]> {
  return withInspection(args, async (st) => (await st.runs()).map(({ steps: _steps, ...row }) => row));
}
