import { GraphRecursionError } from "@langchain/langgraph";
import { createCodingAgent, recursionLimitFor } from "../../graphs/coding-agent.js";
import { ModelError, errorMessage } from "../errors.js";
import type { Runtime } from "../runtime.js";
import type { RunStatus } from "../state.js";

export interface DriveResult {
  thread: string;
  status: RunStatus | "failed";
  steps: number;
  stateDir: string;
  error?: string;
}

/**
 * Runs (or resumes, with `goal` null) a thread to its end, checkpointing every superstep
 * synchronously. Stopping early (signal, model failure) leaves the last checkpoint resumable.
 */
export async function driveRun(rt: Runtime, threadId: string, goal: string | null, signal?: AbortSignal): Promise<DriveResult> {
  const agent = createCodingAgent({ runtime: rt });
  const config = {
    configurable: { thread_id: threadId },
    context: {
      workspace: rt.workspace,
      stateDir: rt.stateDir,
      model: rt.model.name,
      maxSteps: rt.settings.maxSteps,
      budgetTokens: rt.settings.budgetTokens,
      failureStreakLimit: rt.settings.failureStreakLimit,
      summarizeThresholdTokens: rt.settings.summarizeThresholdTokens,
    },
    recursionLimit: recursionLimitFor(rt.settings.maxSteps),
    durability: "sync" as const,
    signal,
  };
  let error: string | undefined;
  let failed = false;
  try {
    const stream = await agent.stream(goal === null ? null : { goal }, { ...config, streamMode: "updates" });
    for await (const _ of stream) {
      // Progress is reported by the nodes themselves; the stream only drives the run.
    }
  } catch (err) {
    if (signal?.aborted) {
      error = "interrupted by signal";
    } else if (err instanceof GraphRecursionError) {
      error = `superstep limit reached (${config.recursionLimit})`;
    } else {
      failed = true;
      error = errorMessage(err);
      if (!(err instanceof ModelError)) error = `${(err as Error)?.name ?? "Error"}: ${error}`;
    }
  }
  const snap = await agent.getState({ configurable: { thread_id: threadId } });
  const values = snap.values as { status?: RunStatus; step?: number };
  let status: DriveResult["status"] = values.status ?? "running";
  if (failed) status = "failed";
  else if (status === "running") status = error?.startsWith("superstep") ? "max_steps" : "interrupted";
  return { thread: threadId, status, steps: values.step ?? 0, stateDir: rt.stateDir, ...(error ? { error } : {}) };
}
