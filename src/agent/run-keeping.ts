import { isGraphBubbleUp, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { trackNode } from "./in-flight.js";
import { alignWorkspace } from "./nodes/align-workspace.js";
import type { NodeDeps, NodeFn } from "./nodes/deps.js";
import { threadIdOf } from "./nodes/deps.js";
import { errorMessage, ModelError } from "../errors.js";
import { currentRunner } from "../ledger/runs.js";
import { isStateUnavailable } from "../ledger/state-unavailable.js";
import type { Runtime } from "../runtime.js";
import type { TaskStateValue } from "../state.js";
import { observeNode } from "../telemetry/observer.js";
import { withRunTools } from "./tools/index.js";
import { mcpToolsOf } from "./tools/mcp.js";
import { projectToolsOf } from "./tools/project.js";

/** Thrown instead of starting a node once the runtime's graceful stop was asked for. */
export class RunStoppedError extends Error {
  constructor(node: string) {
    super(`stopped before ${node}: the runner was asked to stop between steps`);
    this.name = "RunStoppedError";
  }
}

/** Threads whose runner this process has recorded (one registry write per run and process). */
const recorded = new Set<string>();

async function noteRunner(rt: Runtime, thread: string): Promise<void> {
  const key = `${rt.stateLocation}\u0000${thread}`;
  if (recorded.has(key)) return;
  // Before plan registered the run there is no row: plan records the runner with it.
  if (await rt.runs.recordRunner(thread, currentRunner())) recorded.add(key);
}

/**
 * Wraps a node with what every entry point (CLI, script, LangGraph server) must get alike, because
 * it happens inside the graph: the workspace moved to the state's revision before the node runs
 * (time travel from any client), the runner recorded (so readers can tell running from stopped),
 * and a node that throws leaves a `run_status` (failed, or interrupted when the run was stopped)
 * in the ledger, so every reader shows why the run ended.
 */
export function keepRun(
  node: string,
  fn: NodeFn,
  deps: NodeDeps,
  rerun?: (rt: Runtime, state: TaskStateValue, config: LangGraphRunnableConfig) => Promise<boolean>,
): NodeFn {
  const kept = keepRunInner(node, fn, deps, rerun);
  // Every node is logged and traced here (src/telemetry): one place for every entry point.
  return async (state, config) => {
    const rt = await deps.resolve(config);
    const thread = config.configurable?.thread_id ?? config.executionInfo?.threadId;
    // The run's project tools are offered beside the built-in ones in every node (tools/index.ts).
    // MCP servers start on the first node of a runtime and stop when it closes (agent/tools/mcp.ts).
    const project = projectToolsOf(rt);
    const mcp = await mcpToolsOf(
      rt,
      project.map((t) => t.name),
    );
    return trackNode(
      rt,
      withRunTools(mcp.length ? [...project, ...mcp] : project, () =>
        observeNode(rt, thread ? String(thread) : undefined, node, state, () => kept(state, config)),
      ),
    );
  };
}

/** The nodes a step starts with: where a graceful stop takes effect. */
const STEP_STARTS = new Set(["plan", "context"]);

function keepRunInner(
  node: string,
  fn: NodeFn,
  deps: NodeDeps,
  rerun?: (rt: Runtime, state: TaskStateValue, config: LangGraphRunnableConfig) => Promise<boolean>,
): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    let current = state;
    let patch: Partial<TaskStateValue> = {};
    try {
      // A graceful stop (a worker handing the run back, `ledgerloop cancel`): the step in progress
      // (decide → act → observe, and the reflection or summary after it) ends as it would, and the
      // next one does not start. Stopping at any node boundary left a decided action unrun and
      // without an outcome when the stop came while the model answered.
      if (rt.stopBetweenSteps?.aborted && STEP_STARTS.has(node)) throw new RunStoppedError(node);
      const thread = threadIdOf(config);
      await noteRunner(rt, thread);
      const moved = await alignWorkspace(rt, state, config, node, rerun ? () => rerun(rt, state, config) : undefined);
      if (moved) {
        patch = { ledgerHead: moved.ledgerHead, workspaceRev: moved.workspaceRev };
        current = { ...state, ...patch };
      }
      const update = await fn(current, config);
      return { ...patch, ...update };
    } catch (err) {
      if (isGraphBubbleUp(err)) throw err; // an interrupt (approval) or a command: not a failure
      // A state database that went away pauses the run (resumable), never marks it failed: the write
      // below most likely fails too, and if it does land the run reads as interrupted.
      const stopped = config.signal?.aborted === true || err instanceof RunStoppedError || (rt.backend === "postgres" && isStateUnavailable(err));
      // A model that stays rate-limited or unreachable pauses the run: it is resumable, not failed.
      const code = err instanceof ModelError ? err.code : null;
      const paused =
        code === "MODEL_RATE_LIMITED"
          ? "rate_limited"
          : code === "BUDGET_EXHAUSTED"
            ? "budget_exhausted"
            : code === "MODEL_UNAVAILABLE" || code === "MODEL_UNREACHABLE"
              ? "model_unavailable"
              : null;
      await rt.ledger
        .append({
          threadId: threadIdOf(config),
          parentId: current.ledgerHead,
          type: "run_status",
          payload: { status: stopped ? "interrupted" : (paused ?? "failed"), steps: current.step, reason: `${node}: ${errorMessage(err)}`.slice(0, 2000) },
        })
        .catch(() => {});
      throw err;
    }
  };
}
