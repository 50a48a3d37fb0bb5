import type { LedgerEvent, Subtask, TaskStateValue } from "../src/state.js";
import { approxTokenCounter } from "../src/context/tokens.js";
import { branchWriter, type NodeDeps, type NodeFn } from "./deps.js";

const FAILED = new Set(["error", "rejected", "interrupted"]);

/** Routing decision after a step, from the updated state and the run's thresholds. */
export function routeAfterStep(
  s: Pick<TaskStateValue, "status" | "failureStreak" | "unsummarizedTokens" | "needsPlan">,
  limits: { failureStreakLimit: number; summarizeThresholdTokens: number },
): TaskStateValue["next"] {
  if (s.status !== "running") return "reflect";
  if (s.failureStreak > 0 && s.failureStreak % limits.failureStreakLimit === 0) return "reflect";
  if (s.needsPlan) return "plan";
  if (s.unsummarizedTokens >= limits.summarizeThresholdTokens) return "summarize";
  return "context";
}

/**
 * Reads the feedback of this step's actions from the ledger and folds it into the small state:
 * plan changes, finish, failure streak, history size, a light workspace snapshot; then picks the
 * next node. Everything is derived from ledger events, so a re-run after a crash computes the same.
 */
export function createObserveNode(deps: NodeDeps): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    const w = branchWriter(rt, state, config, "observe");
    const pending = new Set(state.pendingActions);
    const actions = (await Promise.all(state.pendingActions.map((id) => rt.ledger.get(id)))).filter(Boolean) as LedgerEvent[];
    const fromSeq = Math.min(...actions.map((a) => a.seq), Number.MAX_SAFE_INTEGER);
    const window = actions.length ? await rt.ledger.branch(state.ledgerHead, { afterSeq: fromSeq - 1 }) : [];
    const feedback = window.filter(
      (e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback" && pending.has(e.causedBy ?? ""),
    );
    let subtasks: Subtask[] = state.subtasks;
    let status = state.status;
    let needsPlan = false;
    const created = new Set<string>();
    const modified = new Set<string>();
    const deleted = new Set<string>();
    let historyTokens = 0;
    for (const fb of feedback) {
      historyTokens += approxTokenCounter.count(fb.payload.output);
      for (const f of fb.payload.filesChanged?.created ?? []) created.add(f);
      for (const f of fb.payload.filesChanged?.modified ?? []) modified.add(f);
      for (const f of fb.payload.filesChanged?.deleted ?? []) deleted.add(f);
      for (const effect of fb.payload.effects ?? []) {
        if (effect.kind === "plan") {
          subtasks = effect.subtasks.map((s) => (s.status === "completed" ? { ...s, evidence: s.evidence ?? fb.id } : s));
          needsPlan = subtasks.some((s) => s.status === "blocked");
        } else if (effect.kind === "finish") {
          status = "finished";
          subtasks = subtasks.map((s) => (s.status === "blocked" || s.status === "completed" ? s : { ...s, status: "completed", evidence: fb.id }));
        }
      }
    }
    const allFailed = feedback.length > 0 && feedback.every((f) => FAILED.has(f.payload.status));
    const failureStreak = allFailed ? state.failureStreak + 1 : 0;
    if (created.size + modified.size + deleted.size > 0) {
      await w.append("snapshot", "workspace_snapshot", {
        kind: "light",
        changed: { created: [...created].sort(), modified: [...modified].sort(), deleted: [...deleted].sort() },
        revision: state.workspaceRev,
      });
    }
    if (status === "running" && state.step >= rt.settings.maxSteps) status = "max_steps";
    const unsummarizedTokens = state.unsummarizedTokens + historyTokens + 50 * actions.length;
    const next = routeAfterStep({ status, failureStreak, unsummarizedTokens, needsPlan }, rt.settings);
    return {
      status,
      subtasks,
      failureStreak,
      needsPlan,
      unsummarizedTokens,
      pendingActions: [],
      ledgerHead: w.head,
      next,
    };
  };
}
