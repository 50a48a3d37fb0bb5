import type { Command } from "commander";
import type { ReplayResult } from "../runs/time-travel.js";
import { log, printJson, stateOption, workspaceOptions } from "./common.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { runtimeForThread } from "../runs/thread-runtime.js";
import { progressPrinter } from "./run.js";

export interface ReplayArgs extends WorkspaceArgs {
  from?: string;
  into?: string;
  quiet?: boolean;
}

/** Re-runs a thread with its recorded model responses (no model calls) and reports divergences. */
export async function handleReplay(thread: string, args: ReplayArgs): Promise<ReplayResult> {
  const { replay } = await import("../runs/time-travel.js");
  // With --state the recording (checkpoints, ledger, revisions) is read from PostgreSQL; the replay
  // itself keeps its state in its scratch workspace (replay() in runs/time-travel.ts).
  const rt = await runtimeForThread(thread, args, { progress: progressPrinter(args.quiet || args.json), postgres: true });
  try {
    const { runtime, ...r } = await replay(rt, thread, { from: args.from, workspace: args.into });
    await runtime.close();
    return r;
  } finally {
    await rt.close();
  }
}

export function registerReplay(program: Command): void {
  const cmd = workspaceOptions(
    program
      .command("replay")
      .description("re-run a thread from a checkpoint with the model responses recorded in its ledger (no model calls), in a scratch copy of the workspace, and report where tool results differ")
      .argument("<thread>", "the run id")
      .option("--from <checkpoint>", "start from this checkpoint (default: the first)")
      .option("--into <dir>", "where to put the replay's workspace (default: a new temp directory)")
      .option("--json", "one JSON object")
      .option("-q, --quiet", "no progress lines"),
  );
  stateOption(cmd).action(async (thread: string, opts: ReplayArgs) => {
    const r = await handleReplay(thread, opts);
    process.exitCode = r.divergences.length ? 1 : 0;
    if (opts.json) return printJson(r);
    log(`replayed ${thread} as ${r.thread} in ${r.workspace}: ${r.status} after ${r.steps} step(s), ${r.replayedTurns} recorded model responses, 0 model calls`);
    if (!r.divergences.length) log("no divergence: every tool result matched the recording");
    for (const d of r.divergences) log(`divergence at step ${d.step} (${d.tool}), ${d.field}: recorded ${JSON.stringify(d.recorded)?.slice(0, 200)} / replayed ${JSON.stringify(d.replayed)?.slice(0, 200)}`);
  });
}
