import { z } from "zod";

// The ledger event schemas and the small enums they share with the graph state. Kept apart from
// TaskState (which needs LangGraph) so that reading a ledger loads zod and SQLite only.

export { SCHEMA_VERSION } from "./event-version.js";

export const SubtaskStatus = z.enum(["pending", "in_progress", "completed", "blocked"]);
export type SubtaskStatus = z.infer<typeof SubtaskStatus>;

export const Subtask = z.object({
  id: z.string().min(1).max(64),
  description: z.string().min(1).max(2000),
  status: SubtaskStatus,
  /** Ledger event that justified the last status change (a passing test run, a finish, a plan update). */
  evidence: z.string().optional(),
});
export type Subtask = z.infer<typeof Subtask>;

export const RunStatus = z.enum([
  "running",
  "finished",
  "failed",
  "script_exhausted",
  "max_steps",
  "interrupted",
  /** Paused by an approval interrupt; recorded before the pause so any client's run shows it. */
  "awaiting_approval",
  /** Stopped cleanly: the model kept answering 429 after every retry; resume later. */
  "rate_limited",
  /** Stopped cleanly: the model endpoint was down, overloaded or unreachable after every retry. */
  "model_unavailable",
  /** Stopped cleanly at --max-cost / --max-tokens; resume with a higher limit. */
  "budget_exhausted",
  /** Stopped: the model answered without a tool call `proseStreakLimit` times in a row; resumable. */
  "no_progress",
]);
export type RunStatus = z.infer<typeof RunStatus>;

export const ModelNode = z.enum(["plan", "decide", "reflect", "summarize"]);
export type ModelNode = z.infer<typeof ModelNode>;

// ---------------------------------------------------------------------------------------------
// Ledger events
// ---------------------------------------------------------------------------------------------

export const ToolCallRecord = z.object({
  id: z.string(),
  name: z.string(),
  /** Parsed arguments when they were valid JSON, otherwise the raw text under `argsText`. */
  args: z.unknown().optional(),
  argsText: z.string().optional(),
  /** Set when the arguments broke the size or depth limits: `argsText` is then only a preview. */
  refused: z.string().optional(),
});
export type ToolCallRecord = z.infer<typeof ToolCallRecord>;

export const FileChanges = z.object({
  created: z.array(z.string()),
  modified: z.array(z.string()),
  deleted: z.array(z.string()),
});
export type FileChanges = z.infer<typeof FileChanges>;

export const TestCounts = z.object({
  framework: z.string(),
  passed: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
  failedTests: z.array(z.string()),
});
export type TestCounts = z.infer<typeof TestCounts>;

export const TaskSpecPayload = z.object({
  goal: z.string(),
  subtasks: z.array(Subtask),
  source: z.enum(["model", "deterministic", "user"]),
  memories: z.array(z.string()).optional(),
  /** The workspace revision the run started from. */
  revision: z.string().nullable().optional(),
});
export const PlanUpdatePayload = z.object({
  subtasks: z.array(Subtask),
  reason: z.string(),
  evidence: z.string().optional(),
});
export const AgentActionPayload = z.object({
  tool: z.string(),
  args: z.unknown().optional(),
  argsText: z.string().optional(),
  callId: z.string(),
  step: z.number().int(),
  /** Stable per decision; a retried or resumed run finds the action by it instead of re-deciding. */
  idempotencyKey: z.string(),
  /** Safe to run again after a crash mid-run (reads, writes of known content). */
  idempotent: z.boolean(),
  /** Set when the call was rejected before running (unknown tool, bad JSON, schema failure). */
  invalid: z.string().optional(),
});
/**
 * A background process of the run (start_process & co.): started, ready, exited on its own, stopped,
 * restarted after a resume, or failed to start/restart. The ledger's start/stop/exit events say
 * which processes were running at any event: what a resume restarts.
 */
export const ProcessEventPayload = z.object({
  kind: z.enum(["start", "ready", "exit", "stop", "restart", "failed"]),
  name: z.string(),
  command: z.string(),
  pid: z.number().int().nullable().optional(),
  ports: z.array(z.number().int()).optional(),
  readyPort: z.number().int().optional(),
  readyPattern: z.string().optional(),
  readyTimeoutMs: z.number().int().optional(),
  /** Start to ready, ms. */
  readyMs: z.number().optional(),
  exitCode: z.number().int().nullable().optional(),
  signal: z.string().nullable().optional(),
  reason: z.string().optional(),
  /** The last output lines (exit, stop, failure). */
  lastLines: z.array(z.string()).optional(),
});
export type ProcessEventPayload = z.infer<typeof ProcessEventPayload>;

/** Side effects on the run that a tool asks for; the runtime turns them into ledger events. */
export const ActionEffect = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("decision"), text: z.string() }),
  z.object({ kind: z.literal("plan"), subtasks: z.array(Subtask) }),
  z.object({ kind: z.literal("finish"), summary: z.string() }),
  z.object({ kind: z.literal("process"), event: ProcessEventPayload }),
]);
export type ActionEffect = z.infer<typeof ActionEffect>;

export const FeedbackStatus = z.enum(["ok", "error", "rejected", "interrupted"]);
/** The sandbox's resource limits, by the name a command's feedback gives the one that stopped it. */
export const CommandLimit = z.enum(["memory", "cpu", "pids", "file_size", "timeout", "output"]);
export type CommandLimit = z.infer<typeof CommandLimit>;
/**
 * What ended a command that did not end by itself: a limit of the sandbox, the run being stopped,
 * the end of the run's sandbox session, or a SIGKILL from outside (its cgroups rule every limit out).
 */
export const StoppedBy = z.enum(["limit", "run_stopped", "session_ended", "outside"]);
export type StoppedBy = z.infer<typeof StoppedBy>;
/** What a command used, where the machine can measure it (its cgroups); null where it cannot. */
export const CommandUsage = z.object({ cpuMs: z.number().nullable(), memoryPeakBytes: z.number().nullable() });
export type CommandUsage = z.infer<typeof CommandUsage>;
export const EnvironmentFeedbackPayload = z.object({
  tool: z.string(),
  status: FeedbackStatus,
  /** What the model is shown as the tool result (already capped). */
  output: z.string(),
  exitCode: z.number().int().nullable().optional(),
  signal: z.string().nullable().optional(),
  durationMs: z.number(),
  stdout: z.string().optional(),
  stderr: z.string().optional(),
  truncated: z.boolean().optional(),
  filesChanged: FileChanges.optional(),
  tests: TestCounts.nullable().optional(),
  errorClass: z.string().nullable().optional(),
  sandbox: z.string().optional(),
  command: z.string().optional(),
  /** Commands only: what stopped it, when something did, and the limit when that was a limit. */
  stoppedBy: StoppedBy.nullable().optional(),
  limit: CommandLimit.nullable().optional(),
  usage: CommandUsage.optional(),
  effects: z.array(ActionEffect).optional(),
  /**
   * The workspace revision right after this action. Recorded per action only where another machine
   * may continue the run (a PostgreSQL state): a worker that takes over materialises the newest
   * revision its ledger names, so an action recorded as done has its effects in the files.
   */
  revision: z.string().optional(),
});
export const WorkspaceSnapshotPayload = z.object({
  kind: z.enum(["light", "deep"]),
  fileCount: z.number().int().optional(),
  changed: FileChanges,
  /** File-tree summary, when the set of files changed (or at a deep snapshot). */
  tree: z.string().optional(),
  /** The workspace revision this snapshot describes. */
  revision: z.string().nullable().optional(),
  /** Deep snapshots only: why it was taken, and what a model needs to know about the project. */
  milestone: z.string().optional(),
  packages: z.array(z.string()).optional(),
  envNames: z.array(z.string()).optional(),
  symbols: z.array(z.string()).optional(),
  lastTests: TestCounts.nullable().optional(),
});
export const DecisionPayload = z.object({ text: z.string(), step: z.number().int() });
export const ContextItem = z.object({
  section: z.string(),
  source: z.string(),
  tokens: z.number().int(),
  score: z.number().optional(),
  note: z.string().optional(),
});
export type ContextItem = z.infer<typeof ContextItem>;
/** How a decide prompt is laid out: stable prefix, append-only turn log, volatile last message. */
export const PromptLayout = z.object({
  kind: z.enum(["cache", "legacy"]),
  /** "compaction": written from scratch (the prefix too); "extension": the previous prompt plus new turns. */
  built: z.enum(["compaction", "extension"]),
  /** Why it was built this way (start, summary, budget, …). */
  reason: z.string(),
  /** Messages of the stable prefix (system and the pinned user message). */
  prefixMessages: z.number().int(),
  /** Seq of the oldest and newest decide call shown in the turn log (0 when none). */
  logFromSeq: z.number().int(),
  logThroughSeq: z.number().int(),
  /** Summary events on the branch when the prefix was written: a new one means compaction. */
  summaries: z.number().int(),
  budget: z.number().int(),
});
export type PromptLayout = z.infer<typeof PromptLayout>;
/**
 * The history search a prompt used, recorded with it: the next prompts of the same 5-step window
 * that ask the same thing reuse these hits, read from here, so a resumed run or a fork in a new
 * process recalls what the original did (see agent/nodes/context.ts).
 */
export const RecallRecord = z.object({
  /** floor(step / 5) of the step whose prompt searched. */
  window: z.number().int(),
  k: z.number().int(),
  /** sha256 of the query, redacted (the query may quote a secret). */
  queryHash: z.string(),
  hits: z.array(z.object({ eventId: z.string(), score: z.number(), note: z.string().optional() })),
});
export type RecallRecord = z.infer<typeof RecallRecord>;
export const ContextBuiltPayload = z.object({
  step: z.number().int(),
  /** Blob holding the exact messages sent to the model. */
  promptRef: z.string(),
  tokens: z.number().int(),
  budget: z.number().int(),
  items: z.array(ContextItem),
  omitted: z.array(ContextItem),
  layout: PromptLayout.optional(),
  /** Leading tokens equal to the previous decide prompt's, over this prompt's tokens (messages only). */
  prefixReuse: z.object({ reusedTokens: z.number().int(), tokens: z.number().int(), ratio: z.number() }).optional(),
  recall: RecallRecord.optional(),
});
export const ModelCallPayload = z.object({
  node: ModelNode,
  turn: z.number().int(),
  /** The step the call serves (decide: the step it starts) and the subtask then in progress: cost per step and subtask. */
  step: z.number().int().optional(),
  subtask: z.string().optional(),
  model: z.string(),
  promptRef: z.string().optional(),
  content: z.string(),
  /** What the model reasoned before answering, where the provider returns it (capped); never sent back to the model. */
  reasoning: z.string().optional(),
  toolCalls: z.array(ToolCallRecord),
  usage: z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), cachedInputTokens: z.number().int() }).partial().optional(),
  durationMs: z.number().optional(),
  /** USD at the run's price table (0 for a model without a price). */
  costUsd: z.number().optional(),
  /** True when the scripted model had no turn left for this node. */
  exhausted: z.boolean().optional(),
});
export const ReflectionPayload = z.object({
  trigger: z.enum(["subtask_completed", "failure_streak", "end_of_run", "repetition"]),
  lessons: z.array(z.string()),
  source: z.enum(["model", "deterministic"]),
  fromEvents: z.array(z.string()),
});
export const SummaryPayload = z.object({
  fromSeq: z.number().int(),
  toSeq: z.number().int(),
  eventIds: z.array(z.string()),
  text: z.string(),
  tier: z.enum(["mid", "far"]),
  source: z.enum(["model", "deterministic"]),
});
export const ApprovalPayload = z.object({
  actionId: z.string(),
  command: z.string(),
  decision: z.enum(["approved", "rejected"]),
  /** "user" answered the pause; "auto" is --approve auto or deny. */
  by: z.enum(["user", "auto"]),
  rule: z.string(),
  reason: z.string(),
});
export const TimeTravelPayload = z.object({
  /** rewind/fork: the CLI's commands; restore: the graph found its checkpoint's revision was not the workspace's (Studio, SDK, scripts). */
  kind: z.enum(["rewind", "fork", "restore"]),
  fromThread: z.string(),
  /** The checkpoint the run was at before (rewind), or the checkpoint forked from. */
  fromCheckpoint: z.string().nullable(),
  toCheckpoint: z.string(),
  /** Workspace revision restored. */
  revision: z.string().nullable(),
  /** Foreign edits saved as a revision first (rewind --force, or always before a restore). */
  savedRevision: z.string().nullable().optional(),
  workspace: z.string().optional(),
});
export const RunStatusPayload = z.object({
  status: RunStatus,
  steps: z.number().int(),
  reason: z.string().optional(),
});

const ev = <T extends string, P extends z.ZodType>(type: T, payload: P) => z.object({ type: z.literal(type), payload });

/** Every ledger event type with its payload schema. */
export const EventBody = z.discriminatedUnion("type", [
  ev("task_spec", TaskSpecPayload),
  ev("plan_update", PlanUpdatePayload),
  ev("agent_action", AgentActionPayload),
  ev("environment_feedback", EnvironmentFeedbackPayload),
  ev("workspace_snapshot", WorkspaceSnapshotPayload),
  ev("decision", DecisionPayload),
  ev("context_built", ContextBuiltPayload),
  ev("model_call", ModelCallPayload),
  ev("reflection", ReflectionPayload),
  ev("summary", SummaryPayload),
  ev("run_status", RunStatusPayload),
  ev("time_travel", TimeTravelPayload),
  ev("approval", ApprovalPayload),
  ev("process", ProcessEventPayload),
]);
export type EventBody = z.infer<typeof EventBody>;
export type EventType = EventBody["type"];
export const EVENT_TYPES = EventBody.options.map((o) => o.shape.type.value) as EventType[];

export type PayloadOf<T extends EventType> = Extract<EventBody, { type: T }>["payload"];

export const LedgerEventEnvelope = z.object({
  id: z.string(),
  threadId: z.string(),
  parentId: z.string().nullable(),
  seq: z.number().int(),
  ts: z.string(),
  checkpointId: z.string().nullable(),
  causedBy: z.string().nullable(),
  idempotencyKey: z.string().nullable(),
  schemaVersion: z.number().int(),
});

/** A stored ledger event: envelope plus a typed body. */
export type LedgerEvent<T extends EventType = EventType> = z.infer<typeof LedgerEventEnvelope> & Extract<EventBody, { type: T }>;
