import type { EventType, FileChanges, LedgerEvent, TestCounts, ToolCallRecord } from "../state.js";
import type { CommandLimit, CommandUsage, StoppedBy } from "../events.js";
import { spendByStep } from "../economics/spend.js";
import { currentBranch, type ReadOnlyState } from "./read-state.js";

// The timeline of a run: one entry per decide step, with its prompt, answer, actions and what came between.

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
  /** Commands: what ended it when it did not end by itself, and the limit when that was one. */
  stoppedBy: StoppedBy | null;
  limit: CommandLimit | null;
  /** Commands: CPU time and peak memory of all its processes, where cgroups measured them. */
  usage: CommandUsage | null;
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
  model: { content: string; reasoning: string | null; toolCalls: ToolCallRecord[]; model: string; usage: unknown; durationMs: number | null } | null;
  actions: StepAction[];
  /** Tokens and USD of every model call made for this step (decide, and a summarize or reflection at it); null: none reported usage. */
  spend: { tokens: number; costUsd: number } | null;
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

const INTERLUDE_TYPES = new Set<EventType>(["task_spec", "plan_update", "decision", "reflection", "summary", "time_travel", "run_status", "process"]);

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
    stoppedBy: p.stoppedBy ?? null,
    limit: p.limit ?? null,
    usage: p.usage ?? null,
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
        spend: null,
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
          reasoning: e.payload.reasoning ?? null,
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
  for (const sp of spendByStep(events.filter((e): e is LedgerEvent<"model_call"> => e.type === "model_call"))) {
    const s = steps.get(sp.step);
    const tokens = sp.inputTokens + sp.outputTokens;
    if (s && (tokens || sp.costUsd)) s.spend = { tokens, costUsd: sp.costUsd };
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
