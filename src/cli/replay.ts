import type { Command } from "commander";
import { replayThread, type ReplayArgs } from "../runs/thread-time-travel.js";
import { log, printJson, stateOption, workspaceOptions } from "./common.js";
import { progressPrinter } from "./run.js";
import { declareCommand } from "./command-specs.js";

/** `replay`'s options: the run's, and -q for no progress lines. */
interface ReplayCliArgs extends ReplayArgs {
  quiet?: boolean;
}

export function registerReplay(program: Command): void {
  const cmd = workspaceOptions(
    declareCommand(program, "replay")
      .option("--from <checkpoint>", "start from this checkpoint (default: the first)")
      .option("--into <dir>", "where to put the replay's workspace (default: a new temp directory)")
      .option("--json", "one JSON object")
      .option("-q, --quiet", "no progress lines"),
  );
  stateOption(cmd).action(async (thread: string, opts: ReplayCliArgs) => {
    const r = await replayThread(thread, opts, { progress: progressPrinter(opts.quiet || opts.json) });
    process.exitCode = r.divergences.length ? 1 : 0;
    if (opts.json) return printJson(r);
    log(
      `replayed ${thread} as ${r.thread} in ${r.workspace}: ${r.status} after ${r.steps} step(s), ${r.replayedTurns} recorded model responses, 0 model calls`,
    );
    if (!r.divergences.length) log("no divergence: every tool result matched the recording");
    for (const d of r.divergences)
      log(
        `divergence at step ${d.step} (${d.tool}), ${d.field}: recorded ${JSON.stringify(d.recorded)?.slice(0, 200)} / replayed ${JSON.stringify(d.replayed)?.slice(0, 200)}`,
      );
  });
}
