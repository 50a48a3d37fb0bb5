import type { ChatMessage } from "../../models/port.js";
import type { LedgerEvent } from "../../state.js";
import { describeAction } from "../../context/builder.js";
import { branchWriter, callModel, callSite, type NodeDeps, type NodeFn } from "./deps.js";

const SUMMARIZE_PROMPT = `Summarise this part of a coding agent's history for its own later use.
Keep, tersely: the goal being pursued, every approach tried and whether it worked, each error met with
its key message, problems still open, and every file and symbol name mentioned. Drop pleasantries.`;

/** Mid-range summaries kept before the oldest are folded into one far summary. */
const MID_KEEP = 4;
const FOLD = 3;

/** Far history: only decisions, test results and the files touched. */
export function farSummary(events: LedgerEvent[]): string {
  const lines: string[] = [];
  const files = new Set<string>();
  let errors = 0;
  for (const e of events) {
    if (e.type === "decision") lines.push(`decision: ${e.payload.text}`);
    else if (e.type === "environment_feedback") {
      const t = e.payload.tests;
      if (t) lines.push(`tests: ${t.passed}✓ ${t.failed}✗${t.failedTests.length ? ` (${t.failedTests.slice(0, 3).join(", ")})` : ""}`);
      if (e.payload.status !== "ok") errors++;
      for (const f of [...(e.payload.filesChanged?.created ?? []), ...(e.payload.filesChanged?.modified ?? [])]) files.add(f);
    }
  }
  if (files.size) lines.push(`files changed: ${[...files].slice(0, 30).join(", ")}`);
  if (errors) lines.push(`${errors} failed action(s)`);
  return lines.join("\n") || "(no decisions or results)";
}

/** An extractive summary: one line per action with its outcome, plus decisions and plan changes. */
export function extractiveSummary(events: LedgerEvent[], maxChars = 2400): string {
  const fb = new Map<string, LedgerEvent<"environment_feedback">>();
  for (const e of events) if (e.type === "environment_feedback" && e.causedBy) fb.set(e.causedBy, e as LedgerEvent<"environment_feedback">);
  const lines: string[] = [];
  for (const e of events) {
    if (e.type === "agent_action") {
      const a = e.payload;
      const f = fb.get(e.id)?.payload;
      let outcome = f ? f.status : "no result";
      if (f?.tests) outcome += ` ${f.tests.passed}✓ ${f.tests.failed}✗${f.tests.failedTests.length ? ` (${f.tests.failedTests.slice(0, 3).join(", ")})` : ""}`;
      else if (f?.errorClass)
        outcome += ` ${f.errorClass}: ${
          f.output
            .split("\n")
            .find((l) => l.trim() && !l.startsWith("$"))
            ?.slice(0, 100) ?? ""
        }`;
      lines.push(`step ${a.step}: ${describeAction(a.tool, a.args)} → ${outcome}`);
    } else if (e.type === "decision") {
      lines.push(`decision: ${e.payload.text}`);
    } else if (e.type === "task_spec") {
      lines.push(`task: ${e.payload.goal.slice(0, 200)}; plan: ${e.payload.subtasks.map((s) => s.id).join(", ")}`);
    } else if (e.type === "plan_update") {
      lines.push(`plan: ${e.payload.subtasks.map((s) => `${s.id}=${s.status}`).join(" ")}`);
    }
  }
  let text = lines.join("\n");
  if (text.length > maxChars) text = `${text.slice(0, maxChars / 2)}\n…\n${text.slice(text.length - maxChars / 2)}`;
  return text;
}

/**
 * Folds the history older than the recent window into a `summary` event that lists exactly the
 * events it covers, so the context node can show the summary instead and expand it back later.
 */
export function createSummarizeNode(deps: NodeDeps): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    const w = branchWriter(rt, state, config, "summarize");
    const K = rt.settings.recentTurns;
    const calls = ((await rt.ledger.branch(state.ledgerHead, { types: ["model_call"], last: K * 3 + 4 })) as LedgerEvent<"model_call">[]).filter(
      (c) => c.payload.node === "decide",
    );
    const recentStart = calls.length >= K ? calls[calls.length - K]!.seq : (calls[0]?.seq ?? Number.MAX_SAFE_INTEGER);
    const range = (await rt.ledger.branch(state.ledgerHead, { afterSeq: state.summarizedThroughSeq })).filter(
      (e) => e.seq < recentStart && e.type !== "context_built" && e.type !== "summary",
    );
    if (range.length === 0) return { unsummarizedTokens: 0, ledgerHead: w.head };
    const extract = extractiveSummary(range);
    const messages: ChatMessage[] = [
      { role: "system", content: SUMMARIZE_PROMPT },
      { role: "user", content: `Goal: ${state.goal}\nHistory (seq ${range[0]!.seq}-${range.at(-1)!.seq}):\n${extract}` },
    ];
    const turn = state.modelTurns.summarize;
    const { response, event } = await callModel(rt, w, "summarize", turn, messages, [], { signal: config.signal, at: callSite(state) });
    const text = event && response.content.trim() ? response.content.trim() : extract;
    const toSeq = range.at(-1)!.seq;
    await w.append("summary", "summary", {
      fromSeq: range[0]!.seq,
      toSeq,
      eventIds: range.map((e) => e.id),
      text,
      tier: "mid",
      source: event && response.content.trim() ? "model" : "deterministic",
    });
    // Far tier: once there are many mid summaries, the oldest are folded into decisions and results only.
    const mids = (await rt.ledger.branch(w.head, { types: ["summary"] })) as LedgerEvent<"summary">[];
    const fars = mids.filter((m) => m.payload.tier === "far");
    const open = mids.filter(
      (m) => m.payload.tier === "mid" && !fars.some((f) => f.payload.fromSeq <= m.payload.fromSeq && m.payload.toSeq <= f.payload.toSeq),
    );
    if (open.length > MID_KEEP) {
      const fold = open.slice(0, FOLD);
      const ids = fold.flatMap((m) => m.payload.eventIds);
      const covered = (await Promise.all(ids.map((id) => rt.ledger.get(id)))).filter((e): e is LedgerEvent => e !== null);
      await w.append("far", "summary", {
        fromSeq: fold[0]!.payload.fromSeq,
        toSeq: fold.at(-1)!.payload.toSeq,
        eventIds: ids,
        text: farSummary(covered),
        tier: "far",
        source: "deterministic",
      });
    }
    rt.progress?.({ node: "summarize", step: state.step, text: `summarised seq ${range[0]!.seq}-${toSeq} (${range.length} events)` });
    return {
      unsummarizedTokens: 0,
      summarizedThroughSeq: toSeq,
      ledgerHead: w.head,
      modelTurns: event ? { ...state.modelTurns, summarize: turn + 1 } : state.modelTurns,
    };
  };
}
