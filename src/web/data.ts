import fs from "node:fs";
import type Database from "better-sqlite3";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { LedgerloopError } from "../errors.js";
import { listRuns, type RunSummary } from "../ledger/run-status.js";
import { SqliteLedger } from "../ledger/sqlite-ledger.js";
import { openStateDb } from "../ledger/state-db.js";
import type { ChatMessage } from "../models/port.js";
import { resolveWorkspace, stateLocation } from "../runtime.js";
import {
  EVENT_TYPES,
  type ContextItem,
  type EventType,
  type FileChanges,
  type LedgerEvent,
  type Subtask,
  type TestCounts,
  type ToolCallRecord,
} from "../state.js";

/** An error the viewer answers with its status code and message (never a stack). */
export class HttpError extends LedgerloopError {
  readonly status: number;
  constructor(status: number, message: string) {
    super(status === 404 ? "NOT_FOUND" : status === 400 ? "BAD_REQUEST" : "HTTP_ERROR", message);
    this.status = status;
  }
}

/** Where the viewer reads from. */
export interface ViewerSource {
  workspace: string;
  stateDir?: string;
}

/** A run's state database opened read-only: the viewer never writes, and never waits long for a lock. */
export interface ReadOnlyState {
  workspace: string;
  dbPath: string;
  db: Database.Database;
  ledger: SqliteLedger | null;
  checkpointer: SqliteSaver | null;
  close(): void;
}

/** Resolves the workspace and its state database path once, at start. */
export function locate(src: ViewerSource): { workspace: string; stateDir: string; dbPath: string } {
  const workspace = resolveWorkspace(src.workspace);
  return { workspace, ...stateLocation(workspace, src.stateDir) };
}

/**
 * Opens the state database read-only, or returns null when no run has created it yet. Opened per
 * request: a short-lived reader never holds a WAL snapshot that would keep a running agent's
 * checkpoints from being folded back into the main file.
 */
export function openReadOnly(workspace: string, dbPath: string): ReadOnlyState | null {
  if (!fs.existsSync(dbPath)) return null;
  // The page check reads the whole file: once per version of the files, not once per request.
  const version = fileVersion(dbPath);
  const check = checkedVersions.get(dbPath) !== version;
  // A WAL reader does not wait for writers; the short timeout only covers WAL recovery by another process.
  const db = openStateDb(dbPath, { create: false, readonly: true, busyTimeoutMs: 250, check });
  if (check) checkedVersions.set(dbPath, version);
  try {
    const tables = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name),
    );
    return {
      workspace,
      dbPath,
      db,
      ledger: tables.has("ll_events") && tables.has("ll_blobs") ? new SqliteLedger(db) : null,
      // Its setup() only runs CREATE TABLE IF NOT EXISTS, a no-op on existing tables, so it is safe read-only.
      checkpointer: tables.has("checkpoints") && tables.has("writes") ? new SqliteSaver(db) : null,
      close: () => db.close(),
    };
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Per state database, the version of its files (see fileVersion) that last passed the page check. */
const checkedVersions = new Map<string, string>();

/** Size, mtime and inode of the database and its WAL: changes whenever either is written or replaced. */
function fileVersion(dbPath: string): string {
  return [dbPath, `${dbPath}-wal`]
    .map((f) => {
      try {
        const st = fs.statSync(f, { bigint: true });
        return `${st.ino}:${st.size}:${st.mtimeNs}`;
      } catch {
        return "-";
      }
    })
    .join("/");
}

function hasTable(db: Database.Database, name: string): boolean {
  return Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name));
}

// ---------------------------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------------------------

/** One run in the viewer's list: the same rows, status and order as `ledgerloop threads`. */
export type ThreadSummary = RunSummary;

interface RunRow {
  thread_id: string;
  created_at: string;
  goal: string;
  settings: string;
}

function runRows(db: Database.Database): Map<string, RunRow> {
  if (!hasTable(db, "ll_runs")) return new Map();
  return new Map((db.prepare("SELECT * FROM ll_runs").all() as RunRow[]).map((r) => [r.thread_id, r]));
}

/** Every run of the workspace, newest first, with the one status function the CLI uses too. */
export function listThreads(st: ReadOnlyState): ThreadSummary[] {
  return listRuns(st.db);
}

/** Fails with a 404 unless the workspace has recorded something for the thread. */
export function requireKnownThread(st: ReadOnlyState | null, thread: string): asserts st is ReadOnlyState {
  const known =
    st !== null &&
    ((st.ledger && st.db.prepare("SELECT 1 FROM ll_events WHERE thread_id = ? LIMIT 1").get(thread)) ||
      (st.checkpointer && st.db.prepare("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1").get(thread)) ||
      runRows(st.db).has(thread));
  if (!known) throw new HttpError(404, `unknown thread "${thread}" in this workspace`);
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

/**
 * The events of the thread's current branch: the one its newest event is on. That is where a
 * running step writes (ahead of its checkpoint), and where a rewind continues (its time_travel event).
 */
async function currentBranch(st: ReadOnlyState, thread: string, types?: EventType[]): Promise<LedgerEvent[]> {
  if (!st.ledger) return [];
  const head = st.db.prepare<[string], { id: string }>("SELECT id FROM ll_events WHERE thread_id = ? ORDER BY seq DESC LIMIT 1").get(thread);
  if (!head) return [];
  return st.ledger.branch(head.id, types ? { types } : {});
}

const of = <T extends EventType>(events: LedgerEvent[], type: T) => events.filter((e): e is LedgerEvent<T> => e.type === type);

export interface ThreadDetail {
  thread: string;
  goal: string;
  status: string;
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
  usage: { modelCalls: number; inputTokens: number; outputTokens: number };
  filesTouched: string[];
  finishSummary: string | null;
  forked: boolean;
  checkpointId: string | null;
}

/** The header of a thread: goal, status, plan, pinned decisions, and what the run ran with. */
export async function threadDetail(st: ReadOnlyState, thread: string): Promise<ThreadDetail> {
  const latest = await latestState(st, thread);
  const events = await currentBranch(st, thread);
  const run = runRows(st.db).get(thread);
  let settings: Record<string, unknown> = {};
  try {
    settings = run ? (JSON.parse(run.settings) as Record<string, unknown>) : {};
  } catch {
    settings = {};
  }
  const spec = of(events, "task_spec")[0];
  const planEvent = events.filter((e) => e.type === "plan_update" || e.type === "task_spec").at(-1) as
    | LedgerEvent<"plan_update">
    | LedgerEvent<"task_spec">
    | undefined;
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
  const finish = feedback.flatMap((f) => f.payload.effects ?? []).filter((e) => e.kind === "finish").at(-1);
  const last = events.at(-1);
  const maxSeq = st.ledger
    ? (st.db.prepare<[string], { m: number | null; n: number }>("SELECT MAX(seq) AS m, COUNT(*) AS n FROM ll_events WHERE thread_id = ?").get(thread) ?? { m: 0, n: 0 })
    : { m: 0, n: 0 };
  const forked = st.ledger ? Boolean(st.db.prepare("SELECT 1 FROM ll_forks WHERE thread_id = ? LIMIT 1").get(thread)) : false;
  const status = listRuns(st.db).find((r) => r.thread === thread)?.status ?? "unknown";
  const stepFromActions = Math.max(0, ...[...actions.values()].map((a) => a.payload.step));
  return {
    thread,
    goal: latest.values.goal || spec?.payload.goal || run?.goal || "",
    status,
    awaitingApproval: latest.interrupt,
    steps: Math.max(latest.values.step ?? 0, stepFromActions),
    maxSteps: typeof settings.maxSteps === "number" ? settings.maxSteps : null,
    createdAt: run?.created_at ?? events[0]?.ts ?? null,
    lastActivity: last?.ts ?? null,
    lastSeq: maxSeq.m ?? 0,
    events: maxSeq.n,
    model: (typeof settings.model === "string" ? settings.model : null) ?? calls[0]?.payload.model ?? null,
    sandbox: {
      requested: typeof settings.sandbox === "string" ? settings.sandbox : null,
      level: feedback.filter((f) => f.payload.sandbox).at(-1)?.payload.sandbox ?? null,
    },
    approve: typeof settings.approve === "string" ? settings.approve : null,
    plan: latest.values.subtasks?.length ? latest.values.subtasks : (planEvent?.payload.subtasks ?? []),
    decisions: of(events, "decision").map((d) => ({ id: d.id, seq: d.seq, step: d.payload.step, text: d.payload.text })),
    lastTests: testsFb?.payload.tests
      ? { ...testsFb.payload.tests, step: actions.get(testsFb.causedBy ?? "")?.payload.step ?? null, seq: testsFb.seq }
      : null,
    lastPrompt: prompt ? { step: prompt.payload.step, tokens: prompt.payload.tokens, budget: prompt.payload.budget } : null,
    usage: {
      modelCalls: calls.length,
      inputTokens: calls.reduce((n, c) => n + (c.payload.usage?.inputTokens ?? 0), 0),
      outputTokens: calls.reduce((n, c) => n + (c.payload.usage?.outputTokens ?? 0), 0),
    },
    filesTouched: [...files].sort(),
    finishSummary: finish && finish.kind === "finish" ? finish.summary : null,
    forked,
    checkpointId: latest.checkpointId,
  };
}

// ---------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------

/** Longest text of one output field in a step listing; the full text is one event request away. */
export const OUTPUT_PREVIEW_CHARS = 6000;

export interface Clipped {
  text: string;
  /** Length of the full text when it was clipped for the listing. */
  fullLength?: number;
}

function clip(text: string | undefined | null, limit = OUTPUT_PREVIEW_CHARS): Clipped | null {
  if (text === undefined || text === null) return null;
  if (text.length <= limit) return { text };
  const head = Math.floor(limit * 0.7);
  return { text: `${text.slice(0, head)}\n… ${text.length - limit} more characters …\n${text.slice(text.length - (limit - head))}`, fullLength: text.length };
}

export interface StepFeedback {
  id: string;
  seq: number;
  ts: string;
  status: string;
  errorClass: string | null;
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  command: string | null;
  sandbox: string | null;
  truncated: boolean;
  filesChanged: FileChanges | null;
  tests: TestCounts | null;
  output: Clipped | null;
  stdout: Clipped | null;
  stderr: Clipped | null;
  effects: unknown[];
}

export interface StepApproval {
  id: string;
  seq: number;
  ts: string;
  decision: string;
  by: string;
  rule: string;
  reason: string;
  command: string;
}

export interface StepAction {
  id: string;
  seq: number;
  callId: string;
  tool: string;
  args: unknown;
  argsText: string | null;
  invalid: string | null;
  feedback: StepFeedback | null;
  approvals: StepApproval[];
}

/** An event between decide steps: a plan change, a lesson, a summary, a rewind, the final status. */
export interface Interlude {
  id: string;
  seq: number;
  ts: string;
  type: EventType;
  payload: Record<string, unknown>;
}

export interface StepView {
  step: number;
  firstSeq: number;
  lastSeq: number;
  startedAt: string;
  endedAt: string;
  context: { eventId: string; tokens: number; budget: number; omitted: number } | null;
  model: { content: string; toolCalls: ToolCallRecord[]; model: string; usage: unknown; durationMs: number | null } | null;
  actions: StepAction[];
  /** "ok" | "error" (some action failed) | "running" (an action has no feedback yet) | "empty". */
  outcome: string;
  filesChanged: FileChanges;
  tests: TestCounts | null;
  /** Events after this step and before the next one. */
  after: Interlude[];
}

export interface StepsView {
  thread: string;
  lastSeq: number;
  /** Events before the first step (the task spec and its plan); only on a page that starts at the first step. */
  before: Interlude[];
  steps: StepView[];
  /** Steps on the current branch, in all. */
  total: number;
  /** Steps on the current branch before the first one returned (before `from` when none is). */
  earlier: number;
}

/** Which steps of a run to list: `from` and `to` bound the step numbers, `last` keeps the last N of those. */
export interface StepsQuery {
  from?: number;
  to?: number;
  last?: number;
}

const INTERLUDE_TYPES = new Set<EventType>(["task_spec", "plan_update", "decision", "reflection", "summary", "time_travel", "run_status"]);

function interlude(e: LedgerEvent): Interlude {
  const p = e.payload as Record<string, unknown>;
  return { id: e.id, seq: e.seq, ts: e.ts, type: e.type, payload: p };
}

function feedbackView(f: LedgerEvent<"environment_feedback">): StepFeedback {
  const p = f.payload;
  return {
    id: f.id,
    seq: f.seq,
    ts: f.ts,
    status: p.status,
    errorClass: p.errorClass ?? null,
    exitCode: p.exitCode ?? null,
    signal: p.signal ?? null,
    durationMs: p.durationMs,
    command: p.command ?? null,
    sandbox: p.sandbox ?? null,
    truncated: p.truncated ?? false,
    filesChanged: p.filesChanged ?? null,
    tests: p.tests ?? null,
    output: clip(p.output),
    stdout: clip(p.stdout),
    stderr: clip(p.stderr),
    effects: p.effects ?? [],
  };
}

/**
 * One entry per decide step of the current branch (its prompt, the model's answer, each action
 * with its feedback and approvals), with what happened between steps. `from` keeps steps >= from,
 * `to` steps <= to, and `last` the last N of those: `?last=100` is the end of a run, `?to=<first
 * shown - 1>&last=100` the page before it.
 */
export async function threadSteps(st: ReadOnlyState, thread: string, opts: StepsQuery = {}): Promise<StepsView> {
  const events = await currentBranch(st, thread);
  const steps = new Map<number, StepView>();
  const before: Interlude[] = [];
  const actionsById = new Map<string, { action: StepAction; step: StepView }>();
  let current: StepView | null = null as StepView | null;
  const touch = (s: StepView, e: LedgerEvent) => {
    s.lastSeq = Math.max(s.lastSeq, e.seq);
    if (e.ts > s.endedAt) s.endedAt = e.ts;
  };
  const open = (step: number, e: LedgerEvent): StepView => {
    let s = steps.get(step);
    if (!s) {
      s = {
        step,
        firstSeq: e.seq,
        lastSeq: e.seq,
        startedAt: e.ts,
        endedAt: e.ts,
        context: null,
        model: null,
        actions: [],
        outcome: "empty",
        filesChanged: { created: [], modified: [], deleted: [] },
        tests: null,
        after: [],
      };
      steps.set(step, s);
    }
    return s;
  };
  for (const e of events) {
    switch (e.type) {
      case "context_built": {
        const s = open(e.payload.step, e);
        current = s;
        s.context = { eventId: e.id, tokens: e.payload.tokens, budget: e.payload.budget, omitted: e.payload.omitted.length };
        touch(s, e);
        break;
      }
      case "model_call": {
        if (e.payload.node !== "decide") break;
        const s = current;
        if (!s) break;
        s.model = {
          content: e.payload.content,
          toolCalls: e.payload.toolCalls,
          model: e.payload.model,
          usage: e.payload.usage ?? null,
          durationMs: e.payload.durationMs ?? null,
        };
        touch(s, e);
        break;
      }
      case "agent_action": {
        const s = open(e.payload.step, e);
        current = s;
        const a: StepAction = {
          id: e.id,
          seq: e.seq,
          callId: e.payload.callId,
          tool: e.payload.tool,
          args: e.payload.args ?? null,
          argsText: e.payload.argsText ?? null,
          invalid: e.payload.invalid ?? null,
          feedback: null,
          approvals: [],
        };
        s.actions.push(a);
        actionsById.set(e.id, { action: a, step: s });
        touch(s, e);
        break;
      }
      case "environment_feedback": {
        const found = e.causedBy ? actionsById.get(e.causedBy) : undefined;
        if (!found) break;
        found.action.feedback = feedbackView(e);
        touch(found.step, e);
        break;
      }
      case "approval": {
        const found = actionsById.get(e.payload.actionId);
        if (!found) break;
        found.action.approvals.push({ id: e.id, seq: e.seq, ts: e.ts, ...e.payload });
        touch(found.step, e);
        break;
      }
      default:
        if (INTERLUDE_TYPES.has(e.type)) {
          (current ? current.after : before).push(interlude(e));
        }
    }
  }
  for (const s of steps.values()) {
    for (const a of s.actions) {
      const c = a.feedback?.filesChanged;
      if (c) {
        for (const k of ["created", "modified", "deleted"] as const) for (const p of c[k]) if (!s.filesChanged[k].includes(p)) s.filesChanged[k].push(p);
      }
      if (a.feedback?.tests) s.tests = a.feedback.tests;
    }
    if (s.actions.some((a) => !a.feedback)) s.outcome = "running";
    else if (s.actions.some((a) => a.feedback && a.feedback.status !== "ok")) s.outcome = "error";
    else if (s.actions.length) s.outcome = "ok";
  }
  const from = opts.from ?? 0;
  const to = opts.to ?? Number.MAX_SAFE_INTEGER;
  const all = [...steps.values()].sort((a, b) => a.step - b.step);
  let page = all.filter((s) => s.step >= from && s.step <= to);
  if (opts.last !== undefined) page = page.slice(Math.max(0, page.length - opts.last));
  const firstStep = page[0]?.step ?? from;
  const earlier = all.filter((s) => s.step < firstStep).length;
  return {
    thread,
    lastSeq: events.at(-1)?.seq ?? 0,
    before: from <= 1 && earlier === 0 ? before : [],
    steps: page,
    total: all.length,
    earlier,
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
  const types = raw.split(",").map((t) => t.trim()).filter(Boolean);
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
      steps.length ? `run ${thread} has no prompt for step ${step}; steps with prompts: ${Math.min(...steps)}-${Math.max(...steps)}` : `run ${thread} has no prompt recorded yet`,
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

/** A thread's checkpoints (one per superstep), newest first. */
export async function threadCheckpoints(st: ReadOnlyState, thread: string, opts: { limit: number; before?: string }): Promise<{ thread: string; checkpoints: CheckpointRow[]; more: boolean }> {
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
