import type { Ledger } from "../ledger/port.js";
import type { ChatMessage, ToolSpecLike } from "../models/port.js";
import { capText } from "../sandbox/output-cap.js";
import type { ContextItem, LedgerEvent, Subtask, TaskStateValue } from "../state.js";
import { approxTokenCounter, type TokenCounter } from "./tokens.js";

export const SYSTEM_PROMPT = `You are a coding agent working in a real workspace through tools. Each step, call one or more tools.
Rules:
- Read before you edit; edit_file needs the exact current text.
- Verify your work: run the tests (run_tests) after changes and fix failures before finishing.
- Record important design decisions with record_decision: they stay visible for the rest of the run.
- Keep the plan current with update_plan.
- When the goal is met and verified, call finish with a summary. Do not stop without calling finish.
- Paths are relative to the workspace root; you cannot leave the workspace.`;

export interface BuildInput {
  ledger: Ledger;
  state: TaskStateValue;
  maxSteps: number;
  budgetTokens: number;
  tools: ToolSpecLike[];
  /** How many recent decide turns are shown as full tool-call/result pairs. */
  recentTurns?: number;
  counter?: TokenCounter;
}

export interface BuiltPrompt {
  messages: ChatMessage[];
  items: ContextItem[];
  omitted: ContextItem[];
  tokens: number;
}

const NEWEST_OUTPUT_CHARS = 12_000;
const OLDER_OUTPUT_CHARS = 3_000;
const SQUEEZED_OUTPUT_CHARS = 600;

interface Turn {
  call: LedgerEvent<"model_call">;
  actions: LedgerEvent<"agent_action">[];
  feedback: Map<string, LedgerEvent<"environment_feedback">>;
}

function planLines(subtasks: Subtask[]): string {
  if (subtasks.length === 0) return "(no plan yet)";
  const mark = { pending: "[ ]", in_progress: "[~]", completed: "[x]", blocked: "[!]" } as const;
  return subtasks.map((s) => `- ${mark[s.status]} ${s.id} (${s.status}): ${s.description}`).join("\n");
}

function describeArgs(tool: string, args: unknown): string {
  if (!args || typeof args !== "object") return "";
  const a = args as Record<string, unknown>;
  if (typeof a.path === "string") return a.path;
  if (typeof a.command === "string") return a.command.slice(0, 120);
  if (typeof a.query === "string") return a.query;
  return tool === "update_plan" ? "plan" : "";
}

/** Renders one turn as assistant tool calls followed by their results, outputs cut to `cap` chars. */
function turnMessages(t: Turn, cap: number): ChatMessage[] {
  const msgs: ChatMessage[] = [
    { role: "assistant", content: t.call.payload.content, toolCalls: t.call.payload.toolCalls },
  ];
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

/**
 * Assembles one decide prompt under a token budget: the fixed part (instructions, goal, plan,
 * pinned decisions, run status) always; then the most recent turns in full, newest first, cutting
 * older outputs before dropping whole turns; then summaries of older history. Every included and
 * every left-out piece is listed with its tokens so the prompt can be explained afterwards.
 */
export async function buildPrompt(input: BuildInput): Promise<BuiltPrompt> {
  const { ledger, state } = input;
  const counter = input.counter ?? approxTokenCounter;
  const head = state.ledgerHead;
  const K = input.recentTurns ?? 6;
  const items: ContextItem[] = [];
  const omitted: ContextItem[] = [];
  const tok = (s: string) => counter.count(s);

  const decisions = (await ledger.branch(head, { types: ["decision"] })) as LedgerEvent<"decision">[];
  const feedbackTail = (await ledger.branch(head, { types: ["environment_feedback"], last: 30 })) as LedgerEvent<"environment_feedback">[];
  const lastTests = [...feedbackTail].reverse().find((e) => e.payload.tests);
  const snapshots = (await ledger.branch(head, { types: ["workspace_snapshot"], last: 50 })) as LedgerEvent<"workspace_snapshot">[];
  const summaries = (await ledger.branch(head, { types: ["summary"], last: 10 })) as LedgerEvent<"summary">[];

  // --- fixed part -------------------------------------------------------------------------------
  const status: string[] = [`Step ${state.step + 1} of at most ${input.maxSteps}.`];
  if (lastTests?.payload.tests) {
    const t = lastTests.payload.tests;
    status.push(
      `Last test run (seq ${lastTests.seq}): ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped${
        t.failedTests.length ? `; failing: ${t.failedTests.slice(0, 10).join(", ")}` : ""
      }.`,
    );
  }
  if (state.failureStreak > 0) status.push(`The last ${state.failureStreak} step(s) failed: change approach if the same error repeats.`);
  const sections: Array<[string, string, string]> = [
    ["goal", "state.goal", `# Goal\n${state.goal}`],
    ["plan", "state.subtasks", `# Plan\n${planLines(state.subtasks)}`],
  ];
  if (decisions.length) {
    sections.push([
      "decisions",
      `ledger:decision×${decisions.length}`,
      `# Decisions (pinned)\n${decisions.map((d, i) => `${i + 1}. (step ${d.payload.step}) ${d.payload.text}`).join("\n")}`,
    ]);
  }
  sections.push(["status", "state", `# Run status\n${status.join("\n")}`]);
  let fixedText = sections.map((s) => s[2]).join("\n\n");
  const toolTokens = tok(JSON.stringify(input.tools));
  items.push({ section: "system", source: "instructions", tokens: tok(SYSTEM_PROMPT) });
  items.push({ section: "tools", source: `${input.tools.length} tool schemas`, tokens: toolTokens });
  for (const [section, source, text] of sections) items.push({ section, source, tokens: tok(text) });
  let used = items.reduce((n, i) => n + i.tokens, 0);
  let remaining = input.budgetTokens - used;

  // --- recent turns -------------------------------------------------------------------------------
  const calls = ((await ledger.branch(head, { types: ["model_call"], last: K * 3 + 4 })) as LedgerEvent<"model_call">[])
    .filter((c) => c.payload.node === "decide")
    .slice(-K);
  const turns: Turn[] = [];
  if (calls.length) {
    const window = await ledger.branch(head, { afterSeq: calls[0]!.seq - 1 });
    for (const call of calls) {
      const actions = window.filter((e) => e.type === "agent_action" && e.causedBy === call.id) as LedgerEvent<"agent_action">[];
      const ids = new Set(actions.map((a) => a.id));
      const feedback = new Map<string, LedgerEvent<"environment_feedback">>();
      for (const e of window) {
        if (e.type === "environment_feedback" && e.causedBy && ids.has(e.causedBy)) feedback.set(e.causedBy, e as LedgerEvent<"environment_feedback">);
      }
      turns.push({ call, actions, feedback });
    }
  }
  // Newest first: the newest turn keeps the most output; older ones are cut, then squeezed, then dropped.
  const chosen: Array<{ turn: Turn; msgs: ChatMessage[]; tokens: number; cap: number }> = [];
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i]!;
    const newest = i === turns.length - 1;
    let cap = newest ? NEWEST_OUTPUT_CHARS : OLDER_OUTPUT_CHARS;
    let msgs = turnMessages(turn, cap);
    let tokens = tok(JSON.stringify(msgs));
    while (tokens > remaining && cap > SQUEEZED_OUTPUT_CHARS) {
      cap = Math.max(SQUEEZED_OUTPUT_CHARS, Math.floor(cap / 3));
      msgs = turnMessages(turn, cap);
      tokens = tok(JSON.stringify(msgs));
    }
    const source = `turn:step${turn.call.payload.turn + 1}:seq${turn.call.seq}`;
    if (tokens > remaining) {
      omitted.push({ section: "recent", source, tokens, note: "over budget: turn dropped" });
      // Once a turn does not fit, older ones are dropped too: a gap in the chain would mislead.
      for (let j = i - 1; j >= 0; j--) {
        const t = turns[j]!;
        omitted.push({
          section: "recent",
          source: `turn:step${t.call.payload.turn + 1}:seq${t.call.seq}`,
          tokens: tok(JSON.stringify(turnMessages(t, OLDER_OUTPUT_CHARS))),
          note: "older than a dropped turn",
        });
      }
      break;
    }
    chosen.unshift({ turn, msgs, tokens, cap });
    remaining -= tokens;
  }
  for (const c of chosen) {
    items.push({
      section: "recent",
      source: `turn:step${c.turn.call.payload.turn + 1}:seq${c.turn.call.seq}`,
      tokens: c.tokens,
      note: c.cap < OLDER_OUTPUT_CHARS ? `outputs cut to ${c.cap} chars` : undefined,
    });
  }

  // --- workspace and older history ---------------------------------------------------------------
  const extra: string[] = [];
  const changed = new Set<string>();
  for (const s of snapshots) for (const f of [...s.payload.changed.created, ...s.payload.changed.modified]) changed.add(f);
  if (changed.size) {
    const list = [...changed].slice(-40);
    const text = `# Workspace\nFiles this run created or modified: ${list.join(", ")}`;
    const t = tok(text);
    if (t <= remaining) {
      extra.push(text);
      items.push({ section: "workspace", source: `ledger:workspace_snapshot×${snapshots.length}`, tokens: t });
      remaining -= t;
    } else omitted.push({ section: "workspace", source: "workspace_snapshot", tokens: t, note: "over budget" });
  }
  const oldestShownSeq = chosen[0]?.turn.call.seq ?? Number.MAX_SAFE_INTEGER;
  const relevant = summaries.filter((s) => s.payload.fromSeq < oldestShownSeq);
  const keptSummaries: string[] = [];
  for (let i = relevant.length - 1; i >= 0; i--) {
    const s = relevant[i]!;
    const text = `- (seq ${s.payload.fromSeq}-${s.payload.toSeq}) ${s.payload.text}`;
    const t = tok(text);
    const source = `summary:${s.id}`;
    if (t <= remaining) {
      keptSummaries.unshift(text);
      items.push({ section: "history", source, tokens: t });
      remaining -= t;
    } else omitted.push({ section: "history", source, tokens: t, note: "over budget" });
  }
  if (keptSummaries.length) extra.push(`# Earlier history (summarised)\n${keptSummaries.join("\n")}`);

  fixedText = [fixedText, ...extra].join("\n\n");
  if (chosen.length) fixedText += "\n\n# Recent steps\nYour most recent tool calls and their results follow.";
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM_PROMPT },
    { role: "user", content: fixedText },
    ...chosen.flatMap((c) => c.msgs),
  ];
  const last = chosen.at(-1);
  if (last && last.turn.call.payload.toolCalls.length === 0) {
    messages.push({
      role: "user",
      content: "You answered without calling a tool. Continue with a tool call, or call finish if the goal is met and verified.",
    });
  }
  used = input.budgetTokens - remaining;
  return { messages, items, omitted, tokens: used };
}

/** A one-line description of an action, for progress output and summaries. */
export function describeAction(tool: string, args: unknown): string {
  const what = describeArgs(tool, args);
  return what ? `${tool}(${what})` : tool;
}
