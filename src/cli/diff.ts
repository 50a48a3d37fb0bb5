import type { Command } from "commander";
import { CliError } from "../errors.js";
import { getHistory } from "../inspect/history.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { runtimeForThread } from "../runs/thread-runtime.js";

export interface DiffArgs extends WorkspaceArgs {
  /** Default: the run's first checkpoint. */
  from?: string;
  /** Default: the run's latest checkpoint. */
  to?: string;
  stat?: boolean;
}

/** File changes between two checkpoints of a run. */
export async function handleDiff(thread: string, args: DiffArgs) {
  const { diffCheckpoints } = await import("../runs/time-travel.js");
  let { from, to } = args;
  if (from === undefined || to === undefined) {
    const rows = await getHistory(thread, args);
    if (rows.length === 0) throw new CliError(`run ${thread} has no checkpoints to compare`, 1, "NOT_FOUND");
    from ??= rows.at(-1)!.checkpointId;
    to ??= rows[0]!.checkpointId;
  }
  const rt = await runtimeForThread(thread, args, { postgres: true });
  try {
    return await diffCheckpoints(rt, thread, from, to, { stat: args.stat });
  } finally {
    await rt.close();
  }
}

export function registerDiff(program: Command): void {
  const cmd = workspaceOptions(
    program
      .command("diff")
      .description("file changes between two checkpoints of a run (unified diff); without --from/--to, the whole run's")
      .argument("<thread>", "the run id")
      .option("--from <checkpoint>", "older checkpoint (default: the run's first)")
      .option("--to <checkpoint>", "newer checkpoint (default: the run's latest)")
      .option("--stat", "per-file added/removed line counts instead of the diff")
      .option("--json", "one JSON object"),
  );
  stateOption(cmd).action(async (thread: string, opts: DiffArgs) => {
    const r = await handleDiff(thread, opts);
    if (opts.json) return printJson(r);
    const { formatStat } = await import("../workspace/revisions.js");
    process.stdout.write("stat" in r && r.stat ? formatStat(r.stat) + "\n" : ("diff" in r ? r.diff : ""));
  });
}
