import type { ChatMessage } from "../models/port.js";
import { capText } from "../sandbox/output-cap.js";
import type { LedgerEvent, Subtask, TaskStateValue } from "../state.js";
import { MESSAGE_OVERHEAD } from "./budget.js";
import type { TokenCounter } from "./tokens.js";

/** One decide turn as the ledger has it: the model call, its actions and their results. */
export interface Turn {
  call: LedgerEvent<"model_call">;
  actions: LedgerEvent<"agent_action">[];
  feedback: Map<string, LedgerEvent<"environment_feedback">>;
}

export const NEWEST_OUTPUT_CHARS = 12_000;
export const OLDER_OUTPUT_CHARS = 3_000;
export const SQUEEZED_OUTPUT_CHARS = 600;
const DECISION_COMPACT_CHARS = 200;
const GOAL_COMPACT_CHARS = 2_000;

/** Decisions may take this share of the budget before older ones are shortened. */
export const DECISIONS_SHARE = 0.25;
/** The newest decisions always stay in full. */
const DECISIONS_KEPT_FULL = 10;
/** Past this many decisions the middle ones may be elided (level 3); the first ones always stay. */
const DECISIONS_ELIDE_ABOVE = 60;
const DECISIONS_KEPT_FIRST = 5;
const DECISION_NEWEST_CHARS = 600;

export const NUDGE = "You answered without calling a tool. Continue with a tool call, or call finish if the goal is met and verified.";

/** Tokens of a list of messages as the chat format counts them. */
export function messagesTokens(messages: ChatMessage[], counter: TokenCounter): number {
  let n = 0;
  for (const m of messages) {
    n += MESSAGE_OVERHEAD + counter.count(m.content);
    if (m.role === "assistant" && m.toolCalls?.length) n += counter.count(JSON.stringify(m.toolCalls));
  }
  return n;
}

/** The plan as a checklist. */
export function planLines(subtasks: Subtask[]): string {
  if (subtasks.length === 0) return "(no plan yet)";
  const mark = { pending: "[ ]", in_progress: "[~]", completed: "[x]", blocked: "[!]" } as const;
  return subtasks.map((s) => `- ${mark[s.status]} ${s.id} (${s.status}): ${s.description}`).join("\n");
}

/** Renders one turn as assistant tool calls followed by their results, outputs cut to `cap` chars. */
export function turnMessages(t: Turn, cap: number): ChatMessage[] {
  const msgs: ChatMessage[] = [{ role: "assistant", content: t.call.payload.content, toolCalls: t.call.payload.toolCalls }];
  for (const call of t.call.payload.toolCalls) {
    const action = t.actions.find((a) => a.payload.callId === call.id);
    const fb = action ? t.feedback.get(action.id) : undefined;
    const content = fb
      ? `[${fb.payload.status}${fb.payload.errorClass ? `: ${fb.payload.errorClass}` : ""}] ${capText(fb.payload.output, cap)}`
      : "[no result recorded]";
    msgs.push({ role: "tool", toolCallId: call.id, name: call.name, content });
  }
  return msgs;
}

export const turnSource = (t: Turn) => `turn:step${t.call.payload.turn + 1}:${t.call.id}`;

/** Groups the actions and results of `window` under each decide call. */
export function turnsOf(calls: LedgerEvent<"model_call">[], window: LedgerEvent[]): Turn[] {
  return calls.map((call) => {
    const actions = window.filter((e) => e.type === "agent_action" && e.causedBy === call.id) as LedgerEvent<"agent_action">[];
    const ids = new Set(actions.map((a) => a.id));
    const feedback = new Map<string, LedgerEvent<"environment_feedback">>();
    for (const e of window) {
      if (e.type === "environment_feedback" && e.causedBy && ids.has(e.causedBy)) feedback.set(e.causedBy, e as LedgerEvent<"environment_feedback">);
    }
    return { call, actions, feedback };
  });
}

export interface Section {
  section: string;
  source: string;
  text: string;
}

/**
 * The pinned part: goal and decisions. Decisions are never dropped; when they outgrow their share
 * (or the fixed part outgrows the budget) they are shortened step by step: level 1 cuts all but the
 * newest 10 to 200 chars; level 2 cuts all but the newest 3 to 60 chars, those 3 to 600, and the
 * goal to its first and last 1,000 characters; level 3 (only past 60 decisions) also replaces the
 * middle ones by a pointer to the ledger, keeping the first 5 and the newest 10.
 */
export function pinnedSections(state: TaskStateValue, decisions: LedgerEvent<"decision">[], level: 0 | 1 | 2 | 3): Section[] {
  const goal = level === 2 ? capText(state.goal, GOAL_COMPACT_CHARS) : state.goal;
  const sections: Section[] = [{ section: "goal", source: "state.goal", text: `# Goal\n${goal}` }];
  if (decisions.length) {
    const firstFull = decisions.length - DECISIONS_KEPT_FULL;
    // Level 3 (only past DECISIONS_ELIDE_ABOVE decisions): the first ones (foundations) and the newest
    // stay; the middle is replaced by a pointer to the ledger, counted in the provenance.
    const elide = level === 3 && decisions.length > DECISIONS_ELIDE_ABOVE;
    const lines = decisions.flatMap((d, i) => {
      if (elide && i >= DECISIONS_KEPT_FIRST && i < firstFull) {
        if (i !== DECISIONS_KEPT_FIRST) return [];
        const mid = decisions.slice(DECISIONS_KEPT_FIRST, firstFull);
        return [
          `… ${mid.length} decisions of steps ${mid[0]!.payload.step}-${mid.at(-1)!.payload.step} are in the ledger (ledgerloop ledger <thread> --type decision)`,
        ];
      }
      const newest = decisions.length - i <= 3;
      const limit = level === 0 ? Infinity : level === 1 ? (i >= firstFull ? Infinity : DECISION_COMPACT_CHARS) : newest ? DECISION_NEWEST_CHARS : 60;
      const text = d.payload.text.length > limit ? `${d.payload.text.slice(0, limit - 1)}…` : d.payload.text;
      return [`${i + 1}. (step ${d.payload.step}) ${text}`];
    });
    const note = level > 0 ? " — older ones shortened; the full text is in the ledger" : "";
    sections.push({
      section: "decisions",
      source: `ledger:decision×${decisions.length}${level ? ` (compact ${level})` : ""}`,
      text: `# Decisions (pinned${note})\n${lines.join("\n")}`,
    });
  }
  return sections;
}

/** Step counter, last test run and failure streak: what changes every step. */
export function statusText(state: TaskStateValue, maxSteps: number, lastTests: LedgerEvent<"environment_feedback"> | undefined, repeatLimit = 3): string {
  const status: string[] = [`Step ${state.step + 1} of at most ${maxSteps}.`];
  if (lastTests?.payload.tests) {
    const t = lastTests.payload.tests;
    status.push(
      `Last test run (seq ${lastTests.seq}): ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped${
        t.failedTests.length ? `; failing: ${t.failedTests.slice(0, 10).join(", ")}` : ""
      }.`,
    );
  }
  if (state.failureStreak > 0) status.push(`The last ${state.failureStreak} step(s) failed: change approach if the same error repeats.`);
  if (state.repeatStreak >= repeatLimit) {
    status.push(
      `Your last ${state.repeatStreak} steps made the same call(s) and got the same result(s): doing it again will not change anything. Try something different; the run stops after ${2 * repeatLimit} such steps.`,
    );
  }
  if (state.finishChallenged && lastTests?.payload.tests?.failed) {
    status.push(
      `You called finish, but the last test run failed (${lastTests.payload.tests.failed} failing). Fix the failures and run the tests again; if the task is done anyway, call finish again and it will be taken (the report marks it unverified).`,
    );
  }
  return status.join("\n");
}
