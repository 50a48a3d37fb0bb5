import { z } from "zod";
import { RunStatus, Subtask } from "./events.js";

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
  /** Consecutive decide answers without a tool call (prose, empty, null). */
  proseStreak: z.number().int().default(0),
  /** Consecutive steps that made the same calls with the same results, and the last step's fingerprint. */
  repeatStreak: z.number().int().default(0),
  lastStepSig: z.string().nullable().default(null),
  /** A finish was refused once because the last test run failed; the next finish is taken. */
  finishChallenged: z.boolean().default(false),
  /** Why the run stopped, when its status alone does not say (recorded in its run_status). */
  endReason: z.string().nullable().default(null),
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
  reflectTrigger: z.enum(["subtask_completed", "failure_streak", "end_of_run", "repetition"]).nullable().default(null),
  /** Where observe routes next; computed there because it knows the run's thresholds. */
  next: z.enum(["context", "plan", "reflect", "summarize"]).default("context"),
  /** Workspace revision this state corresponds to (time travel). */
  workspaceRev: z.string().nullable().default(null),
  /** What the run says it did (the finish call's summary), for a client reading the output. */
  summary: z.string().nullable().default(null),
};

/**
 * The graph state as a plain zod object, so that importing the schemas loads zod only. LangGraph
 * reads each channel's default from its own registry rather than from `.default()`: the agent
 * registers them there before it builds the graph (agent/state-channels.ts). Not StateSchema: with
 * StateSchema the LangGraph server publishes no context schema, so Studio's form would not show the
 * run settings.
 */
export const TaskState = z.object(taskStateFields);
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
  workspaceRev: taskStateFields.workspaceRev
    .optional()
    .describe("Leave empty: set by time travel (ledgerloop rewind) to the workspace revision to continue from."),
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

// The graph's context schema derives from the one settings schema (src/settings.ts).
export { RunContext } from "./settings.js";
