import type { ChatMessage } from "../models/port.js";
import type { RunSummary } from "../ledger/run-status.js";
import { spendBySubtask, spendOf } from "../economics/spend.js";
import { commandTotals, type CommandTotals } from "../economics/commands.js";
import { processHistory } from "../sandbox/process-history.js";
import { EVENT_TYPES, type ContextItem, type EventType, type LedgerEvent, type Subtask, type TestCounts } from "../state.js";
import { currentBranch, HttpError, of, type ReadOnlyState } from "./read-state.js";

// The viewer's data module: what each API route answers, as typed views of a state (SQLite or
// PostgreSQL, through the read port of read-state.ts). The page's script (app.js, app/*.js) takes
// its JSDoc types from here, so the type check covers both ends.
export { HttpError, type ReadOnlyState, type StateSource, type ViewerSource } from "./read-state.js";
export * from "./steps.js";

// ---------------------------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------------------------

/** One run in the viewer's list: the same rows, status and order as `ledgerloop threads`. */
export type ThreadSummary = RunSummary;

/** `/api/threads`: where the runs are and the runs. */
export interface ThreadList {
  /** The workspace directory, or for a PostgreSQL state its URL without the password. */
  workspace: string;
  /** Which backend holds the runs: with "postgres", `workspace` is the state URL (`--state`). */
  backend: "sqlite" | "postgres";
  threads: ThreadSummary[];
}

/** Every run of the state, newest first, with the one status function the CLI uses too. */
export function listThreads(st: ReadOnlyState): Promise<ThreadSummary[]> {
  return st.listRuns();
}

/** Fails with a 404 unless the state has recorded something for the thread. */
export async function requireKnownThread(st: ReadOnlyState | null, thread: string): Promise<ReadOnlyState> {
  if (st && (await st.hasThread(thread))) return st;
  throw new HttpError(404, `unknown thread "${thread}" in ${st?.where ?? "this workspace"}`);
}

// ---------------------------------------------------------------------------------------------
// One thread
// ---------------------------------------------------------------------------------------------

interface LatestState {
  checkpointId: string | null;
  values: {
    goal?: string;
    status?: string;
    step?: number;
    subtasks?: Subtask[];
    ledgerHead?: string | null;
    failureStreak?: number;
  };
  /** The approval the run is paused on (LangGraph interrupt), if any. */
  interrupt: ApprovalWait | null;
}

/** What a run paused for approval is waiting on. */
export interface ApprovalWait {
  actionId: string | null;
  tool: string | null;
  command: string | null;
  rule: string | null;
  reason: string | null;
}

function asApprovalWait(v: unknown): ApprovalWait | null {
  const values = Array.isArray(v) ? v : [v];
  for (const item of values) {
    const value = (item && typeof item === "object" && "value" in item ? (item as { value: unknown }).value : item) as Record<string, unknown> | null;
    if (value && typeof value === "object" && value.kind === "approval") {
      const s = (k: string) => (typeof value[k] === "string" ? (value[k] as string) : null);
      return { actionId: s("actionId"), tool: s("tool"), command: s("command"), rule: s("rule"), reason: s("reason") };
    }
  }
  return null;
}

async function latestState(st: ReadOnlyState, thread: string): Promise<LatestState> {
  if (!st.checkpointer) return { checkpointId: null, values: {}, interrupt: null };
  const t = await st.checkpointer.getTuple({ configurable: { thread_id: thread } });
  if (!t) return { checkpointId: null, values: {}, interrupt: null };
  const interruptWrite = (t.pendingWrites ?? []).find((w) => w[1] === "__interrupt__");
  return {
    checkpointId: String(t.config.configurable?.checkpoint_id ?? t.checkpoint.id),
    values: t.checkpoint.channel_values as LatestState["values"],
    interrupt: interruptWrite ? asApprovalWait(interruptWrite[2]) : null,
  };
}

export interface ThreadDetail {
  thread: string;
  goal: string;
  status: string;
  /** A run of the queue (PostgreSQL state): its lease state, the worker holding it, how often it moved. */
  queue: NonNullable<RunSummary["queue"]> | null;
  /** Set when the run is paused until someone approves or rejects a command. */
  awaitingApproval: ApprovalWait | null;
  steps: number;
  maxSteps: number | null;
  createdAt: string | null;
  lastActivity: string | null;
  lastSeq: number;
  events: number;
  model: string | null;
  sandbox: { requested: string | null; level: string | null };
  approve: string | null;
  plan: Subtask[];
  decisions: Array<{ id: string; seq: number; step: number; text: string }>;
  lastTests: (TestCounts & { step: number | null; seq: number }) | null;
  lastPrompt: { step: number; tokens: number; budget: number } | null;
  usage: {
    modelCalls: number;
    inputTokens: number;
    outputTokens: number;
    cachedInputTokens: number;
    costUsd: number;
    /** Per subtask (null: calls made while none was in progress, e.g. the first plan). */
    bySubtask: Array<{ subtask: string | null; calls: number; tokens: number; costUsd: number }>;
  };
  filesTouched: string[];
  /** Background processes of the branch (start_process) as the ledger tells them: the last state of each name. */
  processes: Array<{ name: string; command: string; status: string; ports: number[]; exitCode: number | null }>;
  /** The branch's shell commands: how many, CPU in all and the largest figures (as the report adds them up). */
  commands: CommandTotals;
  finishSummary: string | null;
  forked: boolean;
  checkpointId: string | null;
}

function usageOf(calls: LedgerEvent<"model_call">[]): ThreadDetail["usage"] {
  const all = spendOf(calls);
  return {
    modelCalls: all.calls,
    inputTokens: all.inputTokens,
    outputTokens: all.outputTokens,
    cachedInputTokens: all.cachedInputTokens,
    costUsd: all.costUsd,
    bySubtask: spendBySubtask(calls).map((s) => ({ subtask: s.subtask, calls: s.calls, tokens: s.inputTokens + s.outputTokens, costUsd: s.costUsd })),
  };
}

/** The header of a thread: goal, status, plan, pinned decisions, and what the run ran with. */
export async function threadDetail(st: ReadOnlyState, thread: string): Promise<ThreadDetail> {
  const latest = await latestState(st, thread);
  const events = await currentBranch(st, thread);
  const run = await st.runInfo(thread);
  const settings = run?.settings ?? {};
  const spec = of(events, "task_spec")[0];
  const planEvent = events.filter((e) => e.type === "plan_update" || e.type === "task_spec").at(-1) as
    LedgerEvent<"plan_update"> | LedgerEvent<"task_spec"> | undefined;
  const feedback = of(events, "environment_feedback");
  const actions = new Map(of(events, "agent_action").map((a) => [a.id, a]));
  const calls = of(events, "model_call");
  const testsFb = feedback.filter((f) => f.payload.tests).at(-1);
  const prompt = of(events, "context_built").at(-1);
  const files = new Set<string>();
  for (const f of feedback) {
    const c = f.payload.filesChanged;
    if (c) for (const p of [...c.created, ...c.modified, ...c.deleted]) files.add(p);
  }
  const finish = feedback
    .flatMap((f) => f.payload.effects ?? [])
    .filter((e) => e.kind === "finish")
    .at(-1);
  const last = events.at(-1);
  const seq = await st.seqStats(thread);
  const forked = st.ledger ? await st.forked(thread) : false;
  const summary = (await st.listRuns(thread)).find((r) => r.thread === thread);
  const stepFromActions = Math.max(0, ...[...actions.values()].map((a) => a.payload.step));
  return {
    thread,
    goal: latest.values.goal || spec?.payload.goal || run?.goal || summary?.goal || "",
    status: summary?.status ?? "unknown",
    queue: summary?.queue ?? null,
    awaitingApproval: latest.interrupt,
    steps: Math.max(latest.values.step ?? 0, stepFromActions),
    maxSteps: typeof settings.maxSteps === "number" ? settings.maxSteps : null,
    createdAt: run?.createdAt ?? events[0]?.ts ?? null,
    lastActivity: last?.ts ?? null,
    lastSeq: seq.maxSeq,
    events: seq.count,
    model: (typeof settings.model === "string" ? settings.model : null) ?? calls[0]?.payload.model ?? null,
    sandbox: {
      requested: typeof settings.sandbox === "string" ? settings.sandbox : null,
      level: feedback.filter((f) => f.payload.sandbox).at(-1)?.payload.sandbox ?? null,
    },
    approve: typeof settings.approve === "string" ? settings.approve : null,
    plan: latest.values.subtasks?.length ? latest.values.subtasks : (planEvent?.payload.subtasks ?? []),
    decisions: of(events, "decision").map((d) => ({ id: d.id, seq: d.seq, step: d.payload.step, text: d.payload.text })),
    lastTests: testsFb?.payload.tests ? { ...testsFb.payload.tests, step: actions.get(testsFb.causedBy ?? "")?.payload.step ?? null, seq: testsFb.seq } : null,
    lastPrompt: prompt ? { step: prompt.payload.step, tokens: prompt.payload.tokens, budget: prompt.payload.budget } : null,
    usage: usageOf(calls),
    filesTouched: [...files].sort(),
    processes: processHistory(events).map((p) => ({ name: p.name, command: p.command, status: p.status, ports: p.ports, exitCode: p.exitCode })),
    commands: commandTotals(feedback, (f) => actions.get(f.causedBy ?? "")?.payload.step ?? 0),
    finishSummary: finish && finish.kind === "finish" ? finish.summary : null,
    forked,
    checkpointId: latest.checkpointId,
  };
}

// ---------------------------------------------------------------------------------------------
// Raw events
// ---------------------------------------------------------------------------------------------

export interface EventsPage {
  thread: string;
  events: LedgerEvent[];
  /** Pass as `after` for the next page (the seq of the last event returned, or the `after` given). */
  next: number;
  more: boolean;
}

/** Validates a comma-separated list of event types. */
export function parseTypes(raw: string | null): EventType[] {
  if (!raw) return [];
  const types = raw
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  for (const t of types) {
    if (!EVENT_TYPES.includes(t as EventType)) throw new HttpError(400, `unknown event type "${t}"; known: ${EVENT_TYPES.join(", ")}`);
  }
  return types as EventType[];
}

/** A page of the thread's raw ledger (every branch), oldest first, after a seq. */
export async function threadEvents(st: ReadOnlyState, thread: string, q: { types: EventType[]; after: number; limit: number }): Promise<EventsPage> {
  if (!st.ledger) return { thread, events: [], next: q.after, more: false };
  const page = await st.ledger.list(thread, { types: q.types.length ? q.types : undefined, afterSeq: q.after, limit: q.limit + 1 });
  const more = page.length > q.limit;
  const events = page.slice(0, q.limit);
  return { thread, events, next: events.at(-1)?.seq ?? q.after, more };
}

/** One event of the thread, in full. */
export async function threadEvent(st: ReadOnlyState, thread: string, id: string): Promise<LedgerEvent> {
  const e = st.ledger ? await st.ledger.get(id) : null;
  if (!e || e.threadId !== thread) throw new HttpError(404, `no event ${id} in thread "${thread}"`);
  return e;
}

// ---------------------------------------------------------------------------------------------
// Context audit
// ---------------------------------------------------------------------------------------------

export interface ContextView {
  thread: string;
  step: number;
  eventId: string;
  ts: string;
  tokens: number;
  budget: number;
  sections: Array<{ section: string; tokens: number; items: number }>;
  items: ContextItem[];
  omitted: ContextItem[];
  messages: ChatMessage[];
}

/** What the model saw at a decide step (the context audit), on the thread's current branch. */
export async function threadContext(st: ReadOnlyState, thread: string, step: number): Promise<ContextView> {
  let built = (await currentBranch(st, thread, ["context_built"])) as LedgerEvent<"context_built">[];
  if (!built.length && st.ledger) built = (await st.ledger.list(thread, { types: ["context_built"] })) as LedgerEvent<"context_built">[];
  const pick = built.filter((e) => e.payload.step === step).at(-1);
  if (!pick) {
    const steps = built.map((e) => e.payload.step);
    throw new HttpError(
      404,
      steps.length
        ? `run ${thread} has no prompt for step ${step}; steps with prompts: ${Math.min(...steps)}-${Math.max(...steps)}`
        : `run ${thread} has no prompt recorded yet`,
    );
  }
  const blob = await st.ledger!.getBlob(pick.payload.promptRef);
  let messages: ChatMessage[] = [];
  try {
    messages = blob ? (JSON.parse(blob) as ChatMessage[]) : [];
  } catch {
    messages = [];
  }
  const sections = new Map<string, { section: string; tokens: number; items: number }>();
  for (const i of pick.payload.items) {
    const s = sections.get(i.section) ?? { section: i.section, tokens: 0, items: 0 };
    s.tokens += i.tokens;
    s.items += 1;
    sections.set(i.section, s);
  }
  return {
    thread,
    step: pick.payload.step,
    eventId: pick.id,
    ts: pick.ts,
    tokens: pick.payload.tokens,
    budget: pick.payload.budget,
    sections: [...sections.values()],
    items: pick.payload.items,
    omitted: pick.payload.omitted,
    messages,
  };
}

// ---------------------------------------------------------------------------------------------
// Checkpoints
// ---------------------------------------------------------------------------------------------

export interface CheckpointRow {
  checkpointId: string;
  parentCheckpointId: string | null;
  createdAt: string;
  superstep: number | null;
  source: string | null;
  /** Nodes the checkpoint hands over to. */
  next: string[];
  status: string | null;
  agentStep: number | null;
  ledgerHead: string | null;
  workspaceRev: string | null;
  interrupted: boolean;
}

/** `/api/threads/<id>/checkpoints`: a page of checkpoints, newest first. */
export interface CheckpointsPage {
  thread: string;
  checkpoints: CheckpointRow[];
  more: boolean;
}

/** A thread's checkpoints (one per superstep), newest first. */
export async function threadCheckpoints(st: ReadOnlyState, thread: string, opts: { limit: number; before?: string }): Promise<CheckpointsPage> {
  if (!st.checkpointer) return { thread, checkpoints: [], more: false };
  const rows: CheckpointRow[] = [];
  const options = { limit: opts.limit + 1, ...(opts.before ? { before: { configurable: { thread_id: thread, checkpoint_id: opts.before } } } : {}) };
  for await (const t of st.checkpointer.list({ configurable: { thread_id: thread, checkpoint_ns: "" } }, options)) {
    const v = t.checkpoint.channel_values as Record<string, unknown>;
    const meta = (t.metadata ?? {}) as { step?: number; source?: string };
    rows.push({
      checkpointId: String(t.config.configurable?.checkpoint_id ?? t.checkpoint.id),
      parentCheckpointId: (t.parentConfig?.configurable?.checkpoint_id as string | undefined) ?? null,
      createdAt: t.checkpoint.ts,
      superstep: typeof meta.step === "number" ? meta.step : null,
      source: meta.source ?? null,
      next: Object.keys(v)
        .filter((k) => k.startsWith("branch:to:"))
        .map((k) => k.slice("branch:to:".length)),
      status: typeof v.status === "string" ? v.status : null,
      agentStep: typeof v.step === "number" ? v.step : null,
      ledgerHead: typeof v.ledgerHead === "string" ? v.ledgerHead : null,
      workspaceRev: typeof v.workspaceRev === "string" ? v.workspaceRev : null,
      interrupted: (t.pendingWrites ?? []).some((w) => w[1] === "__interrupt__"),
    });
  }
  const more = rows.length > opts.limit;
  return { thread, checkpoints: rows.slice(0, opts.limit), more };
}
