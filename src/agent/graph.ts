import { END, START, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { createActNode } from "./nodes/act.js";
import { createContextNode } from "./nodes/context.js";
import { createDecideNode } from "./nodes/decide.js";
import type { NodeDeps } from "./nodes/deps.js";
import { createObserveNode } from "./nodes/observe.js";
import { createPlanNode } from "./nodes/plan.js";
import { createReflectNode } from "./nodes/reflect.js";
import { createSummarizeNode } from "./nodes/summarize.js";
import type { RunOrigin } from "../ledger/runs.js";
import { ConfigError } from "../errors.js";
import { chromaServersDieWithThisProcess, releaseChromaServersSync } from "../retrieval/chroma-server.js";
import { createRuntime, type Runtime } from "../runtime.js";
import { RunContext } from "../settings.js";
import { TaskInput, TaskOutput, TaskState, type TaskStateValue } from "../state.js";
import { keepRun } from "./run-keeping.js";
import { registerStateChannels } from "./state-channels.js";
import { actRerun } from "./nodes/act.js";

export interface CodingAgentOptions {
  /** The runtime every node uses (scripts, CLI, tests). */
  runtime?: Runtime;
  /** Or a resolver building one per run from the graph config (LangGraph server). */
  resolve?: NodeDeps["resolve"];
  /** Defaults to the runtime's SQLite checkpointer; `false` leaves it to the caller (LangGraph server). */
  checkpointer?: BaseCheckpointSaver | false;
  /** What starts runs of this graph, recorded in the run registry: default "script" ("server" for the exported `graph`). */
  origin?: RunOrigin;
}

/** Terminal statuses go through reflect (lessons, final run_status) before the end. */
const routeStart = (s: TaskStateValue) => (s.needsPlan ? "plan" : "context");
const routeAfterDecide = (s: TaskStateValue) => (s.status !== "running" ? "reflect" : s.pendingActions.length ? "act" : "context");
const routeAfterObserve = (s: TaskStateValue) => s.next;
const routeAfterReflect = (s: TaskStateValue) => (s.status !== "running" ? END : "context");

/** Builds the coding-agent graph: plan → context → decide → act → observe → (reflect | summarize | plan | context). */
export function createCodingAgent(opts: CodingAgentOptions) {
  // The tokenizer loads on a worker thread while the run starts (createRuntime). Nodes do not wait
  // for it here: the plan node counts nothing, the context node awaits it before its first count,
  // and any other count waits for the load on its own.
  const resolve: NodeDeps["resolve"] =
    opts.resolve ??
    (async () => {
      if (!opts.runtime) throw new Error("createCodingAgent needs a runtime or a resolve function");
      return opts.runtime;
    });
  const own = opts.checkpointer === undefined || (opts.runtime !== undefined && opts.checkpointer === opts.runtime.checkpointer);
  const deps: NodeDeps = { resolve, origin: opts.origin ?? "script", checkpoints: own ? "state-db" : "external" };
  // Input: the goal (run settings go in the context); output: how the run ended. The state itself
  // (counters, references) is the run's own and is not what a user fills in.
  registerStateChannels();
  const builder = new StateGraph(TaskState, { input: TaskInput, output: TaskOutput, context: RunContext })
    .addNode("plan", keepRun("plan", createPlanNode(deps), deps))
    .addNode("context", keepRun("context", createContextNode(deps), deps))
    .addNode("decide", keepRun("decide", createDecideNode(deps), deps))
    .addNode("act", keepRun("act", createActNode(deps), deps, actRerun))
    .addNode("observe", keepRun("observe", createObserveNode(deps), deps))
    .addNode("reflect", keepRun("reflect", createReflectNode(deps), deps))
    .addNode("summarize", keepRun("summarize", createSummarizeNode(deps), deps))
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
  const parsed = RunContext.safeParse(config.context ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new ConfigError(`invalid run setting in the context: ${i.path.join(".") || "(context)"}: ${i.message}`);
  }
  // Unset fields are left out, so the settings schema's defaults apply.
  const given = Object.fromEntries(Object.entries(parsed.data).filter(([, v]) => v !== undefined));
  const settings = {
    ...given,
    workspace: parsed.data.workspace ?? process.env.LEDGERLOOP_WORKSPACE ?? process.cwd(),
    stateDir: parsed.data.stateDir ?? process.env.LEDGERLOOP_STATE_DIR,
    model: parsed.data.model ?? process.env.LEDGERLOOP_MODEL ?? "openai:gpt-4o-mini",
  };
  const key = JSON.stringify(settings);
  let rt = serverRuntimes.get(key);
  if (!rt) {
    stopWithHost();
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
 * The host (LangGraph dev server) may be stopped with a signal, which ends the process without
 * running exit handlers: the Chroma server this process started would be left running. On SIGTERM,
 * SIGINT or SIGHUP the runtimes are closed first (which stops Chroma when no other process uses it);
 * then, unless the host handles the signal itself, the signal is raised again for its default effect.
 */
let stopHooked = false;
function stopWithHost(): void {
  if (stopHooked) return;
  stopHooked = true;
  // Even a SIGKILL of the host must not leave its Chroma servers behind.
  chromaServersDieWithThisProcess();
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    process.once(sig, () => {
      // Synchronously first: a dev server's watcher (tsx watch) SIGKILLs its child soon after.
      releaseChromaServersSync();
      void closeServerRuntimes()
        .catch(() => {})
        .finally(() => {
          if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
        });
    });
  }
}

/**
 * The graph for LangGraph Studio / the LangGraph dev server (`langgraph.json`). The server's default
 * recursion limit (25 supersteps) would stop a run after about four steps; this one allows 300.
 */
export const graph = createCodingAgent({ resolve: serverResolve, checkpointer: false, origin: "server" }).withConfig({
  recursionLimit: recursionLimitFor(300),
});
