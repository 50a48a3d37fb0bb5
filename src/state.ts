import { z } from "zod";
import { withLangGraph } from "@langchain/langgraph/zod";
import { RunStatus, Subtask } from "./events.js";
import { RunSettings } from "./settings.js";

// The ledger event schemas live in events.ts (zod only); this module adds the graph state.
export * from "./events.js";

/**
 * The graph state. It is written in full at every superstep, so nothing in it may grow with the
 * length of the run: history lives in the ledger, and the state keeps references and counters.
 * The only arrays are the plan (bounded by the plan size) and this turn's pending action ids.
 */
const taskStateFields = {
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
  /** What the run says it did (the finish call's summary), for a client reading the output. */
  summary: z.string().nullable().default(null),
};

/**
 * Each channel starts at its zod default (LangGraph reads channel defaults from its zod registry,
 * not from `.default()`). A plain zod object rather than StateSchema: with StateSchema the LangGraph
 * server publishes no context schema, so Studio's form would not show the run settings.
 */
export const TaskState = z.object(
  Object.fromEntries(
    Object.entries(taskStateFields).map(([k, f]) => [k, withLangGraph(f as z.ZodType, { default: () => (f as z.ZodType).parse(undefined) })]),
  ) as typeof taskStateFields,
);
export type TaskStateValue = z.infer<typeof TaskState>;
export type TaskStateUpdate = Partial<TaskStateValue>;

/**
 * What a user gives a run (Studio's input form, `invoke` input): the goal; the counters and the rest
 * of the state are the run's own. The two references are there because LangGraph applies an update
 * of a run's first checkpoint (a rewind to the start) through the input schema.
 */
export const TaskInput = z.object({
  goal: taskStateFields.goal.describe("What the agent should do in the workspace (run settings go in the context)."),
  ledgerHead: taskStateFields.ledgerHead.optional().describe("Leave empty: set by time travel (ledgerloop rewind) to continue a ledger branch."),
  workspaceRev: taskStateFields.workspaceRev.optional().describe("Leave empty: set by time travel (ledgerloop rewind) to the workspace revision to continue from."),
});
export type TaskInput = z.infer<typeof TaskInput>;

/** What a run hands back: where it ended and what it did. */
export const TaskOutput = z.object({
  status: taskStateFields.status.describe("How the run ended (or where it stopped)."),
  summary: taskStateFields.summary.describe("The agent's own summary when it finished."),
  step: taskStateFields.step.describe("Decide steps taken."),
  subtasks: taskStateFields.subtasks.describe("The plan and each subtask's status."),
  workspaceRev: taskStateFields.workspaceRev.describe("Workspace revision the run ended on (ledgerloop diff / rewind)."),
  ledgerHead: taskStateFields.ledgerHead.describe("Newest ledger event of the run's branch (ledgerloop ledger --head)."),
});
export type TaskOutput = z.infer<typeof TaskOutput>;

/** The run settings a client may set per run (Studio's context form, the SDK's `context`). */
const CONTEXT_KEYS = [
  "workspace",
  "stateDir",
  "model",
  "maxSteps",
  "budgetTokens",
  "failureStreakLimit",
  "summarizeThresholdTokens",
  "sandbox",
  "approve",
  "allowNetwork",
  "retrieval",
  "vectors",
  "embedder",
  "history",
  "promptLayout",
  "maxCostUsd",
  "maxTokens",
] as const satisfies ReadonlyArray<keyof (typeof RunSettings)["shape"]>;

/** A settings field without its default (a context leaves unset what the runtime decides), same checks and description. */
function optionalSetting(f: z.ZodType): z.ZodOptional<z.ZodType> {
  const inner = f instanceof z.ZodDefault ? (f.unwrap() as z.ZodType) : f instanceof z.ZodOptional ? (f.unwrap() as z.ZodType) : f;
  const d = f.description ?? inner.description;
  return (d ? inner.describe(d) : inner).optional();
}

/**
 * Serializable run settings: they travel in the graph's context so that the LangGraph server can
 * pass them too. Derived from the one settings schema (same checks, same descriptions), every field
 * optional: an unset one takes the runtime's default. Non-serializable dependencies are closed over.
 */
export const RunContext = z.object(
  Object.fromEntries(CONTEXT_KEYS.map((k) => [k, optionalSetting(RunSettings.shape[k] as z.ZodType)])) as {
    [K in (typeof CONTEXT_KEYS)[number]]: z.ZodOptional<z.ZodType<Exclude<RunSettings[K], undefined>>>;
  },
);
export type RunContext = z.infer<typeof RunContext>;
