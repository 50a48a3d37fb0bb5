import type { Ledger } from "../ledger/port.js";
import type { LedgerEvent, Subtask } from "../state.js";
import type { CommandLimit, StoppedBy } from "../events.js";
import { describeAction } from "../context/render.js";
import { medianRatio } from "../context/reuse.js";
import { stopWords } from "../sandbox/stop-words.js";
import { processHistory } from "../sandbox/process-history.js";
import { commandTotals, type CommandTotals } from "../economics/commands.js";
import { spendByModel, spendBySubtask, spendByStep, type Spend } from "../economics/spend.js";
import type { FileDiffStat, RevisionStore } from "../workspace/revisions.js";
import { RevisionError, formatStat } from "../workspace/revisions.js";

/** A test run as the report shows it. */
export interface ReportTestRun {
  step: number;
  framework: string;
  passed: number;
  failed: number;
  skipped: number;
  failedTests: string[];
  /** No failure, at least one pass, and the command succeeded: what counts as evidence. */
  passing: boolean;
}

/**
 * A plan item with what backs its status. `proven` is false for a subtask marked completed without
 * evidence: finish completes every open subtask, so a run can finish with its last test run failing.
 */
export type ReportSubtask = Subtask & { proven: boolean; proof: string | null };

export interface RunReport {
  thread: string;
  goal: string;
  status: string;
  steps: number;
  startedAt: string | null;
  endedAt: string | null;
  durationSec: number | null;
  model: string | null;
  sandbox: string | null;
  finishSummary: string | null;
  plan: ReportSubtask[];
  decisions: Array<{ step: number; text: string }>;
  files: FileDiffStat[];
  tests: ReportTestRun[];
  /** The last test run of the branch, or null when the tests never ran: what the outcome rests on. */
  lastTests: ReportTestRun | null;
  problems: Array<{
    step: number;
    tool: string;
    status: string;
    errorClass: string | null;
    what: string;
    stoppedBy?: StoppedBy | null;
    limit?: CommandLimit | null;
  }>;
  /** The run's shell commands: how many, CPU in all and the largest figures, where cgroups measured them. */
  commands?: CommandTotals;
  approvals: Array<{ command: string; decision: string; by: string; rule: string }>;
  /** Background processes of the run (start_process): how each one ended, as the ledger has it. */
  processes: Array<{
    name: string;
    command: string;
    status: string;
    starts: number;
    ports: number[];
    exitCode: number | null;
    signal: string | null;
    reason?: string;
  }>;
  lessons: string[];
  timeTravel: Array<{ kind: string; toCheckpoint: string }>;
  model_usage: {
    calls: number;
    inputTokens: number;
    outputTokens: number;
    promptTokensMax: number;
    promptTokensAvg: number;
    cachedInputTokens?: number;
    costUsd?: number;
    /** Median share of a decide prompt equal to the previous one's leading tokens (what a prefix cache can serve). */
    prefixReuseMedian?: number | null;
    /** Calls, tokens and cost per model (a summary model shows apart). */
    byModel?: Array<Spend & { model: string }>;
    /** Per subtask (null: calls made while no subtask was in progress, e.g. the first plan). */
    bySubtask?: Array<Spend & { subtask: string | null }>;
    /** Per step that made a model call. */
    byStep?: Array<Spend & { step: number }>;
  };
}

/** The runtime's definition of a test run that counts as evidence (see agent/nodes/observe.ts). */
const passes = (f: LedgerEvent<"environment_feedback">) =>
  !!f.payload.tests && f.payload.tests.failed === 0 && f.payload.tests.passed > 0 && f.payload.status === "ok";

/**
 * Whether a completed subtask's evidence holds: a passing test run, or a finish preceded by a
 * passing last test run. A finish alone (no test run, or a failing last one) proves nothing.
 */
function proofOf(s: Subtask, feedback: LedgerEvent<"environment_feedback">[], stepOf: (f: LedgerEvent<"environment_feedback">) => number): ReportSubtask {
  if (s.status !== "completed") return { ...s, proven: false, proof: null };
  const ev = feedback.find((f) => f.id === s.evidence);
  if (!ev) return { ...s, proven: false, proof: "marked completed without evidence" };
  if (ev.payload.tests) {
    return passes(ev)
      ? { ...s, proven: true, proof: `tests passed at step ${stepOf(ev)}` }
      : { ...s, proven: false, proof: `its evidence, the test run at step ${stepOf(ev)}, failed` };
  }
  const lastRun = feedback.filter((f) => f.seq < ev.seq && f.payload.tests).at(-1);
  if (!lastRun) return { ...s, proven: false, proof: `marked completed by finish at step ${stepOf(ev)}; no test run recorded` };
  return passes(lastRun)
    ? { ...s, proven: true, proof: `tests passed at step ${stepOf(lastRun)}, then finish` }
    : { ...s, proven: false, proof: `marked completed by finish at step ${stepOf(ev)}, but the last test run (step ${stepOf(lastRun)}) failed` };
}

const of = <T extends LedgerEvent["type"]>(events: LedgerEvent[], type: T) => events.filter((e): e is LedgerEvent<T> => e.type === type);

/**
 * The end-of-task report of a run's branch: what was asked, what was done and decided, which files
 * changed (from the run's first to its last workspace revision), how the tests went, what failed
 * along the way, what was learned, and what it cost. Built from the ledger alone.
 */
export async function buildReport(
  ledger: Ledger,
  revisions: RevisionStore | null,
  thread: string,
  head: string | null,
  subtasks: Subtask[],
): Promise<RunReport> {
  const events = await ledger.branch(head);
  const spec = of(events, "task_spec")[0];
  const status = of(events, "run_status").at(-1);
  const actions = new Map(of(events, "agent_action").map((a) => [a.id, a]));
  const feedback = of(events, "environment_feedback");
  const calls = of(events, "model_call");
  const contexts = of(events, "context_built");
  const snapshots = of(events, "workspace_snapshot");
  const finish = feedback
    .flatMap((f) => f.payload.effects ?? [])
    .filter((e) => e.kind === "finish")
    .at(-1);
  const first = spec?.payload.revision ?? null;
  const last = snapshots.at(-1)?.payload.revision ?? null;
  let files: FileDiffStat[] = [];
  if (revisions && first && last && first !== last) {
    try {
      files = await revisions.diff(first, last, { stat: true });
    } catch (err) {
      // Revisions pruned by gc: the report still has everything else. Anything else (an unreadable
      // database) is an error, not a report with a section missing.
      if (!(err instanceof RevisionError)) throw err;
      files = [];
    }
  }
  const stepOf = (f: LedgerEvent<"environment_feedback">) => actions.get(f.causedBy ?? "")?.payload.step ?? 0;
  const startedAt = events[0]?.ts ?? null;
  const endedAt = events.at(-1)?.ts ?? null;
  const prompts = contexts.map((c) => c.payload.tokens);
  const tests = feedback
    .filter((f) => f.payload.tests)
    .map((f) => ({ step: stepOf(f), ...f.payload.tests!, failedTests: f.payload.tests!.failedTests.slice(0, 10), passing: passes(f) }));
  return {
    thread,
    goal: spec?.payload.goal ?? "",
    status: status?.payload.status ?? "running",
    steps: status?.payload.steps ?? Math.max(0, ...[...actions.values()].map((a) => a.payload.step)),
    startedAt,
    endedAt,
    durationSec: startedAt && endedAt ? Math.round((Date.parse(endedAt) - Date.parse(startedAt)) / 100) / 10 : null,
    model: calls[0]?.payload.model ?? null,
    sandbox: feedback.find((f) => f.payload.sandbox)?.payload.sandbox ?? null,
    finishSummary: finish && finish.kind === "finish" ? finish.summary : null,
    plan: subtasks.map((s) => proofOf(s, feedback, stepOf)),
    decisions: of(events, "decision").map((d) => ({ step: d.payload.step, text: d.payload.text })),
    files,
    tests,
    lastTests: tests.at(-1) ?? null,
    problems: feedback
      .filter((f) => f.payload.status !== "ok")
      .map((f) => {
        const a = actions.get(f.causedBy ?? "");
        return {
          step: stepOf(f),
          tool: f.payload.tool,
          status: f.payload.status,
          errorClass: f.payload.errorClass ?? null,
          what: a ? describeAction(a.payload.tool, a.payload.args) : f.payload.tool,
          ...(f.payload.stoppedBy ? { stoppedBy: f.payload.stoppedBy, limit: f.payload.limit ?? null } : {}),
        };
      }),
    commands: commandTotals(feedback, stepOf),
    approvals: of(events, "approval").map((a) => ({ command: a.payload.command, decision: a.payload.decision, by: a.payload.by, rule: a.payload.rule })),
    processes: processHistory(events).map((p) => ({
      name: p.name,
      command: p.command,
      status: p.status,
      starts: p.starts,
      ports: p.ports,
      exitCode: p.exitCode,
      signal: p.signal,
      reason: p.reason,
    })),
    lessons: of(events, "reflection").at(-1)?.payload.lessons ?? [],
    timeTravel: of(events, "time_travel").map((t) => ({ kind: t.payload.kind, toCheckpoint: t.payload.toCheckpoint })),
    model_usage: {
      calls: calls.length,
      inputTokens: calls.reduce((n, c) => n + (c.payload.usage?.inputTokens ?? 0), 0),
      outputTokens: calls.reduce((n, c) => n + (c.payload.usage?.outputTokens ?? 0), 0),
      promptTokensMax: prompts.length ? Math.max(...prompts) : 0,
      promptTokensAvg: prompts.length ? Math.round(prompts.reduce((a, b) => a + b, 0) / prompts.length) : 0,
      cachedInputTokens: calls.reduce((n, c) => n + (c.payload.usage?.cachedInputTokens ?? 0), 0),
      costUsd: calls.reduce((n, c) => n + (c.payload.costUsd ?? 0), 0),
      prefixReuseMedian: medianRatio(contexts.slice(1).flatMap((c) => (c.payload.prefixReuse ? [c.payload.prefixReuse.ratio] : []))) || null,
      byModel: spendByModel(calls),
      bySubtask: spendBySubtask(calls),
      byStep: spendByStep(calls),
    },
  };
}

/** The report as Markdown. */
export function reportMarkdown(r: RunReport): string {
  const out: string[] = [];
  const mark = { pending: "[ ]", in_progress: "[~]", completed: "[x]", blocked: "[!]" } as const;
  out.push(`# Run ${r.thread}: ${r.status}`, "", `**Goal.** ${r.goal}`, "");
  out.push(
    `${r.steps} step(s)${r.durationSec !== null ? ` in ${r.durationSec} s` : ""}; model ${r.model ?? "-"}; sandbox ${r.sandbox ?? "-"}; ` +
      `${r.model_usage.calls} model call(s), prompts ≤ ${r.model_usage.promptTokensMax} tokens (avg ${r.model_usage.promptTokensAvg})` +
      (r.model_usage.inputTokens ? `, ${r.model_usage.inputTokens} in / ${r.model_usage.outputTokens} out billed` : ""),
    "",
  );
  const t = r.lastTests;
  out.push(
    t
      ? `**Tests.** Last run (step ${t.step}): ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped — ${
          t.passing ? "passing" : `**failing**${t.failedTests.length ? ` (${t.failedTests.join(", ")})` : ""}`
        }.`
      : "**Tests.** No test run recorded: nothing in this run verifies the result.",
    "",
  );
  if (r.finishSummary) {
    // The summary is the agent's own claim; say so when the evidence does not back it.
    const unverified = !t ? "not verified: no test run recorded" : !t.passing ? `not verified: the last test run (step ${t.step}) failed` : null;
    out.push(unverified ? `## Summary (the agent's words, ${unverified})` : "## Summary", "", r.finishSummary, "");
  }
  const u = r.model_usage;
  if (u.byModel?.length) {
    out.push("## Cost", "");
    if (u.prefixReuseMedian) out.push(`Prefix reuse of decide prompts (median): ${(u.prefixReuseMedian * 100).toFixed(1)}%.`, "");
    out.push("| model | calls | input | cached input | output | USD |", "|---|---|---|---|---|---|");
    for (const m of u.byModel)
      out.push(`| ${m.model} | ${m.calls} | ${m.inputTokens} | ${m.cachedInputTokens} | ${m.outputTokens} | ${m.costUsd.toFixed(4)} |`);
    out.push("");
    if (u.bySubtask?.some((s) => s.subtask !== null)) {
      out.push("| subtask | calls | input | cached input | output | USD |", "|---|---|---|---|---|---|");
      for (const s of u.bySubtask)
        out.push(
          `| ${s.subtask ?? "(no subtask in progress)"} | ${s.calls} | ${s.inputTokens} | ${s.cachedInputTokens} | ${s.outputTokens} | ${s.costUsd.toFixed(4)} |`,
        );
      out.push("");
    }
    const costliest = [...(u.byStep ?? [])]
      .sort((a, b) => b.costUsd - a.costUsd || b.inputTokens + b.outputTokens - (a.inputTokens + a.outputTokens) || a.step - b.step)
      .slice(0, 5);
    if (costliest.length)
      out.push(
        `Costliest steps: ${costliest.map((s) => `step ${s.step} ${(s.inputTokens + s.outputTokens).toLocaleString("en-US")} tok $${s.costUsd.toFixed(4)}`).join("; ")}.`,
        "",
      );
  }
  if (r.plan.length) {
    const line = (s: ReportSubtask) =>
      s.status === "completed" && !s.proven
        ? `- [?] **${s.id}** ${s.description} — unproven: ${s.proof}`
        : `- ${mark[s.status]} **${s.id}** ${s.description}${s.proof ? ` (${s.proof})` : ""}`;
    out.push("## Plan", "", ...r.plan.map(line), "");
  }
  if (r.decisions.length) out.push("## Decisions", "", ...r.decisions.map((d) => `- (step ${d.step}) ${d.text}`), "");
  if (r.files.length) out.push("## Files changed", "", "```", formatStat(r.files).trimEnd(), "```", "");
  if (r.tests.length) {
    out.push(
      "## Test runs",
      "",
      ...r.tests.map(
        (t) => `- step ${t.step}: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped${t.failedTests.length ? ` (${t.failedTests.join(", ")})` : ""}`,
      ),
      "",
    );
  }
  if (r.problems.length)
    out.push(
      "## Problems met",
      "",
      ...r.problems.map(
        (p) =>
          `- step ${p.step}: ${p.what} → ${p.status}${p.errorClass ? ` (${[p.errorClass, stopWords(p.stoppedBy, p.limit)].filter(Boolean).join(": ")})` : ""}`,
      ),
      "",
    );
  const c = r.commands;
  if (c?.count) {
    const figures = [
      `${c.count} shell command${c.count === 1 ? "" : "s"}`,
      c.measured ? `${seconds(c.cpuMs)} of CPU in all${c.measured < c.count ? ` (${c.measured} measured)` : ""}` : "CPU not measured (no cgroups)",
    ];
    const most = [
      c.mostCpu && c.measured > 1 ? `the most CPU: step ${c.mostCpu.step} \`${oneLineOf(c.mostCpu.command)}\` (${seconds(c.mostCpu.cpuMs)})` : null,
      c.highestPeak ? `the highest memory peak: step ${c.highestPeak.step} \`${oneLineOf(c.highestPeak.command)}\` (${mib(c.highestPeak.bytes)})` : null,
    ].filter(Boolean);
    out.push("## Commands", "", `${figures.join(", ")}${most.length ? `; ${most.join("; ")}` : ""}.`, "");
  }
  if (r.processes?.length) {
    const end = (p: RunReport["processes"][number]) =>
      p.status === "running"
        ? "running when the run stopped (ended with it; a resume restarts it)"
        : p.status === "stopped"
          ? "stopped"
          : `${p.status}${p.signal ? ` (${p.signal})` : p.exitCode !== null ? ` (exit ${p.exitCode})` : ""}${p.reason ? `: ${p.reason}` : ""}`;
    out.push(
      "## Background processes",
      "",
      ...r.processes.map(
        (p) =>
          `- ${p.name}: ${end(p)}${p.ports.length ? `; ports ${p.ports.join(", ")}` : ""}${p.starts > 1 ? `; started ${p.starts}×` : ""} — \`${p.command}\``,
      ),
      "",
    );
  }
  if (r.approvals.length) out.push("## Approvals", "", ...r.approvals.map((a) => `- ${a.decision} by ${a.by} (${a.rule}): \`${a.command}\``), "");
  if (r.timeTravel.length) out.push("## Time travel", "", ...r.timeTravel.map((t) => `- ${t.kind} to ${t.toCheckpoint}`), "");
  if (r.lessons.length) out.push("## Lessons", "", ...r.lessons.map((l) => `- ${l}`), "");
  return out.join("\n");
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
const mib = (b: number) => `${(b / 1024 / 1024).toFixed(b < 10 * 1024 * 1024 ? 1 : 0)} MiB`;
const oneLineOf = (cmd: string) => {
  const line = cmd.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
};
