import { createHash } from "node:crypto";
import type { LedgerEvent, Subtask, TaskStateValue } from "../../state.js";
import { declaredPackages, expectedEnvNames, treeSummary } from "../../workspace/snapshot.js";
import { branchWriter, type NodeDeps, type NodeFn } from "./deps.js";

const FAILED = new Set(["error", "rejected", "interrupted"]);

type Route = Pick<TaskStateValue, "next" | "reflectTrigger">;

/** Routing after a step, from the updated state and the run's thresholds. */
export function routeAfterStep(
  s: Pick<TaskStateValue, "status" | "failureStreak" | "unsummarizedTokens" | "needsPlan"> & { repeatStreak?: number },
  limits: { failureStreakLimit: number; summarizeThresholdTokens: number; repeatLimit?: number },
  newlyCompleted: number,
): Route {
  if (s.status !== "running") return { next: "reflect", reflectTrigger: "end_of_run" };
  if (limits.repeatLimit && s.repeatStreak === limits.repeatLimit) return { next: "reflect", reflectTrigger: "repetition" };
  if (s.failureStreak > 0 && s.failureStreak % limits.failureStreakLimit === 0) return { next: "reflect", reflectTrigger: "failure_streak" };
  if (newlyCompleted > 0) return { next: "reflect", reflectTrigger: "subtask_completed" };
  if (s.needsPlan) return { next: "plan", reflectTrigger: null };
  if (s.unsummarizedTokens >= limits.summarizeThresholdTokens) return { next: "summarize", reflectTrigger: null };
  return { next: "context", reflectTrigger: null };
}

/**
 * What a step did, as a fingerprint: its calls (tool and arguments) and their results, in order. Two
 * steps with the same fingerprint changed nothing the model could learn from. A command's result is
 * its exit and its output, not the rendered text, whose duration ("0.04 s") differs between two runs
 * of the same command: with it, a loop on one failing command went unnoticed whenever the timings
 * differed, and was caught when they happened to match.
 */
export function stepSignature(actions: LedgerEvent[], feedback: LedgerEvent<"environment_feedback">[]): string {
  const h = createHash("sha256");
  for (const a of actions) {
    if (a.type !== "agent_action") continue;
    const fb = feedback.find((f) => f.causedBy === a.id)?.payload;
    const result =
      fb?.stdout !== undefined || fb?.stderr !== undefined ? [fb.exitCode ?? null, fb.signal ?? null, fb.stdout ?? "", fb.stderr ?? ""] : (fb?.output ?? null);
    h.update(JSON.stringify([a.payload.tool, a.payload.args ?? a.payload.argsText ?? null, fb?.status ?? null, result]));
    h.update("\0");
  }
  return h.digest("hex").slice(0, 16);
}

/** The latest test run on the branch, if it passed: the evidence a subtask needs to be completed. */
function passingEvidence(feedback: LedgerEvent<"environment_feedback">[]): LedgerEvent<"environment_feedback"> | null {
  const lastRun = [...feedback].reverse().find((f) => f.payload.tests);
  const t = lastRun?.payload.tests;
  return lastRun && t && t.failed === 0 && t.passed > 0 && lastRun.payload.status === "ok" ? lastRun : null;
}

/**
 * Applies a proposed plan. A subtask moves to completed only with evidence: the latest test run
 * passed (its feedback is linked), or the run finishes. Unproven completions are refused and stay
 * in progress, and the refusal is recorded for the model to see.
 */
export function acceptPlan(
  previous: Subtask[],
  proposed: Subtask[],
  evidence: LedgerEvent<"environment_feedback"> | null,
): { subtasks: Subtask[]; refused: string[] } {
  const before = new Map(previous.map((s) => [s.id, s]));
  const refused: string[] = [];
  const subtasks = proposed.map((s): Subtask => {
    const prev = before.get(s.id);
    if (s.status !== "completed") return { id: s.id, description: s.description, status: s.status };
    if (prev?.status === "completed") return prev;
    if (evidence) return { id: s.id, description: s.description, status: "completed", evidence: evidence.id };
    refused.push(s.id);
    return { id: s.id, description: s.description, status: "in_progress" };
  });
  return { subtasks, refused };
}

/**
 * Reads the feedback of this step's actions from the ledger and folds it into the small state:
 * plan changes (with evidence), finish, failure streak, history size, a light workspace snapshot;
 * then picks the next node. Everything is derived from ledger events, so a re-run after a crash
 * computes the same.
 */
export function createObserveNode(deps: NodeDeps): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    const w = branchWriter(rt, state, config, "observe");
    const pending = new Set(state.pendingActions);
    const actions = (await Promise.all(state.pendingActions.map((id) => rt.ledger.get(id)))).filter(Boolean) as LedgerEvent[];
    const fromSeq = Math.min(...actions.map((a) => a.seq), Number.MAX_SAFE_INTEGER);
    const window = actions.length ? await rt.ledger.branch(state.ledgerHead, { afterSeq: fromSeq - 1 }) : [];
    const feedback = window.filter((e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback" && pending.has(e.causedBy ?? ""));
    const recentRuns = (await rt.ledger.branch(state.ledgerHead, { types: ["environment_feedback"], last: 40 })) as LedgerEvent<"environment_feedback">[];
    let subtasks: Subtask[] = state.subtasks;
    let status = state.status;
    let needsPlan = false;
    let summary = state.summary;
    let historyTokens = 0;
    let finishChallenged = false;
    for (const fb of feedback) {
      historyTokens += rt.counter.count(fb.payload.output);
      for (const [j, effect] of (fb.payload.effects ?? []).entries()) {
        if (effect.kind === "plan") {
          const evidence = passingEvidence(recentRuns.filter((r) => r.seq <= fb.seq));
          const accepted = acceptPlan(subtasks, effect.subtasks, evidence);
          subtasks = accepted.subtasks;
          needsPlan = subtasks.some((s) => s.status === "blocked");
          const reason = accepted.refused.length
            ? `update_plan; completion refused for ${accepted.refused.join(", ")}: no passing test run yet (run the tests, or finish)`
            : "update_plan";
          await w.append(`plan/${fb.id}/${j}`, "plan_update", { subtasks, reason, evidence: evidence?.id }, fb.causedBy);
        } else if (effect.kind === "finish") {
          // A finish while the last test run failed is taken only when the model says it again,
          // having been shown the failures (statusText): the report marks such a finish unverified.
          const lastTests = [...recentRuns].reverse().find((r) => r.seq <= fb.seq && r.payload.tests)?.payload.tests;
          if (lastTests && lastTests.failed > 0 && !state.finishChallenged && !finishChallenged) {
            finishChallenged = true;
            continue;
          }
          status = "finished";
          summary = effect.summary;
          const done = subtasks.map((s): Subtask => (s.status === "blocked" || s.status === "completed" ? s : { ...s, status: "completed", evidence: fb.id }));
          if (done.some((s, i) => s !== subtasks[i])) {
            subtasks = done;
            await w.append(`plan/${fb.id}/${j}`, "plan_update", { subtasks, reason: "finish", evidence: fb.id }, fb.causedBy);
          }
        }
      }
    }
    const newlyCompleted = subtasks.filter((s) => s.status === "completed" && !state.subtasks.some((p) => p.id === s.id && p.status === "completed")).length;
    const allFailed = feedback.length > 0 && feedback.every((f) => FAILED.has(f.payload.status));
    const failureStreak = allFailed ? state.failureStreak + 1 : 0;
    // Milestones get a deep snapshot: what a model needs to know about the project at that point.
    const tests = [...recentRuns].reverse().find((r) => r.payload.tests)?.payload.tests ?? null;
    const testsNowPass = feedback.some((f) => f.payload.tests && f.payload.tests.failed === 0 && f.payload.tests.passed > 0);
    const milestone = status === "finished" ? "finished" : newlyCompleted > 0 ? "subtask completed" : testsNowPass ? "tests passing" : null;
    if (milestone && state.workspaceRev) {
      const files = [...rt.revisions.files(state.workspaceRev).keys()];
      await w.append("deep-snapshot", "workspace_snapshot", {
        kind: "deep",
        changed: { created: [], modified: [], deleted: [] },
        revision: state.workspaceRev,
        fileCount: files.length,
        tree: treeSummary(files),
        milestone,
        packages: declaredPackages(rt.workspace),
        envNames: expectedEnvNames(rt.workspace),
        lastTests: tests,
      });
    }
    const sig = stepSignature(actions, feedback);
    const repeatStreak = sig === state.lastStepSig ? state.repeatStreak + 1 : 1;
    let endReason = state.endReason;
    if (status === "running" && repeatStreak >= 2 * rt.settings.repeatLimit) {
      status = "no_progress";
      endReason = `the same calls gave the same results ${repeatStreak} steps in a row (repeatLimit ${rt.settings.repeatLimit}, stopped at twice that)`;
    }
    if (status === "running" && state.step >= rt.settings.maxSteps) status = "max_steps";
    // A turn's history only needs summarising once it leaves the recent window, which the prompt shows in full.
    const windowTokens = [...state.windowTokens, historyTokens + 50 * actions.length];
    let unsummarizedTokens = state.unsummarizedTokens;
    while (windowTokens.length > rt.settings.recentTurns) unsummarizedTokens += windowTokens.shift()!;
    const route = routeAfterStep({ status, failureStreak, unsummarizedTokens, needsPlan, repeatStreak }, rt.settings, newlyCompleted);
    return {
      status,
      endReason,
      repeatStreak,
      lastStepSig: sig,
      finishChallenged: finishChallenged || (state.finishChallenged && status === "running"),
      subtasks,
      failureStreak,
      needsPlan,
      unsummarizedTokens,
      windowTokens,
      pendingActions: [],
      ledgerHead: w.head,
      summary,
      ...route,
    };
  };
}
