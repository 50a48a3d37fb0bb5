import type { Command } from "commander";
import { stateUrlOf } from "../ledger/open-state.js";
import { rewindThread, type RewindArgs } from "../runs/thread-time-travel.js";
import { cliCommand, log, printJson, shellWord, stateOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

export function registerRewind(program: Command): void {
  const cmd = workspaceOptions(
    declareCommand(program, "rewind")
      .requiredOption("--to <checkpoint>", "checkpoint id (or a unique prefix of 6+ characters)")
      .option("--force", "first save edits made outside the run as a revision of their own, then rewind")
      .option("--json", "one JSON object"),
  );
  stateOption(cmd).action(async (thread: string, opts: RewindArgs) => {
    const r = await rewindThread(thread, opts);
    if (opts.json) return printJson(r);
    const n = r.restored.created.length + r.restored.modified.length + r.restored.deleted.length;
    log(`rewound ${thread} to ${r.toCheckpoint}: ${n} file(s) restored to revision ${r.revision.slice(0, 12)}`);
    if (r.savedRevision) log(`edits made outside the run were saved as revision ${r.savedRevision.slice(0, 12)}`);
    // Printed so that it runs as printed, from any directory.
    log(`continue with: ${cliCommand()} resume ${thread} -w ${shellWord(r.workspace)}${stateUrlOf(opts) ? " --state <the same URL>" : ""}`);
  });
}
