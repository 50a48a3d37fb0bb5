import type { Command } from "commander";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import { diffRun, type DiffArgs } from "../runs/diff.js";
import { declareCommand } from "./command-specs.js";

export type { DiffArgs } from "../runs/diff.js";

/** File changes between two checkpoints of a run. */
export async function handleDiff(thread: string, args: DiffArgs) {
  return diffRun(thread, args);
}

export function registerDiff(program: Command): void {
  const cmd = workspaceOptions(
    declareCommand(program, "diff")
      .option("--from <checkpoint>", "older checkpoint (default: the run's first)")
      .option("--to <checkpoint>", "newer checkpoint (default: the run's latest)")
      .option("--stat", "per-file added/removed line counts instead of the diff")
      .option("--json", "one JSON object"),
  );
  stateOption(cmd).action(async (thread: string, opts: DiffArgs) => {
    const r = await handleDiff(thread, opts);
    if (opts.json) return printJson(r);
    const { formatStat } = await import("../workspace/revisions.js");
    process.stdout.write("stat" in r && r.stat ? formatStat(r.stat) + "\n" : "diff" in r ? r.diff : "");
  });
}
