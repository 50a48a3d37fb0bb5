import type { LedgerEvent } from "../events.js";
import { spendOf, type Spend } from "../economics/spend.js";
import { createRuntime } from "../runtime.js";
import { ledgerEffects, type EffectsCheck } from "./effects.js";
import { ledgerFaults } from "./faults.js";
import { driveRun } from "../runs/drive.js";
import { assertNewThread, newThreadId, startThread } from "../runs/start.js";
import type { RunSettingsInput } from "../settings.js";
import type { TaskModel } from "./models.js";
import type { EvalTask } from "./task.js";

/** How one agent's run of a task went, whichever agent ran it. */
export interface AgentOutcome {
  /** The run's end status (a DriveStatus for ledgerloop; finished, max_steps, no_tool_call, … for the baseline). */
  status: string;
  steps: number;
  spend: Spend;
  thread?: string;
  error?: string;
  /** Steps that were refused, rejected or failed as tools (faults.ts). */
  faults?: string[];
  /** Ledgerloop runs: what the ledger says was done twice or lost (effects.ts). */
  effects?: EffectsCheck;
  /** `--kill-every`: how many times the run was killed and resumed. */
  kills?: number;
}

/** Where and how one agent runs one task. */
export interface AgentRunInput {
  task: EvalTask;
  model: TaskModel;
  /** The fresh copy of the task's workspace. */
  workspace: string;
  /** Where the run's state lives (outside the workspace, so the hidden tests never land in it). */
  stateDir: string;
  /** Run settings over the task's limits (sandbox, approve, tool-call format, retrieval…). */
  settings: Partial<RunSettingsInput>;
  signal?: AbortSignal;
}

/** The task's limits and the eval's settings as run settings (both agents read them). */
export function evalRunSettings(input: AgentRunInput): RunSettingsInput {
  const { task, settings } = input;
  return {
    approve: "deny",
    ...settings,
    workspace: input.workspace,
    stateDir: input.stateDir,
    model: input.model.spec,
    maxSteps: settings.maxSteps ?? task.limits.maxSteps,
    ...(task.limits.maxCostUsd !== undefined && settings.maxCostUsd === undefined ? { maxCostUsd: task.limits.maxCostUsd } : {}),
  };
}

/** The signal that stops a run at the task's time limit, or at the eval's own stop. */
export function timeLimitSignal(task: EvalTask, outer?: AbortSignal): AbortSignal {
  const limit = AbortSignal.timeout(task.limits.timeoutSec * 1000);
  return outer ? AbortSignal.any([outer, limit]) : limit;
}

/** How a ledgerloop run of a task starts: a new thread (the default), or a resume of one. */
export interface LedgerloopRunMode {
  thread?: string;
  /** Continue `thread` from its last checkpoint (after a kill) instead of starting it. */
  resume?: boolean;
  /** The signal that ends the run, instead of the task's time limit from now. */
  signal?: AbortSignal;
  /** Told when the run's graph starts (the runtime is open, the lease held). */
  onDriving?: () => void;
  /** Killed and resumed before: steps interrupted by the kills are not faults. */
  killed?: boolean;
}

/**
 * Runs the task through ledgerloop exactly as `ledgerloop run` does (runtime, new thread, driveRun)
 * or resumes it as `ledgerloop resume` does, and reads what it spent from the ledger's model_call events.
 */
export async function runLedgerloop(input: AgentRunInput, mode: LedgerloopRunMode = {}): Promise<AgentOutcome> {
  const thread = mode.thread ?? newThreadId();
  const rt = await createRuntime(evalRunSettings(input), {
    ...(input.model.instance ? { model: input.model.instance } : {}),
    lease: { command: "eval", thread },
    newRun: !mode.resume,
  });
  try {
    if (!mode.resume) {
      startThread(rt, input.task.goal, thread);
      await assertNewThread(rt, thread);
    }
    mode.onDriving?.();
    const signal = mode.signal ?? timeLimitSignal(input.task, input.signal);
    const r = await driveRun(rt, thread, mode.resume ? null : input.task.goal, { signal, origin: "script" });
    const calls = (await rt.ledger.list(thread, { types: ["model_call"] })) as LedgerEvent<"model_call">[];
    const faults = await ledgerFaults(rt.ledger, thread, { skipInterrupted: mode.killed ?? false });
    const effects = await ledgerEffects(rt.ledger, thread, { finished: r.status === "finished" });
    return { status: r.status, steps: r.steps, spend: spendOf(calls), thread, faults, effects, ...(r.error ? { error: r.error } : {}) };
  } finally {
    await rt.close();
  }
}
