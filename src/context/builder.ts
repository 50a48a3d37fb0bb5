import fs from "node:fs";
import path from "node:path";
import type { BaseStore } from "@langchain/langgraph-checkpoint";
import type { Ledger } from "../ledger/port.js";
import { recallLessons } from "../memory/lessons.js";
import type { ChatMessage, ToolSpecLike } from "../models/port.js";
import type { CodeSearcher } from "../retrieval/port.js";
import { capText } from "../sandbox/output-cap.js";
import type { ContextItem, LedgerEvent, Subtask, TaskStateValue } from "../state.js";
import { Budget, ContextBudgetError, MESSAGE_OVERHEAD } from "./budget.js";
import { focusFiles, renderWindows, windows } from "./focus.js";
import { eventText, lexicalEventSearcher, type EventSearcher } from "./recall.js";
import type { TokenCounter } from "./tokens.js";

export { describeAction } from "./render.js";

export const SYSTEM_PROMPT = `You are a coding agent working in a real workspace through tools. Each step, call one or more tools.
Rules:
- Read before you edit; edit_file needs the exact current text.
- Verify your work: run the tests (run_tests) after changes and fix failures before finishing.
- Record important design decisions with record_decision: they stay visible for the rest of the run.
- Keep the plan current with update_plan; a subtask counts as completed only with evidence (passing tests).
- When the goal is met and verified, call finish with a summary. Do not stop without calling finish.
- Paths are relative to the workspace root; you cannot leave the workspace.`;

/**
 * How the budget is shared. The fixed part always goes in; the other sections are filled in this
 * order, each up to its share of the whole budget (or what is left, if less):
 *   recent turns  — no share limit: newest first; outputs cut (12k → 3k → 600 chars) before a turn
 *                   is dropped, and once one turn is dropped every older one is dropped too;
 *   workspace     — 5%: the latest file-tree summary and the files this run changed;
 *   focus files   — 25%: the files being worked on, windowed around the touched/failing lines;
 *                   a file that does not fit is dropped whole;
 *   retrieved code— 20%: search hits for the current subtask, latest error and focus files,
 *                   not already shown; each hit is kept whole or dropped;
 *   recalled history — 10%: older events that match the same query, including events folded into
 *                   a summary (expanded back from it);
 *   memories      — 8%: lessons from earlier runs in this workspace;
 *   history       — 15%: far summaries first (compact), then mid-range summaries newest first.
 * Whatever does not fit is listed in `omitted` with its tokens.
 */
export const SECTION_SHARE = { workspace: 0.05, focus: 0.25, retrieved: 0.2, recalled: 0.1, memories: 0.08, history: 0.15 } as const;

export interface BuildInput {
  ledger: Ledger;
  state: TaskStateValue;
  maxSteps: number;
  budgetTokens: number;
  tools: ToolSpecLike[];
  counter: TokenCounter;
  /** How many recent decide turns are shown as full tool-call/result pairs. */
  recentTurns?: number;
  /** Workspace root, for the focus files. */
  workspace?: string;
  searcher?: CodeSearcher;
  eventSearcher?: EventSearcher;
  store?: BaseStore;
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
const DECISION_COMPACT_CHARS = 200;
const GOAL_COMPACT_CHARS = 2_000;

interface Turn {
  call: LedgerEvent<"model_call">;
  actions: LedgerEvent<"agent_action">[];
  feedback: Map<string, LedgerEvent<"environment_feedback">>;
}

/** Tokens of a list of messages as the chat format counts them. */
export function messagesTokens(messages: ChatMessage[], counter: TokenCounter): number {
  let n = 0;
  for (const m of messages) {
    n += MESSAGE_OVERHEAD + counter.count(m.content);
    if (m.role === "assistant" && m.toolCalls?.length) n += counter.count(JSON.stringify(m.toolCalls));
  }
  return n;
}

function planLines(subtasks: Subtask[]): string {
  if (subtasks.length === 0) return "(no plan yet)";
  const mark = { pending: "[ ]", in_progress: "[~]", completed: "[x]", blocked: "[!]" } as const;
  return subtasks.map((s) => `- ${mark[s.status]} ${s.id} (${s.status}): ${s.description}`).join("\n");
}

/** Renders one turn as assistant tool calls followed by their results, outputs cut to `cap` chars. */
function turnMessages(t: Turn, cap: number): ChatMessage[] {
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

const turnSource = (t: Turn) => `turn:step${t.call.payload.turn + 1}:${t.call.id}`;

/** Decisions may take this share of the budget before older ones are shortened. */
const DECISIONS_SHARE = 0.25;
/** The newest decisions always stay in full. */
const DECISIONS_KEPT_FULL = 10;
/** Past this many decisions the middle ones may be elided (level 3); the first ones always stay. */
const DECISIONS_ELIDE_ABOVE = 60;
const DECISIONS_KEPT_FIRST = 5;
const DECISION_NEWEST_CHARS = 600;

/**
 * The fixed part. Decisions are pinned, so they are never dropped; when they outgrow their share
 * (or the fixed part outgrows the budget) they are shortened step by step: level 1 cuts all but the
 * newest 10 to 200 chars; level 2 cuts all but the newest 3 to 60 chars, those 3 to 600, and the
 * goal to its first and last 1,000 characters; level 3 (only past 60 decisions) also replaces the
 * middle ones by a pointer to the ledger, keeping the first 5 and the newest 10.
 */
function fixedSections(state: TaskStateValue, decisions: LedgerEvent<"decision">[], status: string, level: 0 | 1 | 2 | 3) {
  const goal = level === 2 ? capText(state.goal, GOAL_COMPACT_CHARS) : state.goal;
  const sections: Array<{ section: string; source: string; text: string }> = [
    { section: "goal", source: "state.goal", text: `# Goal\n${goal}` },
    { section: "plan", source: "state.subtasks", text: `# Plan\n${planLines(state.subtasks)}` },
  ];
  if (decisions.length) {
    const firstFull = decisions.length - DECISIONS_KEPT_FULL;
    // Level 3 (only past DECISIONS_ELIDE_ABOVE decisions): the first ones (foundations) and the newest
    // stay; the middle is replaced by a pointer to the ledger, counted in the provenance.
    const elide = level === 3 && decisions.length > DECISIONS_ELIDE_ABOVE;
    const lines = decisions.flatMap((d, i) => {
      if (elide && i >= DECISIONS_KEPT_FIRST && i < firstFull) {
        if (i !== DECISIONS_KEPT_FIRST) return [];
        const mid = decisions.slice(DECISIONS_KEPT_FIRST, firstFull);
        return [`… ${mid.length} decisions of steps ${mid[0]!.payload.step}-${mid.at(-1)!.payload.step} are in the ledger (ledgerloop ledger <thread> --type decision)`];
      }
      const newest = decisions.length - i <= 3;
      const limit =
        level === 0 ? Infinity : level === 1 ? (i >= firstFull ? Infinity : DECISION_COMPACT_CHARS) : newest ? DECISION_NEWEST_CHARS : 60;
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
  sections.push({ section: "status", source: "state", text: `# Run status\n${status}` });
  return sections;
}

/**
 * Assembles one decide prompt under a token budget (see SECTION_SHARE for the rules) and lists
 * every included and every left-out piece with its tokens, so the prompt can be explained later.
 */
export async function buildPrompt(input: BuildInput): Promise<BuiltPrompt> {
  const { ledger, state, counter } = input;
  const head = state.ledgerHead;
  const K = input.recentTurns ?? 6;
  const budget = new Budget(input.budgetTokens);

  const decisions = (await ledger.branch(head, { types: ["decision"] })) as LedgerEvent<"decision">[];
  const feedbackTail = (await ledger.branch(head, { types: ["environment_feedback"], last: 30 })) as LedgerEvent<"environment_feedback">[];
  const lastTests = [...feedbackTail].reverse().find((e) => e.payload.tests);
  const lastFailure = [...feedbackTail].reverse().find((e) => e.payload.status !== "ok");

  // --- fixed part: always present --------------------------------------------------------------
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
  const statusText = status.join("\n");
  const toolTokens = counter.count(JSON.stringify(input.tools));
  const systemTokens = MESSAGE_OVERHEAD + counter.count(SYSTEM_PROMPT);
  const fixedTokens = (secs: ReturnType<typeof fixedSections>) => secs.reduce((n, s) => n + counter.count(s.text) + 2, MESSAGE_OVERHEAD);
  const decisionTokens = (secs: ReturnType<typeof fixedSections>) => counter.count(secs.find((s) => s.section === "decisions")?.text ?? "");
  let fixed = fixedSections(state, decisions, statusText, 0);
  for (const level of [1, 2, 3] as const) {
    const over = systemTokens + toolTokens + fixedTokens(fixed) > input.budgetTokens;
    if (!over && decisionTokens(fixed) <= input.budgetTokens * DECISIONS_SHARE) break;
    fixed = fixedSections(state, decisions, statusText, level);
  }
  const fixedTotal = systemTokens + toolTokens + fixedTokens(fixed);
  if (fixedTotal > input.budgetTokens) {
    throw new ContextBudgetError(
      `the prompt budget (${input.budgetTokens} tokens) is smaller than the fixed part (instructions, tool schemas, goal, plan, ${decisions.length} decisions: ${fixedTotal} tokens); raise --budget`,
    );
  }
  budget.charge({ section: "system", source: "instructions", tokens: systemTokens });
  budget.charge({ section: "tools", source: `${input.tools.length} tool schemas`, tokens: toolTokens });
  budget.charge({ section: "fixed", source: "user message framing", tokens: MESSAGE_OVERHEAD });
  for (const s of fixed) budget.charge({ section: s.section, source: s.source, tokens: counter.count(s.text) + 2 });

  // --- recent turns ------------------------------------------------------------------------------
  const calls = ((await ledger.branch(head, { types: ["model_call"], last: K * 3 + 4 })) as LedgerEvent<"model_call">[])
    .filter((c) => c.payload.node === "decide")
    .slice(-K);
  const turns: Turn[] = [];
  let window: LedgerEvent[] = [];
  if (calls.length) {
    window = await ledger.branch(head, { afterSeq: calls[0]!.seq - 1 });
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
  const nudge: ChatMessage = {
    role: "user",
    content: "You answered without calling a tool. Continue with a tool call, or call finish if the goal is met and verified.",
  };
  const needsNudge = turns.length > 0 && turns.at(-1)!.call.payload.toolCalls.length === 0;
  if (needsNudge) budget.charge({ section: "recent", source: "continue-nudge", tokens: messagesTokens([nudge], counter) });
  const chosen: Array<{ turn: Turn; msgs: ChatMessage[] }> = [];
  let dropping = false;
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i]!;
    if (dropping) {
      budget.omit({ section: "recent", source: turnSource(turn), tokens: messagesTokens(turnMessages(turn, OLDER_OUTPUT_CHARS), counter), note: "older than a dropped turn" });
      continue;
    }
    let cap = i === turns.length - 1 ? NEWEST_OUTPUT_CHARS : OLDER_OUTPUT_CHARS;
    let msgs = turnMessages(turn, cap);
    let tokens = messagesTokens(msgs, counter);
    while (tokens > budget.remaining() && cap > SQUEEZED_OUTPUT_CHARS) {
      cap = Math.max(SQUEEZED_OUTPUT_CHARS, Math.floor(cap / 3));
      msgs = turnMessages(turn, cap);
      tokens = messagesTokens(msgs, counter);
    }
    const note = cap < OLDER_OUTPUT_CHARS ? `outputs cut to ${cap} chars` : undefined;
    if (budget.take({ section: "recent", source: turnSource(turn), tokens, note })) chosen.unshift({ turn, msgs });
    else dropping = true; // a gap in the chain would mislead: drop everything older too
  }
  const shownEvents = new Set(window.map((e) => e.id));
  const oldestShownSeq = chosen[0]?.turn.call.seq ?? Number.MAX_SAFE_INTEGER;

  const extra: string[] = [];
  // For each extra section, the budget items it holds (so a late drop can retract them).
  const extraSources: Array<Array<{ section: string; source: string }>> = [];
  let mark = budget.items.length;
  const pushExtra = (text: string) => {
    extra.push(text);
    extraSources.push(budget.items.slice(mark).map((i) => ({ section: i.section, source: i.source })));
    mark = budget.items.length;
  };

  // --- workspace summary ---------------------------------------------------------------------------
  const snaps = (await ledger.branch(head, { types: ["workspace_snapshot"], last: 40 })) as LedgerEvent<"workspace_snapshot">[];
  if (snaps.length) {
    const withTree = [...snaps].reverse().find((s) => s.payload.tree);
    const touched = new Set<string>();
    for (const s of snaps) for (const f of [...s.payload.changed.created, ...s.payload.changed.modified]) touched.add(f);
    const lines = [
      withTree ? `${withTree.payload.fileCount ?? "?"} files: ${withTree.payload.tree}` : "",
      touched.size ? `Changed recently by this run: ${[...touched].slice(-30).join(", ")}` : "",
    ].filter(Boolean);
    const text = `# Workspace\n${lines.join("\n")}`;
    if (lines.length && budget.take({ section: "workspace", source: `snapshot:${snaps.at(-1)!.id}`, tokens: counter.count(text) + 1 }, SECTION_SHARE.workspace)) {
      pushExtra(text);
    }
  }

  // --- focus files -------------------------------------------------------------------------------
  const focusShown = new Set<string>();
  if (input.workspace) {
    const recent = window.length ? window : await ledger.branch(head, { last: 60 });
    const parts: string[] = [];
    for (const f of focusFiles(recent, input.workspace)) {
      let text: string;
      try {
        const abs = path.join(input.workspace, f.path);
        if (fs.statSync(abs).size > 512 * 1024) continue;
        text = fs.readFileSync(abs, "utf8");
      } catch {
        continue;
      }
      if (text.includes("\u0000")) continue;
      const rendered = renderWindows(f.path, text, windows(text.split("\n").length, f.lines));
      const tokens = counter.count(rendered) + 1;
      if (budget.take({ section: "focus", source: `file:${f.path}`, tokens, note: f.why }, SECTION_SHARE.focus)) {
        parts.push(rendered);
        focusShown.add(f.path);
      }
    }
    if (parts.length) pushExtra(`# Files you are working on (current content)\n${parts.join("\n\n")}`);
  }

  // --- retrieved code ----------------------------------------------------------------------------
  const current = state.subtasks.find((s) => s.status === "in_progress") ?? state.subtasks.find((s) => s.status === "pending");
  const errorLine = lastFailure?.payload.output.split("\n").find((l) => /error|fail|assert|expected/i.test(l))?.slice(0, 200) ?? "";
  // What the work needs now: the current subtask and the latest error. The focus files are already
  // shown, so they are left out of the query: retrieval should bring the *other* relevant code.
  const query = [current?.description ?? state.goal.slice(0, 300), errorLine].filter(Boolean).join(" ");
  if (input.searcher && input.workspace && query.trim()) {
    const hits = await input.searcher.search(query, 8).catch(() => []);
    const parts: string[] = [];
    for (const h of hits) {
      if (focusShown.has(h.path)) continue;
      let body = h.preview;
      try {
        const lines = fs.readFileSync(path.join(input.workspace, h.path), "utf8").split("\n");
        const end = Math.min(h.endLine, h.startLine + 39);
        body = renderWindows(h.path, lines.join("\n"), [[h.startLine, end]]);
      } catch {
        body = `## ${h.path}:${h.startLine}-${h.endLine}\n${h.preview}`;
      }
      const tokens = counter.count(body) + 1;
      const note = h.sources ? Object.entries(h.sources).map(([k, v]) => (Array.isArray(v) ? `${k}=${JSON.stringify(v.join(" | ").slice(0, 120))}` : `${k}=${Number(v).toFixed(3)}`)).join(" ") : undefined;
      if (budget.take({ section: "retrieved", source: `file:${h.path}#L${h.startLine}-${h.endLine}`, tokens, score: h.score, note }, SECTION_SHARE.retrieved)) {
        parts.push(body);
      }
    }
    if (parts.length) pushExtra(`# Possibly relevant code (search: ${query.length > 160 ? `${query.slice(0, 157)}...` : query})\n${parts.join("\n\n")}`);
  }

  // --- recalled history (reversible summaries) ------------------------------------------------
  const summaries = (await ledger.branch(head, { types: ["summary"] })) as LedgerEvent<"summary">[];
  const summarisedBy = (seq: number) => summaries.find((s) => s.payload.fromSeq <= seq && seq <= s.payload.toSeq);
  if (query.trim() && head) {
    const searcher = input.eventSearcher ?? lexicalEventSearcher(ledger, head);
    const hits = await searcher.searchEvents(query, 12).catch(() => []);
    const parts: string[] = [];
    for (const h of hits) {
      if (shownEvents.has(h.eventId)) continue;
      const e = await ledger.get(h.eventId);
      if (!e || e.seq >= oldestShownSeq || e.type === "summary") continue;
      const by = summarisedBy(e.seq);
      const line = `- (seq ${e.seq}, ${e.type}${by ? `, expanded from summary seq ${by.payload.fromSeq}-${by.payload.toSeq}` : ""}) ${capText(eventText(e), 600)}`;
      if (budget.take({ section: "recalled", source: `event:${e.id}`, tokens: counter.count(line) + 1, score: h.score, note: by ? `expanded from summary ${by.id}` : undefined }, SECTION_SHARE.recalled)) {
        parts.push(line);
        shownEvents.add(e.id);
      }
    }
    if (parts.length) pushExtra(`# Earlier events that match the current work\n${parts.join("\n")}`);
  }

  // --- long-term memories ------------------------------------------------------------------------
  if (input.store) {
    const lessons = await recallLessons(input.store, `${state.goal} ${current?.description ?? ""} ${errorLine}`, 6).catch(() => []);
    const parts: string[] = [];
    for (const l of lessons) {
      const line = `- ${l.text}`;
      if (budget.take({ section: "memories", source: `memory:${l.key}`, tokens: counter.count(line) + 1, score: l.score }, SECTION_SHARE.memories)) parts.push(line);
    }
    if (parts.length) pushExtra(`# Lessons from earlier runs in this workspace\n${parts.join("\n")}`);
  }

  // --- older history as tiered summaries ---------------------------------------------------------
  const older = summaries.filter((s) => s.payload.toSeq < oldestShownSeq);
  const far = older.filter((s) => s.payload.tier === "far");
  const coveredByFar = (s: LedgerEvent<"summary">) => far.some((f) => f.payload.fromSeq <= s.payload.fromSeq && s.payload.toSeq <= f.payload.toSeq);
  const mid = older.filter((s) => s.payload.tier === "mid" && !coveredByFar(s));
  const histParts: string[] = [];
  for (const s of far) {
    const line = `- (far, seq ${s.payload.fromSeq}-${s.payload.toSeq}) ${s.payload.text}`;
    if (budget.take({ section: "history", source: `summary:${s.id}`, tokens: counter.count(line) + 1, note: "far" }, SECTION_SHARE.history)) histParts.push(line);
  }
  const midParts: string[] = [];
  for (let i = mid.length - 1; i >= 0; i--) {
    const s = mid[i]!;
    const line = `- (seq ${s.payload.fromSeq}-${s.payload.toSeq}) ${s.payload.text}`;
    if (budget.take({ section: "history", source: `summary:${s.id}`, tokens: counter.count(line) + 1, note: "mid" }, SECTION_SHARE.history)) midParts.unshift(line);
  }
  if (histParts.length || midParts.length) pushExtra(`# Earlier history (summarised)\n${[...histParts, ...midParts].join("\n")}`);

  // --- assemble ------------------------------------------------------------------------------------
  const closing = chosen.length ? "\n\n# Recent steps\nYour most recent tool calls and their results follow." : "";
  if (closing) budget.charge({ section: "fixed", source: "recent-steps header", tokens: counter.count(closing) });
  const assemble = (): ChatMessage[] => [
    { role: "system", content: SYSTEM_PROMPT },
    { role: "user", content: [...fixed.map((s) => s.text), ...extra].join("\n\n") + closing },
    ...chosen.flatMap((c) => c.msgs),
    ...(needsNudge ? [nudge] : []),
  ];
  let messages = assemble();
  // The parts were counted one by one; BPE merges at the seams can differ by a few tokens. Recount
  // the real messages and, in the rare case that is over, drop optional sections from the end.
  let actual = messagesTokens(messages, counter) + toolTokens;
  while (actual > input.budgetTokens && extra.length) {
    extra.pop();
    for (const source of extraSources.pop() ?? []) budget.retract(source.section, source.source, "dropped after recount");
    messages = assemble();
    actual = messagesTokens(messages, counter) + toolTokens;
  }
  while (actual > input.budgetTokens && chosen.length) {
    const dropped = chosen.shift()!;
    budget.retract("recent", turnSource(dropped.turn), "dropped after recount");
    messages = assemble();
    actual = messagesTokens(messages, counter) + toolTokens;
  }
  return { messages, items: budget.items, omitted: budget.omitted, tokens: actual };
}
