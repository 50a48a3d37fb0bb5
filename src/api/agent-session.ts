import { createCodingAgent, recursionLimitFor } from "../agent/graph.js";
import type { ApprovalRequest } from "../agent/nodes/act.js";
import { driveRunReconnecting, type DriveResult } from "../runs/drive.js";
import { assertNewThread, startThread } from "../runs/start.js";
import { finishDryRun, startDryRun, type DryRunOutcome } from "../runs/dry-run.js";
import { randomBytes } from "node:crypto";
import { CliError } from "../errors.js";
import type { ChatModel } from "../models/port.js";
import { createRuntime, type Runtime } from "../runtime.js";
import type { RunSettingsInput } from "../settings.js";
import { InvalidOptionError, type OpenAgentOptions } from "./agent-options.js";
import type { TaskStateValue } from "../state.js";

// The heavy half of openAgent (api/agent.ts), loaded on its first call: the same runtime, graph and
// driver as `ledgerloop run`.

/** How a run started by `Agent.run` ended. */
export interface AgentRunResult {
  thread: string;
  status: DriveResult["status"];
  /** The graph state at the run's last checkpoint (empty with `state_unavailable`: the database is gone). */
  state: TaskStateValue;
  steps: number;
  error?: string;
  /** The approval the run is paused on, when it is. */
  pending?: ApprovalRequest;
  /** With `dryRun`: the copy, the changes and diff it would apply, the commands it ran. */
  dryRun?: DryRunOutcome;
}

/** The compiled coding-agent graph, with the workspace's SQLite checkpointer. */
export type CodingAgentGraph = ReturnType<typeof createCodingAgent>;

/** An agent bound to one workspace: its graph, its runtime, and a way to run goals to their end. */
export interface Agent {
  /** invoke / stream / getState / getStateHistory / updateState with `{ configurable: { thread_id } }`. */
  readonly graph: CodingAgentGraph;
  readonly runtime: Runtime;
  readonly workspace: string;
  readonly stateDir: string;
  /** Registers a new thread for `goal` (as `run` does) without running it, for driving `graph` yourself. */
  startThread(goal: string, thread?: string): string;
  /**
   * Runs a goal on a new thread to its end (finished, failed, paused for approval, …). On a
   * PostgreSQL state, a run whose database goes away waits up to `reconnectMs` (default 60,000) for
   * it and resumes from its last checkpoint on its own (0: it pauses as `state_unavailable` at once).
   */
  run(
    goal: string,
    opts?: { thread?: string; signal?: AbortSignal; ask?: (req: ApprovalRequest) => Promise<boolean>; reconnectMs?: number },
  ): Promise<AgentRunResult>;
  /** Continues a thread from its last checkpoint, answering a pending approval if given (`reconnectMs` as for run). */
  resume(thread: string, opts?: { decision?: "approve" | "reject"; signal?: AbortSignal; reconnectMs?: number }): Promise<AgentRunResult>;
  /** Closes the state database and any Chroma server this agent started. */
  close(): Promise<void>;
}

/** Builds the runtime and the checkpointed graph for options openAgent has validated. */
export async function openSession(options: OpenAgentOptions, settings: RunSettingsInput, model: ChatModel | undefined): Promise<Agent> {
  // A dry run's copy is made once per agent; each run records it under its thread for `apply`.
  const dry = options.dryRun ? await startDryRun(settings.workspace, `dry-${randomBytes(4).toString("hex")}`) : null;
  if (dry) settings.workspace = dry.copy;
  const runtime = await createRuntime(settings, {
    ...(model ? { model } : {}),
    ...(options.onProgress ? { progress: options.onProgress } : {}),
    ...(options.onWarning ? { warn: options.onWarning } : {}),
  });
  const graph = createCodingAgent({ runtime }).withConfig({ recursionLimit: recursionLimitFor(runtime.settings.maxSteps) }) as CodingAgentGraph;
  // A lost PostgreSQL state: waited for, its lines to onWarning (see Agent.run).
  const reconnecting = (ms: number | undefined) => {
    if (ms !== undefined && (!Number.isFinite(ms) || ms < 0))
      throw new InvalidOptionError("reconnectMs", "invalid option reconnectMs: expected a number of milliseconds, 0 or more");
    return { reconnectMs: ms ?? 60_000, ...(options.onWarning ? { say: options.onWarning } : {}) };
  };
  const finish = async (r: DriveResult): Promise<AgentRunResult> => {
    // A run paused because its PostgreSQL state went away cannot read that state back.
    const snap = r.status === "state_unavailable" ? { values: {} } : await graph.getState({ configurable: { thread_id: r.thread } });
    let dryRun: DryRunOutcome | undefined;
    if (dry) {
      const { saveDryRun } = await import("../dry-run/dry-run.js");
      const run = { ...dry, thread: r.thread };
      saveDryRun(run);
      dryRun = await finishDryRun(run, runtime);
    }
    return {
      ...(dryRun ? { dryRun } : {}),
      thread: r.thread,
      status: r.status,
      state: snap.values as TaskStateValue,
      steps: r.steps,
      ...(r.error ? { error: r.error } : {}),
      ...(r.pending ? { pending: r.pending } : {}),
    };
  };
  return {
    graph,
    runtime,
    workspace: runtime.workspace,
    stateDir: runtime.stateDir,
    startThread: (goal, thread) => startThread(runtime, goal, thread),
    async run(goal, opts = {}) {
      if (typeof goal !== "string" || !goal.trim()) throw new InvalidOptionError("goal", "the goal must be a non-empty string");
      const rc = reconnecting(opts.reconnectMs);
      const thread = startThread(runtime, goal, opts.thread);
      await assertNewThread(runtime, thread);
      return finish(
        await driveRunReconnecting(runtime, thread, goal, {
          origin: "script",
          ...(opts.signal ? { signal: opts.signal } : {}),
          ...(opts.ask ? { ask: opts.ask } : {}),
          ...rc,
        }),
      );
    },
    async resume(thread, opts = {}) {
      const rc = reconnecting(opts.reconnectMs);
      if (!(await runtime.runs.hasCheckpoints(thread))) {
        throw new CliError(`unknown thread "${thread}" in ${runtime.stateLocation}`, 1, "UNKNOWN_THREAD");
      }
      return finish(
        await driveRunReconnecting(runtime, thread, null, {
          origin: "script",
          ...(opts.signal ? { signal: opts.signal } : {}),
          ...(opts.decision ? { resume: opts.decision } : {}),
          ...rc,
        }),
      );
    },
    close: () => runtime.close(),
  };
}
