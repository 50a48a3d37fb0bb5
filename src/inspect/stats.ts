import path from "node:path";
import type { StorageStats } from "../ledger/maintenance.js";
import { openExistingState, type WorkspaceArgs } from "../ledger/open-state.js";

/** Sizes of checkpoints, ledger, blobs and index of a workspace's state. */
export async function getStats(args: WorkspaceArgs): Promise<StorageStats> {
  const [{ storageStats }, { RevisionStore }] = await Promise.all([import("../ledger/maintenance.js"), import("../workspace/revisions.js")]);
  const st = await openExistingState(args);
  try {
    return storageStats(st.db, new RevisionStore(st.db, st.workspace, { blobsDir: path.join(st.stateDir, "blobs") }), st.stateDir);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}
