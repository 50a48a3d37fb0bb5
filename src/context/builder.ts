import type { BaseStore } from "@langchain/langgraph-checkpoint";
import type { Ledger } from "../ledger/port.js";
import type { ChatMessage, ToolSpecLike } from "../models/port.js";
import type { CodeSearcher } from "../retrieval/port.js";
import type { ContextItem, LedgerEvent, PromptLayout, TaskStateValue } from "../state.js";
import { Budget, ContextBudgetError, MESSAGE_OVERHEAD } from "./budget.js";
import {
  focusSection,
  historySection,
  memoriesSection,
  recalledSection,
  retrievedSection,
  workQuery,
  workspaceSection,
  writtenContents,
  type ExtrasInput,
} from "./extras.js";
import { lexicalEventSearcher, type EventSearcher } from "./recall.js";
import {
  DECISIONS_SHARE,
  NEWEST_OUTPUT_CHARS,
  NUDGE,
  OLDER_OUTPUT_CHARS,
  SQUEEZED_OUTPUT_CHARS,
  messagesTokens,
  pinnedSections,
  planLines,
  statusText,
  turnMessages,
  turnSource,
  turnsOf,
  type Section,
  type Turn,
} from "./sections.js";
import type { TokenCounter } from "./tokens.js";

export { describeAction } from "./render.js";
export { SECTION_SHARE } from "./extras.js";
export { messagesTokens } from "./sections.js";

export const SYSTEM_PROMPT = `You are a coding agent working in a real workspace through tools. Each step, call one or more tools.
Rules:
- Read before you edit; edit_file needs the exact current text.
- Verify your work: run the tests (run_tests) after changes and fix failures before finishing.
- Record important design decisions with record_decision: they stay visible for the rest of the run.
- Keep the plan current with update_plan; a subtask counts as completed only with evidence (passing tests).
- When the goal is met and verified, call finish with a summary. Do not stop without calling finish.
- Paths are relative to the workspace root; you cannot leave the workspace.`;

/**
 * The prompt layout ("cache", the default) is built for providers' prefix caches:
 *   [system] [pinned: goal, decisions, lessons, summaries] [turn log …] [volatile: status, plan,
 *   workspace, focus files, retrieved code, recalled history]
 * Between compactions a prompt is the previous prompt (its volatile message included, as the model
 * saw it) plus the new turn and a new volatile message that repeats nothing already in the log: each
 * prompt extends the previous one. A compaction (a new summary, or the next step not fitting the
 * budget) writes everything afresh, once, with the recent turns only.
 *
 * At a compaction the budget is shared as follows. The fixed part (instructions, tools, goal,
 * decisions, plan, status) always goes in; the other sections are filled in this order, each up to
 * its share of the whole budget (SECTION_SHARE):
 *   recent turns  — newest first; outputs cut (12k → 3k → 600 chars) before a turn is dropped, and
 *                   once one turn is dropped every older one is dropped too; in the cache layout
 *                   older turns stop at half the budget, to leave the log room to grow;
 *   workspace, focus files, retrieved code, recalled history, memories, history (summaries).
 * Whatever does not fit is listed in `omitted` with its tokens. The "legacy" layout is the one before
 * the cache layout (everything but the turns in the first user message, rebuilt every step); it is
 * kept for measuring against.
 */
export interface BuildInput {
  ledger: Ledger;
  state: TaskStateValue;
  maxSteps: number;
  /** Steps with the same calls and results after which the prompt points the repetition out. */
  repeatLimit?: number;
  budgetTokens: number;
  tools: ToolSpecLike[];
  counter: TokenCounter;
  /** How many recent decide turns a compaction keeps as full tool-call/result pairs. */
  recentTurns?: number;
  /** The run's background processes as the model should see them this step (volatile, with the run status). */
  processes?: string | null;
  /** One-time notes for the model (the run moved to another worker), shown once with the run status. */
  notices?: string | null;
  /** Workspace root, for the focus files. */
  workspace?: string;
  searcher?: CodeSearcher;
  eventSearcher?: EventSearcher;
  store?: BaseStore;
  layout?: "cache" | "legacy";
  /** The previous decide prompt on this branch, to extend. */
  previous?: PreviousPrompt | null;
}

export interface PreviousPrompt {
  messages: ChatMessage[];
  items: ContextItem[];
  layout?: PromptLayout;
}

export interface BuiltPrompt {
  messages: ChatMessage[];
  items: ContextItem[];
  omitted: ContextItem[];
  tokens: number;
  layout: PromptLayout;
}

/** In the cache layout, turns other than the newest may take this share at a compaction. */
const OLDER_TURNS_SHARE = 0.5;
/** Sections of the stable prefix: carried unchanged by an extension. */
const PREFIX_SECTIONS = new Set(["system", "tools", "prefix", "goal", "decisions", "memories", "history"]);

interface Common {
  decisions: LedgerEvent<"decision">[];
  lastTests: LedgerEvent<"environment_feedback"> | undefined;
  lastFailure: LedgerEvent<"environment_feedback"> | undefined;
  summaries: LedgerEvent<"summary">[];
  toolTokens: number;
  /** The newest K decide calls and the events from the oldest of them on. */
  calls: LedgerEvent<"model_call">[];
  window: LedgerEvent[];
}

async function readCommon(input: BuildInput): Promise<Common> {
  const { ledger, state } = input;
  const head = state.ledgerHead;
  const K = input.recentTurns ?? 6;
  const decisions = (await ledger.branch(head, { types: ["decision"] })) as LedgerEvent<"decision">[];
  const feedbackTail = (await ledger.branch(head, { types: ["environment_feedback"], last: 30 })) as LedgerEvent<"environment_feedback">[];
  const summaries = (await ledger.branch(head, { types: ["summary"] })) as LedgerEvent<"summary">[];
  const calls = ((await ledger.branch(head, { types: ["model_call"], last: K * 3 + 4 })) as LedgerEvent<"model_call">[])
    .filter((c) => c.payload.node === "decide")
    .slice(-K);
  const window = calls.length ? await ledger.branch(head, { afterSeq: calls[0]!.seq - 1 }) : [];
  return {
    decisions,
    lastTests: [...feedbackTail].reverse().find((e) => e.payload.tests),
    lastFailure: [...feedbackTail].reverse().find((e) => e.payload.status !== "ok"),
    summaries,
    toolTokens: input.counter.count(JSON.stringify(input.tools)),
    calls,
    window,
  };
}

const joinSections = (parts: Array<string | null>) => parts.filter((p): p is string => !!p).join("\n\n");

/**
 * Assembles one decide prompt under a token budget and lists every included and every left-out
 * piece with its tokens, so the prompt can be explained later. Extends `previous` when it can.
 */
export async function buildPrompt(input: BuildInput): Promise<BuiltPrompt> {
  const layout = input.layout ?? "cache";
  const common = await readCommon(input);
  if (layout === "legacy") return compact(input, common, "legacy", "legacy layout");
  const prev = input.previous;
  let reason = "start";
  if (prev?.layout?.kind === "cache") {
    if (prev.layout.budget !== input.budgetTokens) reason = "budget changed";
    else if (prev.layout.summaries !== common.summaries.length) reason = "summary";
    else {
      const extended = await extend(input, common, prev.messages, prev.items, prev.layout);
      if (typeof extended !== "string") return extended;
      reason = extended;
    }
  }
  return compact(input, common, "cache", reason);
}

/** The fixed part at the mildest decision compaction level that fits (or a clear error). */
function fixedPart(input: BuildInput, c: Common, status: string) {
  const { counter } = input;
  const systemTokens = MESSAGE_OVERHEAD + counter.count(SYSTEM_PROMPT);
  const plan: Section = { section: "plan", source: "state.subtasks", text: `# Plan\n${planLines(input.state.subtasks)}` };
  const stat: Section = { section: "status", source: "state", text: `# Run status\n${status}` };
  const cost = (secs: Section[]) => secs.reduce((n, s) => n + counter.count(s.text) + 2, 2 * MESSAGE_OVERHEAD);
  const decisionTokens = (secs: Section[]) => counter.count(secs.find((s) => s.section === "decisions")?.text ?? "");
  let pinned = pinnedSections(input.state, c.decisions, 0);
  for (const level of [1, 2, 3] as const) {
    const over = systemTokens + c.toolTokens + cost([...pinned, plan, stat]) > input.budgetTokens;
    if (!over && decisionTokens(pinned) <= input.budgetTokens * DECISIONS_SHARE) break;
    pinned = pinnedSections(input.state, c.decisions, level);
  }
  const total = systemTokens + c.toolTokens + cost([...pinned, plan, stat]);
  if (total > input.budgetTokens) {
    throw new ContextBudgetError(
      `the prompt budget (${input.budgetTokens} tokens) is smaller than the fixed part (instructions, tool schemas, goal, plan, ${c.decisions.length} decisions: ${total} tokens); raise --budget`,
    );
  }
  return { systemTokens, pinned, plan, stat };
}

/** Writes the whole prompt afresh: the prefix, the recent turns, the volatile part. */
async function compact(input: BuildInput, c: Common, kind: "cache" | "legacy", reason: string): Promise<BuiltPrompt> {
  const { counter, state } = input;
  const cache = kind === "cache";
  const budget = new Budget(input.budgetTokens);
  const { systemTokens, pinned, plan, stat } = fixedPart(
    input,
    c,
    withProcesses(statusText(state, input.maxSteps, c.lastTests, input.repeatLimit), input.processes, input.notices),
  );
  budget.charge({ section: "system", source: "instructions", tokens: systemTokens });
  budget.charge({ section: "tools", source: `${input.tools.length} tool schemas`, tokens: c.toolTokens });
  budget.charge({ section: cache ? "prefix" : "fixed", source: "user message framing", tokens: MESSAGE_OVERHEAD });
  if (cache) budget.charge({ section: "volatile", source: "volatile message framing", tokens: MESSAGE_OVERHEAD });
  for (const s of [...pinned, plan, stat]) budget.charge({ section: s.section, source: s.source, tokens: counter.count(s.text) + 2 });

  // --- recent turns ------------------------------------------------------------------------------
  const turns = turnsOf(c.calls, c.window);
  const needsNudge = turns.length > 0 && turns.at(-1)!.call.payload.toolCalls.length === 0;
  const nudge: ChatMessage = { role: "user", content: NUDGE };
  if (needsNudge)
    budget.charge({
      section: cache ? "volatile" : "recent",
      source: "continue-nudge",
      tokens: cache ? counter.count(NUDGE) + 2 : messagesTokens([nudge], counter),
    });
  const chosen: Array<{ turn: Turn; msgs: ChatMessage[] }> = [];
  let dropping = false;
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i]!;
    if (dropping) {
      budget.omit({
        section: "recent",
        source: turnSource(turn),
        tokens: messagesTokens(turnMessages(turn, OLDER_OUTPUT_CHARS), counter),
        note: "older than a dropped turn",
      });
      continue;
    }
    const newest = i === turns.length - 1;
    const share = cache && !newest ? OLDER_TURNS_SHARE : 1;
    let cap = newest ? NEWEST_OUTPUT_CHARS : OLDER_OUTPUT_CHARS;
    let msgs = turnMessages(turn, cap);
    let tokens = messagesTokens(msgs, counter);
    while (tokens > budget.room("recent", share) && cap > SQUEEZED_OUTPUT_CHARS) {
      cap = Math.max(SQUEEZED_OUTPUT_CHARS, Math.floor(cap / 3));
      msgs = turnMessages(turn, cap);
      tokens = messagesTokens(msgs, counter);
    }
    const note = cap < OLDER_OUTPUT_CHARS ? `outputs cut to ${cap} chars` : undefined;
    if (budget.take({ section: "recent", source: turnSource(turn), tokens, note }, share)) chosen.unshift({ turn, msgs });
    else dropping = true; // a gap in the chain would mislead: drop everything older too
  }
  const oldestShownSeq = chosen[0]?.turn.call.seq ?? Number.MAX_SAFE_INTEGER;

  // --- optional sections, in budget order; each remembers its items so a late drop can retract them
  // Nothing the turns already show is repeated (a file just read is not shown again as a focus file).
  const turnsText = cache ? chosen.flatMap((ch) => ch.msgs.map((m) => m.content)).join("\n") : "";
  const x = extrasInput(input, c, budget, oldestShownSeq, new Set(c.window.map((e) => e.id)), (t) => cache && turnsText.includes(t));
  if (cache) x.written = writtenContents(chosen.flatMap((ch) => ch.msgs));
  const { current, errorLine, query } = workQuery(state, c.lastFailure);
  const extras: Array<{ place: "prefix" | "volatile"; text: string; items: Array<{ section: string; source: string }> }> = [];
  let mark = budget.items.length;
  const add = (place: "prefix" | "volatile", text: string | null) => {
    if (text) extras.push({ place, text, items: budget.items.slice(mark).map((i) => ({ section: i.section, source: i.source })) });
    mark = budget.items.length;
  };
  add("volatile", await workspaceSection(x));
  const focusShown = new Set<string>();
  add("volatile", focusSection(x, focusShown));
  add("volatile", await retrievedSection(x, query, focusShown));
  add("volatile", await recalledSection(x, query));
  add("prefix", await memoriesSection(x, `${state.goal} ${current?.description ?? ""} ${errorLine}`));
  add("prefix", historySection(x));

  // --- assemble ------------------------------------------------------------------------------------
  const closing = !cache && chosen.length ? "\n\n# Recent steps\nYour most recent tool calls and their results follow." : "";
  if (closing) budget.charge({ section: "fixed", source: "recent-steps header", tokens: counter.count(closing) });
  const assemble = (): ChatMessage[] => {
    const turnsMsgs = chosen.flatMap((ch) => ch.msgs);
    const texts = (place: "prefix" | "volatile") => extras.filter((e) => e.place === place).map((e) => e.text);
    if (!cache) {
      const fixed = [pinned[0]!, plan, ...pinned.slice(1), stat].map((s) => s.text);
      return [
        { role: "system", content: SYSTEM_PROMPT },
        { role: "user", content: [...fixed, ...texts("volatile"), ...texts("prefix")].join("\n\n") + closing },
        ...turnsMsgs,
        ...(needsNudge ? [nudge] : []),
      ];
    }
    return [
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: joinSections([...pinned.map((s) => s.text), ...texts("prefix")]) },
      ...turnsMsgs,
      { role: "user", content: joinSections([stat.text, plan.text, ...texts("volatile"), needsNudge ? NUDGE : null]) },
    ];
  };
  // The parts were counted one by one; BPE merges at the seams can differ by a few tokens. Recount
  // the real messages and, in the rare case that is over, drop optional sections from the end.
  let { messages, actual } = fitByDroppingExtras(assemble, extras, budget, (m) => messagesTokens(m, counter) + c.toolTokens, input.budgetTokens);
  while (actual > input.budgetTokens && chosen.length) {
    budget.retract("recent", turnSource(chosen.shift()!.turn), "dropped after recount");
    messages = assemble();
    actual = messagesTokens(messages, counter) + c.toolTokens;
  }
  const layout: PromptLayout = {
    kind,
    built: "compaction",
    reason,
    prefixMessages: 2,
    logFromSeq: chosen[0]?.turn.call.seq ?? 0,
    logThroughSeq: chosen.at(-1)?.turn.call.seq ?? c.calls.at(-1)?.seq ?? 0,
    summaries: c.summaries.length,
    budget: input.budgetTokens,
  };
  return { messages, items: budget.items, omitted: budget.omitted, tokens: actual, layout };
}

function extrasInput(
  input: BuildInput,
  c: Common,
  budget: Budget,
  oldestShownSeq: number,
  shownEvents: Set<string>,
  seen: (t: string) => boolean,
): ExtrasInput {
  return {
    ledger: input.ledger,
    state: input.state,
    counter: input.counter,
    budget,
    workspace: input.workspace,
    searcher: input.searcher,
    eventSearcher: input.state.ledgerHead ? (input.eventSearcher ?? lexicalEventSearcher(input.ledger, input.state.ledgerHead)) : null,
    store: input.store,
    window: c.window,
    oldestShownSeq,
    shownEvents,
    lastFailure: c.lastFailure,
    summaries: c.summaries,
    seen,
  };
}

/** The newest "# Plan" block shown in these messages (to repeat the plan only when it changed). */
function lastPlanShown(messages: ChatMessage[]): string | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    const at = m.content.lastIndexOf("# Plan\n");
    if (at === -1) continue;
    const end = m.content.indexOf("\n\n", at);
    return m.content.slice(at, end === -1 ? undefined : end);
  }
  return null;
}

/**
 * The previous prompt (its volatile message now part of the log) plus the turns since and a new
 * volatile message. Returns the reason instead when it cannot: that is a compaction.
 */
async function extend(input: BuildInput, c: Common, prevMessages: ChatMessage[], prevItems: ContextItem[], prev: PromptLayout): Promise<BuiltPrompt | string> {
  const { counter, state, ledger } = input;
  const budget = new Budget(input.budgetTokens);
  const newCalls = ((await ledger.branch(state.ledgerHead, { types: ["model_call"], afterSeq: prev.logThroughSeq })) as LedgerEvent<"model_call">[]).filter(
    (e) => e.payload.node === "decide",
  );
  if (!newCalls.length) return "no new turn";
  const window = await ledger.branch(state.ledgerHead, { afterSeq: newCalls[0]!.seq - 1 });
  const turns = turnsOf(newCalls, window);

  for (const it of prevItems) if (PREFIX_SECTIONS.has(it.section) && it.tokens > 0) budget.charge(it);
  const log = prevMessages.slice(prev.prefixMessages);
  budget.charge({ section: "log", source: `turn log since the compaction (${log.length} messages)`, tokens: messagesTokens(log, counter) });
  const added: ChatMessage[] = [];
  for (const [i, turn] of turns.entries()) {
    const msgs = turnMessages(turn, i === turns.length - 1 ? NEWEST_OUTPUT_CHARS : OLDER_OUTPUT_CHARS);
    if (!budget.take({ section: "recent", source: turnSource(turn), tokens: messagesTokens(msgs, counter) })) return "budget";
    added.push(...msgs);
  }
  const logText = [...log, ...added].map((m) => m.content).join("\n");
  const planText = `# Plan\n${planLines(state.subtasks)}`;
  const statText = `# Run status\n${withProcesses(statusText(state, input.maxSteps, c.lastTests, input.repeatLimit), input.processes, input.notices)}`;
  const planChanged = lastPlanShown(log) !== planText;
  const required = planChanged ? [statText, planText] : [statText];
  const needsNudge = turns.at(-1)!.call.payload.toolCalls.length === 0;
  const requiredTokens = MESSAGE_OVERHEAD + required.reduce((n, t) => n + counter.count(t) + 2, 0) + (needsNudge ? counter.count(NUDGE) + 2 : 0);
  if (requiredTokens > budget.remaining()) return "budget";
  budget.charge({
    section: "volatile",
    source: needsNudge ? "message framing, continue-nudge" : "message framing",
    tokens: requiredTokens - (counter.count(statText) + 2) - (planChanged ? counter.count(planText) + 2 : 0),
  });
  budget.charge({ section: "status", source: "state", tokens: counter.count(statText) + 2 });
  // Unchanged plan and decisions recorded since the compaction are in the log: listed, at no cost.
  budget.charge({
    section: "plan",
    source: "state.subtasks",
    tokens: planChanged ? counter.count(planText) + 2 : 0,
    note: planChanged ? undefined : "unchanged: shown earlier in the log",
  });
  const inPrefix = prevItems.find((i) => i.section === "decisions" && i.tokens > 0);
  if (c.decisions.length && !inPrefix)
    budget.charge({ section: "decisions", source: `ledger:decision×${c.decisions.length}`, tokens: 0, note: "recorded since the compaction: in the turn log" });

  const x = extrasInput(input, c, budget, prev.logFromSeq || Number.MAX_SAFE_INTEGER, new Set(), (t) => logText.includes(t));
  x.written = writtenContents([...log, ...added]);
  const { query } = workQuery(state, c.lastFailure);
  const extras: Array<{ text: string; items: Array<{ section: string; source: string }> }> = [];
  let mark = budget.items.length;
  const add = (text: string | null) => {
    if (text) extras.push({ text, items: budget.items.slice(mark).map((i) => ({ section: i.section, source: i.source })) });
    mark = budget.items.length;
  };
  add(await workspaceSection(x));
  const focusShown = new Set<string>();
  add(focusSection(x, focusShown));
  add(await retrievedSection(x, query, focusShown));
  add(await recalledSection(x, query));

  const assemble = (): ChatMessage[] => [
    ...prevMessages,
    ...added,
    { role: "user", content: joinSections([...required, ...extras.map((e) => e.text), needsNudge ? NUDGE : null]) },
  ];
  const { messages, actual } = fitByDroppingExtras(assemble, extras, budget, (m) => messagesTokens(m, counter) + c.toolTokens, input.budgetTokens);
  if (actual > input.budgetTokens) return "budget";
  const layout: PromptLayout = {
    ...prev,
    built: "extension",
    reason: "append",
    logFromSeq: prev.logFromSeq || newCalls[0]!.seq,
    logThroughSeq: newCalls.at(-1)!.seq,
  };
  return { messages, items: budget.items, omitted: budget.omitted, tokens: actual, layout };
}

/**
 * Assembles the messages and, while their recount is over `limit`, drops the optional sections
 * from the end (retracting their items from the budget) and assembles again.
 */
function fitByDroppingExtras(
  assemble: () => ChatMessage[],
  extras: Array<{ items: Array<{ section: string; source: string }> }>,
  budget: Budget,
  count: (messages: ChatMessage[]) => number,
  limit: number,
): { messages: ChatMessage[]; actual: number } {
  let messages = assemble();
  let actual = count(messages);
  while (actual > limit && extras.length) {
    for (const it of extras.pop()!.items) budget.retract(it.section, it.source, "dropped after recount");
    messages = assemble();
    actual = count(messages);
  }
  return { messages, actual };
}

/** The run status followed by the background processes and the one-time notes, when there are any. */
function withProcesses(status: string, processes: string | null | undefined, notices?: string | null): string {
  return [status, processes, notices].filter(Boolean).join("\n\n");
}
