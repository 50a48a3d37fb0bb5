import path from "node:path";
import type { Command } from "commander";
import type { StorageStats } from "../ledger/maintenance.js";
import { printJson, workspaceOptions } from "./common.js";
import { openExistingState, type WorkspaceArgs } from "../ledger/open-state.js";

/** Sizes of checkpoints, ledger, blobs and index of a workspace's state. */
export async function handleStats(args: WorkspaceArgs): Promise<StorageStats> {
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

const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;

export function registerStats(program: Command): void {
  workspaceOptions(program.command("stats").description("sizes of checkpoints, ledger, workspace blobs and index").option("--json", "one JSON object")).action(
    async (opts: WorkspaceArgs) => {
      const s = await handleStats(opts);
      if (opts.json) return printJson(s);
      process.stdout.write(
        [
          `checkpoints  ${String(s.checkpoints.count).padStart(7)}  ${mb(s.checkpoints.bytes)} (+ ${mb(s.checkpoints.writesBytes)} pending writes)`,
          `ledger       ${String(s.ledger.events).padStart(7)}  ${mb(s.ledger.payloadBytes)} events, ${s.ledger.promptBlobs} prompts ${mb(s.ledger.promptBlobBytes)}`,
          `revisions    ${String(s.revisions.count).padStart(7)}  ${s.revisions.blobs} blobs, ${mb(s.revisions.storedBytes)} stored (${mb(s.revisions.rawBytes)} raw)`,
          `index                 ${mb(s.index.bytes)}`,
          `on disk               state.db ${mb(s.files.stateDb)}, wal ${mb(s.files.wal)}, blobs/ ${mb(s.files.blobsDir)}`,
        ].join("\n") + "\n",
      );
    },
  );
}
