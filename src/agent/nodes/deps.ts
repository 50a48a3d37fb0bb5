import { randomUUID } from "node:crypto";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { costOf, priceOf } from "../../economics/prices.js";
import { ModelError } from "../../errors.js";
import { BranchWriter } from "../../ledger/writer.js";
import { guardToolCalls } from "../../models/args-guard.js";
import type { ChatMessage, ModelResponse, ToolSpecLike } from "../../models/port.js";
import type { CheckpointHome, RunOrigin } from "../../ledger/runs.js";
import type { Runtime } from "../../runtime.js";
import { observeModelCall } from "../../telemetry/observer.js";
import type { LedgerEvent, ModelNode, TaskStateValue } from "../../state.js";

/** What every node factory receives: a way to get the run's Runtime from the graph config. */
export interface NodeDeps {
  resolve(config: LangGraphRunnableConfig): Promise<Runtime>;
  /** What started runs of this graph (recorded in the run registry by plan); default "script". */
  origin?: RunOrigin;
  /** Where this graph's checkpoints live (the state database, or a checkpointer the caller brought). */
  checkpoints?: CheckpointHome;
}

/** A node: reads the small state, writes the ledger, returns a partial state update. */
export type NodeFn<U = Partial<TaskStateValue>> = (state: TaskStateValue, config: LangGraphRunnableConfig) => Promise<U>;

/** The thread (run) id of this graph run. */
export function threadIdOf(config: LangGraphRunnableConfig): string {
  const id = config.configurable?.thread_id ?? config.executionInfo?.threadId;
  if (!id) throw new Error("ledgerloop nodes need a thread_id in the config");
  return String(id);
}

/** A writer on the run's branch, keyed by this task so that a re-run after a crash finds its own writes. */
export function branchWriter(rt: Runtime, state: TaskStateValue, config: LangGraphRunnableConfig, node: string): BranchWriter {
  const info = config.executionInfo;
  // Outside a graph run (unit tests calling a node directly) there is no task id to be stable on.
  const scope = info?.taskId ? `${node}:${info.taskId}` : `${node}:${randomUUID()}`;
  return new BranchWriter(rt.ledger, threadIdOf(config), state.ledgerHead, scope, info?.checkpointId ?? null);
}

/** What every model call of a thread has cost so far (abandoned branches included). */
export function spentBy(rt: Runtime, thread: string): Promise<{ cost: number; tokens: number }> {
  // Through the ledger port: on PostgreSQL the events are not in the local database.
  return rt.ledger.spend(thread);
}

/** Where in the run a model call happens: the step it serves and the subtask then in progress. */
export function callSite(state: TaskStateValue, step = state.step): { step: number; subtask?: string } {
  const current = state.subtasks.find((s) => s.status === "in_progress") ?? state.subtasks.find((s) => s.status === "pending");
  return { step, subtask: current?.id };
}

/**
 * " · 1,204 tok $0.0003 (run $0.0121)" for a progress line: what this call cost and the run so far;
 * empty for a model that reports no usage (the scripted one).
 */
export async function spendNote(rt: Runtime, thread: string, event: LedgerEvent<"model_call"> | null): Promise<string> {
  const u = event?.payload.usage;
  if (!u || (!u.inputTokens && !u.outputTokens)) return "";
  const tokens = (u.inputTokens ?? 0) + (u.outputTokens ?? 0);
  const run = await spentBy(rt, thread);
  const cost = event.payload.costUsd ?? 0;
  return ` · ${tokens.toLocaleString("en-US")} tok${cost || run.cost ? ` $${cost.toFixed(4)} (run $${run.cost.toFixed(4)})` : ` (run ${run.tokens.toLocaleString("en-US")} tok)`}`;
}

/**
 * Stops before a model call once the run has spent its budget (--max-cost, --max-tokens): the node
 * throws, so the run ends at the checkpoint before it and `resume` with a higher limit goes on from
 * there without repeating anything. Counts every call of the thread, abandoned branches included:
 * what was spent is spent.
 */
async function assertWithinBudget(rt: Runtime, thread: string): Promise<void> {
  const { maxCostUsd, maxTokens } = rt.settings;
  if (maxCostUsd === undefined && maxTokens === undefined) return;
  const spent = await spentBy(rt, thread);
  const over =
    maxCostUsd !== undefined && spent.cost >= maxCostUsd
      ? `the run has cost $${spent.cost.toFixed(4)} of its $${maxCostUsd} limit (--max-cost)`
      : maxTokens !== undefined && spent.tokens >= maxTokens
        ? `the run has used ${spent.tokens} tokens of its ${maxTokens} limit (--max-tokens)`
        : null;
  if (over) throw new ModelError("BUDGET_EXHAUSTED", `${over}; resume with a higher limit to go on`);
}

/**
 * Calls the model once per node run: a re-run after a crash reuses the recorded response instead of
 * asking again (the answer may differ, and the first one may already have been acted on).
 */
export async function callModel(
  rt: Runtime,
  w: BranchWriter,
  node: ModelNode,
  turn: number,
  messages: ChatMessage[],
  tools: ToolSpecLike[],
  opts: { promptRef?: string; signal?: AbortSignal; key?: string; at?: { step: number; subtask?: string } } = {},
): Promise<{ response: ModelResponse; event: LedgerEvent<"model_call"> | null }> {
  const key = opts.key ?? "model";
  const previous = await w.find<"model_call">(key);
  if (previous) {
    w.head = previous.id;
    return { response: { content: previous.payload.content, toolCalls: previous.payload.toolCalls }, event: previous };
  }
  await assertWithinBudget(rt, w.threadId);
  // Planning, summarising and reflecting may go to a cheaper model; deciding never does.
  const model = node === "decide" ? rt.model : (rt.summaryModel ?? rt.model);
  const started = performance.now();
  const answer = await observeModelCall(
    { node, turn, model: model.name },
    () => model.invoke({ node, turn, messages: rt.redactor.redactDeep(messages), tools, signal: opts.signal }),
    (a) => costOf(a.usage, priceOf(model.name, rt.prices)),
  );
  if (answer.exhausted) return { response: answer, event: null };
  // The entry point of model output: over-deep or huge arguments are cut here, before anything
  // recursive (redactor, ledger, checkpoints) walks them.
  const response = { ...answer, toolCalls: guardToolCalls(answer.toolCalls, { truncated: answer.truncated }) };
  const event = await w.append(key, "model_call", {
    node,
    turn,
    ...opts.at,
    model: model.name,
    promptRef: opts.promptRef,
    content: response.content,
    ...(response.reasoning ? { reasoning: response.reasoning } : {}),
    toolCalls: response.toolCalls,
    usage: response.usage,
    costUsd: costOf(response.usage, priceOf(model.name, rt.prices)),
    durationMs: Math.round(performance.now() - started),
  });
  return { response, event };
}
