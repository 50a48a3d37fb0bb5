import type { Command } from "commander";
import type { GcReport } from "../ledger/maintenance.js";
import { acquireLease, workspaceScope } from "../ledger/lease.js";
import path from "node:path";
import { intOption, log, openExistingState, printJson, workspaceOptions, type WorkspaceArgs } from "./common.js";

export interface GcArgs extends WorkspaceArgs {
  keepLast?: number;
}

/** Prunes old checkpoints and unreferenced workspace blobs. */
export async function handleGc(args: GcArgs): Promise<GcReport> {
  const [{ collectGarbage }, { RevisionStore }] = await Promise.all([import("../ledger/maintenance.js"), import("../workspace/revisions.js")]);
  const st = await openExistingState(args, { write: true });
  // gc deletes checkpoints and blobs: never while a run writes the workspace.
  let lease: ReturnType<typeof acquireLease> | undefined;
  try {
    lease = acquireLease(st.db, [workspaceScope(st.workspace)], { command: "gc" });
    const revisions = new RevisionStore(st.db, st.workspace, { blobsDir: path.join(st.stateDir, "blobs") });
    return await collectGarbage(st.db, revisions, st.stateDir, { keepLast: args.keepLast });
  } catch (err) {
    throw st.named(err);
  } finally {
    lease?.release();
    st.close();
  }
}

export function registerGc(program: Command): void {
  workspaceOptions(
    program
      .command("gc")
      .description("prune old checkpoints and unreferenced workspace blobs; branch heads stay resumable and runs replayable")
      .option("--keep-last <n>", "keep this many checkpoints back from each branch head (default: all)", intOption("--keep-last"))
      .option("--json", "one JSON object"),
  ).action(async (opts: GcArgs) => {
    const r = await handleGc(opts);
    if (opts.json) return printJson(r);
    log(
      `gc: ${r.checkpointsDeleted} checkpoint(s) and ${r.revisionsDeleted} revision(s) / ${r.blobsDeleted} blob(s) removed; ${r.heads} branch head(s) kept; ${(r.bytesBefore / 1e6).toFixed(2)} MB → ${(r.bytesAfter / 1e6).toFixed(2)} MB`,
    );
  });
}
