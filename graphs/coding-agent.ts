import { END, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { createActNode } from "../nodes/act.js";
import { createContextNode } from "../nodes/context.js";
import { createDecideNode } from "../nodes/decide.js";
import type { NodeDeps } from "../nodes/deps.js";
import { createObserveNode } from "../nodes/observe.js";
import { createPlanNode } from "../nodes/plan.js";
import { createReflectNode } from "../nodes/reflect.js";
import { createSummarizeNode } from "../nodes/summarize.js";
import { createRuntime, type Runtime } from "../src/runtime.js";
import { RunContext, TaskState, type TaskStateValue } from "../src/state.js";

export interface CodingAgentOptions {
  /** The runtime every node uses (scripts, CLI, tests). */
  runtime?: Runtime;
  /** Or a resolver building one per run from the graph config (LangGraph server). */
  resolve?: NodeDeps["resolve"];
  /** Defaults to the runtime's SQLite checkpointer; `false` leaves it to the caller (LangGraph server). */
  checkpointer?: BaseCheckpointSaver | false;
}

/** Terminal statuses go through reflect (lessons, final run_status) before the end. */
const routeStart = (s: TaskStateValue) => (s.needsPlan ? "plan" : "context");
const routeAfterDecide = (s: TaskStateValue) => (s.status !== "running" ? "reflect" : s.pendingActions.length ? "act" : "context");
const routeAfterObserve = (s: TaskStateValue) => s.next;
const routeAfterReflect = (s: TaskStateValue) => (s.status !== "running" ? END : "context");

/** Builds the coding-agent graph: plan → context → decide → act → observe → (reflect | summarize | plan | context). */
export function createCodingAgent(opts: CodingAgentOptions) {
  const resolve: NodeDeps["resolve"] =
    opts.resolve ??
    (async () => {
      if (!opts.runtime) throw new Error("createCodingAgent needs a runtime or a resolve function");
      return opts.runtime;
    });
  const deps: NodeDeps = { resolve };
  const builder = new StateGraph(TaskState, RunContext)
    .addNode("plan", createPlanNode(deps))
    .addNode("context", createContextNode(deps))
    .addNode("decide", createDecideNode(deps))
    .addNode("act", createActNode(deps))
    .addNode("observe", createObserveNode(deps))
    .addNode("reflect", createReflectNode(deps))
    .addNode("summarize", createSummarizeNode(deps))
    .addConditionalEdges(START, routeStart, ["plan", "context"])
    .addEdge("plan", "context")
    .addEdge("context", "decide")
    .addConditionalEdges("decide", routeAfterDecide, ["act", "context", "reflect"])
    .addEdge("act", "observe")
    .addConditionalEdges("observe", routeAfterObserve, ["context", "plan", "reflect", "summarize"])
    .addConditionalEdges("reflect", routeAfterReflect, ["context", END])
    .addEdge("summarize", "context");
  const checkpointer = opts.checkpointer === false ? undefined : (opts.checkpointer ?? opts.runtime?.checkpointer);
  return builder.compile({ checkpointer });
}

/** Supersteps a run of `maxSteps` decide turns may need (each turn is up to 5 nodes, plus plan/reflect). */
export function recursionLimitFor(maxSteps: number): number {
  return maxSteps * 6 + 20;
}

// The LangGraph server (Studio) imports `graph`: it brings its own checkpointer and passes run
// settings in the context; the ledger lives in the workspace's state directory as usual.
const serverRuntimes = new Map<string, Promise<Runtime>>();
async function serverResolve(config: LangGraphRunnableConfig): Promise<Runtime> {
  const ctx = RunContext.parse(config.context ?? {});
  const settings = {
    workspace: ctx.workspace ?? process.env.LEDGERLOOP_WORKSPACE ?? process.cwd(),
    stateDir: ctx.stateDir ?? process.env.LEDGERLOOP_STATE_DIR,
    model: ctx.model ?? process.env.LEDGERLOOP_MODEL ?? "openai:gpt-4o-mini",
    ...(ctx.maxSteps ? { maxSteps: ctx.maxSteps } : {}),
    ...(ctx.budgetTokens ? { budgetTokens: ctx.budgetTokens } : {}),
    ...(ctx.failureStreakLimit ? { failureStreakLimit: ctx.failureStreakLimit } : {}),
    ...(ctx.summarizeThresholdTokens ? { summarizeThresholdTokens: ctx.summarizeThresholdTokens } : {}),
    ...(ctx.sandbox ? { sandbox: ctx.sandbox } : {}),
    ...(ctx.approve ? { approve: ctx.approve } : {}),
    ...(ctx.allowNetwork !== undefined ? { allowNetwork: ctx.allowNetwork } : {}),
    ...(ctx.retrieval ? { retrieval: ctx.retrieval } : {}),
    ...(ctx.vectors ? { vectors: ctx.vectors } : {}),
    ...(ctx.embedder ? { embedder: ctx.embedder } : {}),
  };
  const key = JSON.stringify(settings);
  let rt = serverRuntimes.get(key);
  if (!rt) {
    rt = createRuntime(settings);
    serverRuntimes.set(key, rt);
    rt.catch(() => serverRuntimes.delete(key));
  }
  return rt;
}

/**
 * Closes the runtimes the exported `graph` opened (state database, Chroma server), for a host that
 * shuts down cleanly, and for tests: a process that is killed instead leaves its Chroma server to
 * the next ledgerloop process, which adopts it.
 */
export async function closeServerRuntimes(): Promise<void> {
  const all = [...serverRuntimes.values()];
  serverRuntimes.clear();
  for (const rt of await Promise.allSettled(all)) if (rt.status === "fulfilled") await rt.value.close();
}

/**
 * The graph for LangGraph Studio / the LangGraph dev server (`langgraph.json`). The server's default
 * recursion limit (25 supersteps) would stop a run after about four steps; this one allows 300.
 */
export const graph = createCodingAgent({ resolve: serverResolve, checkpointer: false }).withConfig({ recursionLimit: recursionLimitFor(300) });
