import { rememberLessons } from "../../memory/lessons.js";
import type { ChatMessage } from "../../models/port.js";
import type { LedgerEvent, PayloadOf } from "../../state.js";
import { describeAction } from "../../context/builder.js";
import { branchWriter, callModel, callSite, threadIdOf, type NodeDeps, type NodeFn } from "./deps.js";

const REFLECT_PROMPT = `You review what just happened in a coding task and write short lessons for later tasks in the
same workspace: what worked, what failed and why, and project facts (test command, conventions).
Answer with one lesson per line, at most 8 lines.`;

/** Lessons derived from the ledger alone: errors that were later fixed, the test command, decisions. */
export function deterministicLessons(events: LedgerEvent[]): { lessons: string[]; from: string[] } {
  const lessons: string[] = [];
  const from: string[] = [];
  const actions = new Map(events.filter((e) => e.type === "agent_action").map((e) => [e.id, e as LedgerEvent<"agent_action">]));
  const feedback = events.filter((e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback");
  let openFailure: LedgerEvent<"environment_feedback"> | null = null;
  for (const fb of feedback) {
    const action = actions.get(fb.causedBy ?? "");
    const what = action ? describeAction(action.payload.tool, action.payload.args) : fb.payload.tool;
    if (fb.payload.tests && fb.payload.tests.failed > 0) openFailure = fb;
    if (fb.payload.tests && fb.payload.tests.failed === 0 && fb.payload.tests.passed > 0) {
      if (openFailure) {
        const names = openFailure.payload.tests?.failedTests.slice(0, 3).join(", ");
        lessons.push(`Failing tests (${names || "see run"}) were fixed before ${what} passed (${fb.payload.tests.passed} passed).`);
        from.push(openFailure.id, fb.id);
        openFailure = null;
      }
      if (fb.payload.command) {
        lessons.push(`The test command \`${fb.payload.command}\` works in this workspace.`);
        from.push(fb.id);
      }
    }
    if (fb.payload.status === "rejected") {
      lessons.push(`A tool call was rejected: ${fb.payload.output.slice(0, 160)}`);
      from.push(fb.id);
    }
  }
  if (openFailure) {
    lessons.push(
      `Unresolved: ${openFailure.payload.tests?.failed ?? "some"} test(s) still failing at the end (${openFailure.payload.tests?.failedTests.slice(0, 3).join(", ")}).`,
    );
    from.push(openFailure.id);
  }
  // A kill from outside the sandbox says nothing about the workspace: no lesson in it.
  const errors = feedback.filter((f) => f.payload.status === "error" && !f.payload.tests && f.payload.stoppedBy !== "outside");
  for (const e of errors.slice(-3)) {
    lessons.push(
      `${e.payload.tool} failed (${failureOf(e.payload)}): ${
        e.payload.output
          .split("\n")
          .find((l) => l.trim())
          ?.slice(0, 160) ?? ""
      }`,
    );
    from.push(e.id);
  }
  return { lessons: [...new Set(lessons)].slice(0, 12), from: [...new Set(from)] };
}

/** A failure's class, with the limit that stopped the command and what it had used where that adds something. */
function failureOf(p: PayloadOf<"environment_feedback">): string {
  const cls = p.errorClass ?? "error";
  if (p.stoppedBy !== "limit" || !p.limit || p.limit === "timeout") return cls;
  const peak = p.limit === "memory" && p.usage?.memoryPeakBytes ? `, at ${Math.round(p.usage.memoryPeakBytes / 1024 / 1024)} MiB` : "";
  const cpu = p.limit === "cpu" && p.usage?.cpuMs ? `, after ${(p.usage.cpuMs / 1000).toFixed(1)} s of CPU` : "";
  return `${cls}: the ${p.limit.replace(/_/g, " ")} limit${peak}${cpu}`;
}

/**
 * Writes a `reflection` (model lessons, or deterministic ones from the ledger) when a subtask is
 * completed, after a failure streak and at the end of a run, and stores its lessons in long-term
 * memory (deduplicated, with the events they came from) for later runs in the same workspace. At
 * the end it also records the run's final `run_status`.
 */
export function createReflectNode(deps: NodeDeps): NodeFn {
  return async (state, config) => {
    const rt = await deps.resolve(config);
    const w = branchWriter(rt, state, config, "reflect");
    const terminal = state.status !== "running";
    const trigger: PayloadOf<"reflection">["trigger"] = terminal
      ? "end_of_run"
      : (state.reflectTrigger ?? (state.failureStreak > 0 ? "failure_streak" : "subtask_completed"));
    const recent = await rt.ledger.branch(state.ledgerHead, { last: 400 });
    const derived = deterministicLessons(recent);
    const messages: ChatMessage[] = [
      { role: "system", content: REFLECT_PROMPT },
      {
        role: "user",
        content: `Goal: ${state.goal}\nTrigger: ${trigger}\nRun status: ${state.status}\nObserved:\n${derived.lessons.map((l) => `- ${l}`).join("\n") || "- (nothing notable)"}`,
      },
    ];
    const turn = state.modelTurns.reflect;
    const { response, event } = await callModel(rt, w, "reflect", turn, messages, [], { signal: config.signal, at: callSite(state) });
    const modelLessons = event
      ? response.content
          .split("\n")
          .map((l) => l.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, "").trim())
          .filter(Boolean)
      : [];
    const lessons = modelLessons.length ? modelLessons.slice(0, 12) : derived.lessons;
    const reflection = await w.append("reflection", "reflection", {
      trigger,
      lessons,
      source: modelLessons.length ? "model" : "deterministic",
      fromEvents: derived.from,
    });
    const store = (config.store as typeof rt.store | undefined) ?? rt.store;
    // Lessons pass the same redaction as the ledger event they were stored in.
    await rememberLessons(store, reflection.payload.lessons, {
      threadId: threadIdOf(config),
      trigger,
      eventIds: [reflection.id, ...derived.from].slice(0, 20),
      at: reflection.ts,
    });
    if (terminal) {
      await w.append("status", "run_status", { status: state.status, steps: state.step, ...(state.endReason ? { reason: state.endReason } : {}) });
    }
    rt.progress?.({ node: "reflect", step: state.step, text: `${lessons.length} lesson(s) (${trigger})` });
    return {
      ledgerHead: w.head,
      reflectedAtStep: state.step,
      reflectTrigger: null,
      modelTurns: event ? { ...state.modelTurns, reflect: turn + 1 } : state.modelTurns,
    };
  };
}
