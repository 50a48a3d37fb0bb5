import type { WorkspaceArgs } from "../ledger/open-state.js";
import type { ProgressEvent } from "../runtime.js";
import { runtimeForThread } from "./thread-runtime.js";
import type { ForkResult, ReplayResult, RewindResult } from "./time-travel.js";

// Time travel on a stored run by its id (rewind, fork, replay): the runtime of the thread with its
// saved settings, the operation of time-travel.ts, and the runtime closed again.

export interface RewindArgs extends WorkspaceArgs {
  to: string;
  force?: boolean;
}

/** Rewinds a run to a checkpoint: files, ledger branch and graph state together. */
export async function rewindThread(thread: string, args: RewindArgs): Promise<RewindResult & { workspace: string }> {
  const { rewind } = await import("./time-travel.js");
  const rt = await runtimeForThread(thread, args, { lease: "rewind", postgres: true });
  try {
    return { ...(await rewind(rt, thread, args.to, { force: args.force })), workspace: rt.workspace };
  } finally {
    await rt.close();
  }
}

export interface ForkArgs extends WorkspaceArgs {
  at: string;
  thread?: string;
  into?: string;
  force?: boolean;
}

/** Starts a new thread from a checkpoint, optionally in a copy of the workspace. */
export async function forkThread(thread: string, args: ForkArgs): Promise<ForkResult> {
  const { fork } = await import("./time-travel.js");
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

export interface ReplayArgs extends WorkspaceArgs {
  from?: string;
  into?: string;
}

/** Re-runs a thread with its recorded model responses (no model calls) and reports divergences. */
export async function replayThread(thread: string, args: ReplayArgs, opts: { progress?: (e: ProgressEvent) => void } = {}): Promise<ReplayResult> {
  const { replay } = await import("./time-travel.js");
  // With --state the recording (checkpoints, ledger, revisions) is read from PostgreSQL; the replay
  // itself keeps its state in its scratch workspace (replay() in runs/time-travel.ts).
  const rt = await runtimeForThread(thread, args, { ...(opts.progress ? { progress: opts.progress } : {}), postgres: true });
  try {
    const { runtime, ...r } = await replay(rt, thread, { from: args.from, workspace: args.into });
    await runtime.close();
    return r;
  } finally {
    await rt.close();
  }
}
