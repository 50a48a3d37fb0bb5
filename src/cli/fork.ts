import type { Command } from "commander";
import { stateUrlOf } from "../ledger/open-state.js";
import { forkThread, type ForkArgs } from "../runs/thread-time-travel.js";
import { cliCommand, log, printJson, shellWord, stateOption } from "./common.js";
import { declareCommand } from "./command-specs.js";

export function registerFork(program: Command): void {
  const cmd = declareCommand(program, "fork")
    .requiredOption("--at <checkpoint>", "checkpoint id (or a unique prefix of 6+ characters)")
    .option("-w, --workspace <dir>", "the run's workspace (default: current directory)")
    .option("--state-dir <dir>", "where the run's state database lives")
    .option("--into <dir>", "give the fork its own copy of the workspace (and state) in this new directory")
    .option("-t, --thread <id>", "id of the new thread (default: <thread>-fork-<random>)")
    .option("--force", "when sharing the workspace: save edits made outside the run as a revision first")
    .option("--json", "one JSON object");
  stateOption(cmd).action(async (thread: string, opts: ForkArgs) => {
    const r = await forkThread(thread, opts);
    if (opts.json) return printJson(r);
    log(`forked ${thread} at ${r.fromCheckpoint} into thread ${r.thread} (workspace ${r.workspace})`);
    log(`continue with: ${cliCommand()} resume ${r.thread} -w ${shellWord(r.workspace)}${stateUrlOf(opts) ? " --state <the same URL>" : ""}`);
  });
}
