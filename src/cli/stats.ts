import type { Command } from "commander";
import { getStats } from "../inspect/stats.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { printJson, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;

export function registerStats(program: Command): void {
  workspaceOptions(declareCommand(program, "stats").option("--json", "one JSON object")).action(async (opts: WorkspaceArgs) => {
    const s = await getStats(opts);
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
  });
}
