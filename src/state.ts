import { z } from "zod";
import { StateSchema } from "@langchain/langgraph";
import { RunStatus, Subtask } from "./events.js";

// The ledger event schemas live in events.ts (zod only); this module adds the graph state.
export * from "./events.js";

/**
 * The graph state. It is written in full at every superstep, so nothing in it may grow with the
 * length of the run: history lives in the ledger, and the state keeps references and counters.
 * The only arrays are the plan (bounded by the plan size) and this turn's pending action ids.
 */
export const TaskState = new StateSchema({
  goal: z.string().default(""),
  status: RunStatus.default("running"),
  /** Number of decide turns taken so far. */
  step: z.number().int().default(0),
  subtasks: z.array(Subtask).default(() => []),
  /** Id of the newest ledger event on this run's branch. */
  ledgerHead: z.string().nullable().default(null),
  /** `agent_action` event ids chosen by the last decide and not yet observed. */
  pendingActions: z.array(z.string()).default(() => []),
  /** `context_built` event the next decide reads its prompt from. */
  contextId: z.string().nullable().default(null),
  /** Consecutive steps whose actions all failed. */
  failureStreak: z.number().int().default(0),
  /** Set when the plan must be (re)made before the next context. */
  needsPlan: z.boolean().default(true),
  /** Tokens of history older than the recent window and not yet folded into a summary. */
  unsummarizedTokens: z.number().int().default(0),
  /** Tokens of each turn still inside the recent window (at most `recentTurns` entries). */
  windowTokens: z.array(z.number().int()).default(() => []),
  /** Highest ledger seq covered by a summary on this branch. */
  summarizedThroughSeq: z.number().int().default(0),
  /** How many model turns each node has consumed; a scripted model replays by these indexes. */
  modelTurns: z
    .object({
      plan: z.number().int(),
      decide: z.number().int(),
      reflect: z.number().int(),
      summarize: z.number().int(),
    })
    .default(() => ({ plan: 0, decide: 0, reflect: 0, summarize: 0 })),
  /** Step of the last reflection. */
  reflectedAtStep: z.number().int().default(-1),
  /** Why observe routed to reflect (read by reflect). */
  reflectTrigger: z.enum(["subtask_completed", "failure_streak", "end_of_run"]).nullable().default(null),
  /** Where observe routes next; computed there because it knows the run's thresholds. */
  next: z.enum(["context", "plan", "reflect", "summarize"]).default("context"),
  /** Workspace revision this state corresponds to (time travel). */
  workspaceRev: z.string().nullable().default(null),
});
export type TaskStateValue = typeof TaskState.State;
export type TaskStateUpdate = typeof TaskState.Update;

/**
 * Serializable run settings: they travel in the graph's context so that the LangGraph server can
 * pass them too. Non-serializable dependencies (ledger, sandbox, model) are closed over instead.
 */
export const RunContext = z.object({
  workspace: z.string().optional(),
  stateDir: z.string().optional(),
  model: z.string().optional(),
  maxSteps: z.number().int().positive().optional(),
  /** Prompt budget in tokens for the context node. */
  budgetTokens: z.number().int().positive().optional(),
  /** Consecutive failed steps that trigger a reflection. */
  failureStreakLimit: z.number().int().positive().optional(),
  /** Unsummarised history (tokens) that triggers the summarize node. */
  summarizeThresholdTokens: z.number().int().positive().optional(),
  /** Isolation of commands (default: the strongest available). */
  sandbox: z.enum(["auto", "bwrap", "unshare", "none"]).optional(),
  /** Commands the policy wants approved: pause and ask (an interrupt Studio shows), approve, or refuse. */
  approve: z.enum(["ask", "auto", "deny"]).optional(),
  allowNetwork: z.boolean().optional(),
  retrieval: z.enum(["hybrid", "lexical"]).optional(),
  vectors: z.enum(["chroma", "off"]).optional(),
  embedder: z.string().min(1).optional(),
});
export type RunContext = z.infer<typeof RunContext>;
