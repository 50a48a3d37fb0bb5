import type { Command } from "commander";
import type { ForkResult } from "../runs/time-travel.js";
import { cliCommand, log, printJson, shellWord, stateOption } from "./common.js";
import { stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import { runtimeForThread } from "../runs/thread-runtime.js";

export interface ForkArgs extends WorkspaceArgs {
  at: string;
  thread?: string;
  into?: string;
  force?: boolean;
}

/** Starts a new thread from a checkpoint, optionally in a copy of the workspace. */
export async function handleFork(thread: string, args: ForkArgs): Promise<ForkResult> {
  const { fork } = await import("../runs/time-travel.js");
  // Without --into the fork rewrites this workspace's files: it is a writer of it. With --into only
  // the new workspace is written, and fork() takes that one's lease.
  // With --state the fork (and its copy of the workspace with --into) is a thread of that PostgreSQL
  // state too; its files come from the replica when this workspace's store lacks the revision.
  const rt = await runtimeForThread(thread, args, args.into ? { postgres: true } : { lease: "fork", postgres: true });
  try {
    const { runtime, ...r } = await fork(rt, thread, args.at, { newThread: args.thread, workspace: args.into, force: args.force });
    if (runtime !== rt) await runtime.close();
    return r;
  } finally {
    await rt.close();
  }
}

export function registerFork(program: Command): void {
  const cmd = program
    .command("fork")
    .description("start a new thread from a checkpoint of a run (the original stays untouched)")
    .argument("<thread>", "the run id")
    .requiredOption("--at <checkpoint>", "checkpoint id (or a unique prefix of 6+ characters)")
    .option("-w, --workspace <dir>", "the run's workspace (default: current directory)")
    .option("--state-dir <dir>", "where the run's state database lives")
    .option("--into <dir>", "give the fork its own copy of the workspace (and state) in this new directory")
    .option("-t, --thread <id>", "id of the new thread (default: <thread>-fork-<random>)")
    .option("--force", "when sharing the workspace: save edits made outside the run as a revision first")
    .option("--json", "one JSON object");
  stateOption(cmd).action(async (thread: string, opts: ForkArgs) => {
    const r = await handleFork(thread, opts);
    if (opts.json) return printJson(r);
    log(`forked ${thread} at ${r.fromCheckpoint} into thread ${r.thread} (workspace ${r.workspace})`);
    log(`continue with: ${cliCommand()} resume ${r.thread} -w ${shellWord(r.workspace)}${stateUrlOf(opts) ? " --state <the same URL>" : ""}`);
  });
}
