import type { BaseStore } from "@langchain/langgraph-checkpoint";
import type { Ledger } from "../ledger/port.js";
import { recallLessons } from "../memory/lessons.js";
import type { ChatMessage } from "../models/port.js";
import type { CodeSearcher } from "../retrieval/port.js";
import { capText } from "../sandbox/output-cap.js";
import type { LedgerEvent, TaskStateValue } from "../state.js";
import type { Budget } from "./budget.js";
import { focusFiles, readFocusFile, renderWindows, windows } from "./focus.js";
import { eventText, type EventSearcher } from "./recall.js";
import type { TokenCounter } from "./tokens.js";

/**
 * Shares of the whole budget the optional sections may take (see builder.ts for the order):
 *   workspace 5%, focus files 25%, retrieved code 20%, recalled history 10%, memories 8%, history 15%.
 */
export const SECTION_SHARE = { workspace: 0.05, focus: 0.25, retrieved: 0.2, recalled: 0.1, memories: 0.08, history: 0.15 } as const;

/** What the optional sections read. */
export interface ExtrasInput {
  ledger: Ledger;
  state: TaskStateValue;
  counter: TokenCounter;
  budget: Budget;
  workspace?: string;
  searcher?: CodeSearcher;
  eventSearcher: EventSearcher | null;
  store?: BaseStore;
  /** Events of the newest turns: what the focus files come from. */
  window: LedgerEvent[];
  /** Events at or after this seq are shown as turns already. */
  oldestShownSeq: number;
  /** Ids of events shown as turns. */
  shownEvents: Set<string>;
  lastFailure: LedgerEvent<"environment_feedback"> | undefined;
  summaries: LedgerEvent<"summary">[];
  /**
   * True when this exact text is in the prompt already (the turn log since the last compaction):
   * such a part is not repeated, it costs nothing and the model has it.
   */
  seen: (text: string) => boolean;
  /** The content each path was last given by write_file in those turns (the model wrote it: no need to show it back). */
  written?: Map<string, string>;
}

/** The last content written per path by write_file calls in these messages. */
export function writtenContents(messages: ChatMessage[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) {
    if (m.role !== "assistant") continue;
    for (const c of m.toolCalls ?? []) {
      const a = c.args as { path?: unknown; content?: unknown } | undefined;
      if (c.name === "write_file" && typeof a?.path === "string" && typeof a.content === "string") out.set(a.path.replace(/^\.\//, ""), a.content);
    }
  }
  return out;
}

/** The current subtask, the newest error line and the search query made of them. */
export function workQuery(state: TaskStateValue, lastFailure: LedgerEvent<"environment_feedback"> | undefined) {
  const current = state.subtasks.find((s) => s.status === "in_progress") ?? state.subtasks.find((s) => s.status === "pending");
  const errorLine =
    lastFailure?.payload.output
      .split("\n")
      .find((l) => /error|fail|assert|expected/i.test(l))
      ?.slice(0, 200) ?? "";
  // What the work needs now: the current subtask and the latest error. The focus files are already
  // shown, so they are left out of the query: retrieval should bring the *other* relevant code.
  const query = [current?.description ?? state.goal.slice(0, 300), errorLine].filter(Boolean).join(" ");
  return { current, errorLine, query };
}

/** The latest file-tree summary and the files this run changed. */
export async function workspaceSection(x: ExtrasInput): Promise<string | null> {
  const snaps = (await x.ledger.branch(x.state.ledgerHead, { types: ["workspace_snapshot"], last: 40 })) as LedgerEvent<"workspace_snapshot">[];
  if (!snaps.length) return null;
  const withTree = [...snaps].reverse().find((s) => s.payload.tree);
  const touched = new Set<string>();
  for (const s of snaps) for (const f of [...s.payload.changed.created, ...s.payload.changed.modified]) touched.add(f);
  const lines = [
    withTree ? `${withTree.payload.fileCount ?? "?"} files: ${withTree.payload.tree}` : "",
    touched.size ? `Changed recently by this run: ${[...touched].slice(-30).join(", ")}` : "",
  ].filter(Boolean);
  const text = `# Workspace\n${lines.join("\n")}`;
  if (!lines.length || x.seen(text)) return null;
  return x.budget.take({ section: "workspace", source: `snapshot:${snaps.at(-1)!.id}`, tokens: x.counter.count(text) + 1 }, SECTION_SHARE.workspace)
    ? text
    : null;
}

/** The files being worked on, windowed around the touched/failing lines; a file that does not fit is dropped whole. */
export function focusSection(x: ExtrasInput, shown: Set<string>): string | null {
  if (!x.workspace) return null;
  const parts: string[] = [];
  for (const f of focusFiles(x.window, x.workspace)) {
    const text = readFocusFile(x.workspace, f.path);
    if (text === null) continue;
    const rendered = renderWindows(f.path, text, windows(text.split("\n").length, f.lines));
    // The same numbered lines as a read_file result in the log: the model has this content already.
    const body = rendered
      .split("\n")
      .slice(1)
      .join("\n")
      .replace(/\n\s*\d+\| $/, "");
    if (x.seen(rendered) || (body.length > 0 && x.seen(body)) || x.written?.get(f.path) === text) {
      // Listed at no cost, so the prompt still explains which files it is about.
      x.budget.charge({ section: "focus", source: `file:${f.path}`, tokens: 0, note: `${f.why}; current content already in the turn log` });
      shown.add(f.path);
      continue;
    }
    if (x.budget.take({ section: "focus", source: `file:${f.path}`, tokens: x.counter.count(rendered) + 1, note: f.why }, SECTION_SHARE.focus)) {
      parts.push(rendered);
      shown.add(f.path);
    }
  }
  return parts.length ? `# Files you are working on (current content)\n${parts.join("\n\n")}` : null;
}

/** Search hits for the current work that are not shown already; each hit is kept whole or dropped. */
export async function retrievedSection(x: ExtrasInput, query: string, focusShown: Set<string>): Promise<string | null> {
  if (!x.searcher || !x.workspace || !query.trim()) return null;
  const hits = await x.searcher.search(query, 8).catch(() => []);
  const parts: string[] = [];
  for (const h of hits) {
    if (focusShown.has(h.path)) continue;
    // The file as it is now, read like a focus file (the index may be older than a symlink swapped in).
    const current = readFocusFile(x.workspace, h.path, 4 * 1024 * 1024);
    const body =
      current === null
        ? `## ${h.path}:${h.startLine}-${h.endLine}\n${h.preview}`
        : renderWindows(h.path, current, [[h.startLine, Math.min(h.endLine, h.startLine + 39)]]);
    if (x.seen(body)) continue;
    // A source is a score, or (history) the commit subjects that matched.
    const note = h.sources
      ? Object.entries(h.sources)
          .map(([k, v]) => (Array.isArray(v) ? `${k}=${JSON.stringify(v.join(" | ").slice(0, 120))}` : `${k}=${Number(v).toFixed(3)}`))
          .join(" ")
      : undefined;
    const source = `file:${h.path}#L${h.startLine}-${h.endLine}`;
    if (x.budget.take({ section: "retrieved", source, tokens: x.counter.count(body) + 1, score: h.score, note }, SECTION_SHARE.retrieved)) parts.push(body);
  }
  return parts.length ? `# Possibly relevant code (search: ${query.length > 160 ? `${query.slice(0, 157)}...` : query})\n${parts.join("\n\n")}` : null;
}

/** Older events matching the current work, expanded back from their summaries where folded. */
export async function recalledSection(x: ExtrasInput, query: string): Promise<string | null> {
  if (!query.trim() || !x.state.ledgerHead || !x.eventSearcher) return null;
  const summarisedBy = (seq: number) => x.summaries.find((s) => s.payload.fromSeq <= seq && seq <= s.payload.toSeq);
  const hits = await x.eventSearcher.searchEvents(query, 12).catch(() => []);
  const parts: string[] = [];
  for (const h of hits) {
    if (x.shownEvents.has(h.eventId)) continue;
    const e = await x.ledger.get(h.eventId);
    if (!e || e.seq >= x.oldestShownSeq || e.type === "summary") continue;
    // An event with no searchable text (a task_spec: the plan section shows the current one) would
    // be a bare "(seq 1, task_spec)" line: nothing to recall.
    const text = eventText(e).trim();
    if (!text) continue;
    const by = summarisedBy(e.seq);
    const line = `- (seq ${e.seq}, ${e.type}${by ? `, expanded from summary seq ${by.payload.fromSeq}-${by.payload.toSeq}` : ""}) ${capText(text, 600)}`;
    if (x.seen(line)) continue;
    const note = [by ? `expanded from summary ${by.id}` : "", h.note ?? ""].filter(Boolean).join("; ") || undefined;
    if (x.budget.take({ section: "recalled", source: `event:${e.id}`, tokens: x.counter.count(line) + 1, score: h.score, note }, SECTION_SHARE.recalled)) {
      parts.push(line);
      x.shownEvents.add(e.id);
    }
  }
  return parts.length ? `# Earlier events that match the current work\n${parts.join("\n")}` : null;
}

/** Lessons from earlier runs in this workspace. */
export async function memoriesSection(x: ExtrasInput, about: string): Promise<string | null> {
  if (!x.store) return null;
  const lessons = await recallLessons(x.store, about, 6).catch(() => []);
  const parts: string[] = [];
  for (const l of lessons) {
    const line = `- ${l.text}`;
    if (x.budget.take({ section: "memories", source: `memory:${l.key}`, tokens: x.counter.count(line) + 1, score: l.score }, SECTION_SHARE.memories))
      parts.push(line);
  }
  return parts.length ? `# Lessons from earlier runs in this workspace\n${parts.join("\n")}` : null;
}

/** Older history as tiered summaries: far summaries first (compact), then mid-range ones newest first. */
export function historySection(x: ExtrasInput): string | null {
  const older = x.summaries.filter((s) => s.payload.toSeq < x.oldestShownSeq);
  const far = older.filter((s) => s.payload.tier === "far");
  const coveredByFar = (s: LedgerEvent<"summary">) => far.some((f) => f.payload.fromSeq <= s.payload.fromSeq && s.payload.toSeq <= f.payload.toSeq);
  const mid = older.filter((s) => s.payload.tier === "mid" && !coveredByFar(s));
  const histParts: string[] = [];
  for (const s of far) {
    const line = `- (far, seq ${s.payload.fromSeq}-${s.payload.toSeq}) ${s.payload.text}`;
    if (x.budget.take({ section: "history", source: `summary:${s.id}`, tokens: x.counter.count(line) + 1, note: "far" }, SECTION_SHARE.history))
      histParts.push(line);
  }
  const midParts: string[] = [];
  for (let i = mid.length - 1; i >= 0; i--) {
    const s = mid[i]!;
    const line = `- (seq ${s.payload.fromSeq}-${s.payload.toSeq}) ${s.payload.text}`;
    if (x.budget.take({ section: "history", source: `summary:${s.id}`, tokens: x.counter.count(line) + 1, note: "mid" }, SECTION_SHARE.history))
      midParts.unshift(line);
  }
  return histParts.length || midParts.length ? `# Earlier history (summarised)\n${[...histParts, ...midParts].join("\n")}` : null;
}
