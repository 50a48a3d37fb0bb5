import type { Command } from "commander";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { runtimeForThread } from "../runs/thread-runtime.js";

export interface DiffArgs extends WorkspaceArgs {
  from: string;
  to: string;
  stat?: boolean;
}

/** File changes between two checkpoints of a run. */
export async function handleDiff(thread: string, args: DiffArgs) {
  const { diffCheckpoints } = await import("../runs/time-travel.js");
  const rt = await runtimeForThread(thread, args, { postgres: true });
  try {
    return await diffCheckpoints(rt, thread, args.from, args.to, { stat: args.stat });
  } finally {
    await rt.close();
  }
}

export function registerDiff(program: Command): void {
  const cmd = workspaceOptions(
    program
      .command("diff")
      .description("file changes between two checkpoints of a run (unified diff)")
      .argument("<thread>", "the run id")
      .requiredOption("--from <checkpoint>", "older checkpoint")
      .requiredOption("--to <checkpoint>", "newer checkpoint")
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
