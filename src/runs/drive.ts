import readline from "node:readline/promises";
import { Command, GraphRecursionError } from "@langchain/langgraph";
import { createCodingAgent, recursionLimitFor } from "../agent/graph.js";
import { settleNodes } from "../agent/in-flight.js";
import type { ApprovalRequest } from "../agent/nodes/act.js";
import { ModelError, errorMessage } from "../errors.js";
import { isStateUnavailable, unavailableReason } from "../ledger/state-unavailable.js";
import type { Runtime } from "../runtime.js";
import { runContextOf } from "../settings.js";
import type { RunStatus } from "../state.js";
import { endObservation } from "../telemetry/observer.js";

/** How long a stopped run waits for the node it interrupted to record what it was doing. */
const NODE_SETTLE_MS = 20_000;

/**
 * How a run can end in `driveRun`: a RunStatus, `failed`, or `state_unavailable` (the PostgreSQL
 * state went away mid-run: nothing recorded is lost and the run resumes from its last checkpoint
 * once the database is back; the ledger cannot say so itself, since it is in that database).
 */
export type DriveStatus = RunStatus | "failed" | "state_unavailable";

export interface DriveResult {
  thread: string;
  status: DriveStatus;
  steps: number;
  stateDir: string;
  error?: string;
  /** Set when the run is paused for an approval. */
  pending?: ApprovalRequest;
}

export interface DriveOptions {
  signal?: AbortSignal;
  /** Answers an approval request on the spot (an interactive terminal); without it the run pauses. */
  ask?: (req: ApprovalRequest) => Promise<boolean>;
  /** Resume a paused run with this answer. */
  resume?: "approve" | "reject";
  /** What started the run, for the registry (default "cli"). */
  origin?: "cli" | "script" | "worker";
}

/** Asks on the terminal (stderr), defaulting to no. */
export async function askOnTerminal(req: ApprovalRequest): Promise<boolean> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    process.stderr.write(`\nThe agent wants to run (${req.tool}):\n  ${req.command}\npolicy: ${req.rule}: ${req.reason}\n`);
    const answer = await rl.question("approve? [y/N] ");
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/**
 * Runs (or resumes, with `goal` null) a thread to its end, checkpointing every superstep
 * synchronously. Stopping early (signal, model failure, a pending approval) leaves the last
 * checkpoint resumable.
 */
export async function driveRun(rt: Runtime, threadId: string, goal: string | null, opts: DriveOptions = {}): Promise<DriveResult> {
  const agent = createCodingAgent({ runtime: rt, origin: opts.origin ?? "cli" });
  // A runner that lost its lease (it stalled past the expiry and another took over) must stop writing.
  const leaseLost = rt.lease?.signal;
  const signal = leaseLost ? (opts.signal ? AbortSignal.any([opts.signal, leaseLost]) : leaseLost) : opts.signal;
  const config = {
    configurable: { thread_id: threadId },
    // The per-run settings, derived from the settings schema: a new setting needs no line here.
    context: { ...runContextOf(rt.settings), model: rt.model.name },
    recursionLimit: recursionLimitFor(rt.settings.maxSteps),
    durability: "sync" as const,
    signal,
  };
  let error: string | undefined;
  let failed = false;
  // Rate limits and outages outlasting every retry pause the run (resumable), they do not fail it.
  let paused: "rate_limited" | "model_unavailable" | "budget_exhausted" | undefined;
  let input: unknown = goal === null ? null : { goal };
  if (opts.resume) input = new Command({ resume: { decision: opts.resume } });
  else if (goal === null) await resumeStopped(agent, config);
  let pending: ApprovalRequest | undefined;
  // The database went away (connection terminated, server restarting, network): the run pauses.
  let unavailable = false;
  // The last step the stream reported, for the result when the state cannot be read back.
  let lastStep: number | undefined;
  const stateUnavailable = (err: unknown): boolean => {
    if (rt.backend !== "postgres" || !isStateUnavailable(err)) return false;
    unavailable = true;
    error =
      `the state database ${rt.stateLocation} is unavailable (${unavailableReason(err)}); ` +
      `the run is paused at its last checkpoint: resume it (\`ledgerloop resume ${threadId}\`) once the database is back`;
    return true;
  };
  for (;;) {
    try {
      const stream = await agent.stream(input as never, { ...config, streamMode: "updates" });
      for await (const chunk of stream) {
        // Progress is reported by the nodes themselves; the stream only drives the run.
        for (const update of Object.values((chunk ?? {}) as Record<string, { step?: unknown } | null>)) {
          if (typeof update?.step === "number") lastStep = update.step;
        }
      }
    } catch (err) {
      // An abort stops LangGraph waiting, not the node: let it finish its own record (a killed
      // command's feedback) before the caller acts on the result, e.g. hands the run back.
      if (signal?.aborted || rt.stopBetweenSteps?.aborted) await settleNodes(rt, NODE_SETTLE_MS);
      if (leaseLost?.aborted) error = "stopped: the workspace lease was taken over by another process";
      else if (opts.signal?.aborted) error = "interrupted by signal";
      else if (rt.stopBetweenSteps?.aborted) error = "stopped between steps";
      else if (err instanceof GraphRecursionError) error = `superstep limit reached (${config.recursionLimit})`;
      else if (stateUnavailable(err)) {
        // Classified by the underlying pg error, whichever port raised it.
      } else if (
        err instanceof ModelError &&
        (err.code === "MODEL_RATE_LIMITED" || err.code === "MODEL_UNAVAILABLE" || err.code === "MODEL_UNREACHABLE" || err.code === "BUDGET_EXHAUSTED")
      ) {
        paused = err.code === "MODEL_RATE_LIMITED" ? "rate_limited" : err.code === "BUDGET_EXHAUSTED" ? "budget_exhausted" : "model_unavailable";
        error = errorMessage(err);
      } else {
        failed = true;
        error = errorMessage(err);
        if (!(err instanceof ModelError)) error = `${(err as Error)?.name ?? "Error"}: ${error}`;
      }
      break;
    }
    let snap: Awaited<ReturnType<typeof agent.getState>>;
    try {
      snap = await agent.getState({ configurable: { thread_id: threadId } });
    } catch (err) {
      if (stateUnavailable(err)) break;
      throw err;
    }
    const request = snap.tasks
      .flatMap((t) => t.interrupts ?? [])
      .map((i) => i.value as ApprovalRequest)
      .find((v) => v?.kind === "approval");
    pending = request;
    if (!request || !opts.ask) break;
    const ok = await opts.ask(request);
    input = new Command({ resume: { decision: ok ? "approve" : "reject" } });
    pending = undefined;
  }
  // The run's background processes and its sandbox session end with it (finish, pause, stop); a
  // resume restarts those the ledger says were running (agent/nodes/restore-processes.ts).
  await rt.processes?.endRun().catch(() => {});
  await rt.sandbox.closeSession?.().catch(() => null);
  // With the database gone the state cannot be read back: the pause is said from what this process saw.
  const values = unavailable
    ? { step: lastStep }
    : await readValues(agent, threadId).catch((err: unknown) => {
        if (stateUnavailable(err)) return { step: lastStep };
        throw err;
      });
  let status: DriveResult["status"] = values.status ?? "running";
  if (unavailable) status = "state_unavailable";
  else if (failed) status = "failed";
  else if (paused) status = paused;
  else if (pending) status = "awaiting_approval";
  else if (status === "running") status = error?.startsWith("superstep") ? "max_steps" : "interrupted";
  // The run's log and telemetry: this process's part ends here (exported before the CLI exits).
  await endObservation(rt, threadId, status, values.step ?? 0).catch(() => {});
  return {
    thread: threadId,
    status,
    steps: values.step ?? 0,
    stateDir: rt.stateDir,
    ...(error ? { error } : {}),
    ...(pending ? { pending, error: "paused: a command needs approval" } : {}),
  };
}

/**
 * A run stopped as `no_progress` ended its graph (reflect → END): resuming it means going on, so
 * the state is set back to running as if reflect had routed on, and the prose streak starts over.
 */
async function resumeStopped(agent: ReturnType<typeof createCodingAgent>, config: { configurable: { thread_id: string } }): Promise<void> {
  const snap = await agent.getState(config);
  if ((snap.values as { status?: string } | undefined)?.status !== "no_progress" || snap.next.length) return;
  await agent.updateState(config, { status: "running", proseStreak: 0, endReason: null }, "reflect");
}

/** How many times one call of {@link driveRunReconnecting} waits for the state database and resumes. */
const MAX_RECONNECTS = 5;

/**
 * `driveRun`, riding out a PostgreSQL state that goes away for a while (a restart, a failover, a
 * network blip): when the run pauses as `state_unavailable`, waits up to `reconnectMs` for the
 * database to answer again and resumes the run from its last checkpoint (a command whose feedback
 * could not be recorded is then reported interrupted, as after a crash), at most MAX_RECONNECTS
 * times. A stop signal ends the wait; a database still away after it leaves the pause as it is.
 */
export async function driveRunReconnecting(
  rt: Runtime,
  threadId: string,
  goal: string | null,
  opts: DriveOptions & { reconnectMs: number; say?: (line: string) => void },
): Promise<DriveResult> {
  let result = await driveRun(rt, threadId, goal, opts);
  for (let n = 0; n < MAX_RECONNECTS && result.status === "state_unavailable" && opts.reconnectMs > 0 && rt.state.reconnects && !opts.signal?.aborted; n++) {
    const t0 = Date.now();
    opts.say?.(
      `${result.error?.split("; the run is paused")[0] ?? "the state database is unavailable"}; waiting up to ${Math.round(opts.reconnectMs / 1000)} s for it to answer again`,
    );
    if (!(await rt.state.answersAgain(opts.reconnectMs, opts.signal))) break;
    opts.say?.(`the state database answers again after ${((Date.now() - t0) / 1000).toFixed(1)} s; resuming ${threadId} from its last checkpoint`);
    result = await driveRun(rt, threadId, null, { ...opts, resume: undefined });
  }
  return result;
}

/** The values of the thread's newest checkpoint (what the result reports). */
async function readValues(agent: ReturnType<typeof createCodingAgent>, threadId: string): Promise<{ status?: RunStatus; step?: number }> {
  const snap = await agent.getState({ configurable: { thread_id: threadId } });
  return snap.values as { status?: RunStatus; step?: number };
}

/** The approval a thread is paused on, if any. */
export async function pendingApproval(rt: Runtime, threadId: string): Promise<ApprovalRequest | undefined> {
  const snap = await createCodingAgent({ runtime: rt }).getState({ configurable: { thread_id: threadId } });
  return snap.tasks
    .flatMap((t) => t.interrupts ?? [])
    .map((i) => i.value as ApprovalRequest)
    .find((v) => v?.kind === "approval");
}
