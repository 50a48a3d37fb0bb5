import { effectsOk } from "./effects.js";
import type { EvalAgent, EvalResult } from "./run-task.js";

// What an eval's results say: per run, and per agent over all runs; as a table for the terminal
// and as Markdown for the out folder's report.md.

/** One agent's totals over the runs of an eval. */
export interface EvalSummary {
  agent: EvalAgent;
  /** Runs that ran: skipped ones (a toolchain this machine lacks) say nothing about the agent. */
  runs: number;
  skipped: number;
  solved: number;
  /** solved / runs, 0..1. */
  solvedRate: number;
  steps: number;
  modelCalls: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  costUsd: number;
  wallMs: number;
}

/** Totals per agent, ledgerloop first. */
export function summarize(results: EvalResult[]): EvalSummary[] {
  const agents = [...new Set(results.map((r) => r.agent))].sort((a, b) => (a === "ledgerloop" ? -1 : b === "ledgerloop" ? 1 : 0));
  return agents.map((agent) => {
    const all = results.filter((r) => r.agent === agent);
    const rs = all.filter((r) => r.status !== "skipped");
    const sum = (f: (r: EvalResult) => number) => rs.reduce((n, r) => n + f(r), 0);
    const solved = rs.filter((r) => r.solved).length;
    return {
      agent,
      runs: rs.length,
      skipped: all.length - rs.length,
      solved,
      solvedRate: rs.length ? solved / rs.length : 0,
      steps: sum((r) => r.steps),
      modelCalls: sum((r) => r.modelCalls),
      inputTokens: sum((r) => r.inputTokens),
      cachedInputTokens: sum((r) => r.cachedInputTokens),
      outputTokens: sum((r) => r.outputTokens),
      costUsd: sum((r) => r.costUsd),
      wallMs: sum((r) => r.wallMs),
    };
  });
}

const HEAD = ["task", "agent", "rep", "solved", "status", "steps", "calls", "input", "cached", "output", "cost $", "wall s"];

function row(r: EvalResult): string[] {
  return [r.task, r.agent, String(r.repeat), r.solved ? "yes" : "no", r.status, String(r.steps), String(r.modelCalls), String(r.inputTokens), String(r.cachedInputTokens), String(r.outputTokens), r.costUsd.toFixed(4), (r.wallMs / 1000).toFixed(1)];
}

function totalRow(s: EvalSummary): string[] {
  return ["TOTAL", s.agent, "", solvedText(s), "", String(s.steps), String(s.modelCalls), String(s.inputTokens), String(s.cachedInputTokens), String(s.outputTokens), s.costUsd.toFixed(4), (s.wallMs / 1000).toFixed(1)];
}

function solvedText(s: EvalSummary): string {
  return `${s.solved}/${s.runs} (${Math.round(s.solvedRate * 100)}%)${s.skipped ? `, ${s.skipped} skipped` : ""}`;
}

/** The line `ledgerloop eval` prints as each run ends; a skipped run says why, not "not solved". */
export function progressLine(r: EvalResult, done: number, total: number): string {
  const head = `[${done}/${total}] ${r.task} (${r.agent}${r.repeat > 1 ? ` #${r.repeat}` : ""}): `;
  if (r.status === "skipped") return `${head}skipped: ${r.error ?? "not runnable on this machine"}`;
  const kills = r.kills !== undefined ? `, killed ${r.kills} time(s)` : "";
  return `${head}${r.solved ? "solved" : "not solved"}, ${r.status}, ${r.steps} step(s), ${(r.wallMs / 1000).toFixed(1)} s${kills}`;
}

/** One line per skipped run: the task and what to install for it. */
function skippedLines(results: EvalResult[]): string[] {
  return results.filter((r) => r.status === "skipped").map((r) => `  ${r.task} (${r.agent}${r.repeat > 1 ? ` #${r.repeat}` : ""}): ${r.error ?? "skipped"}`);
}

/** The results as an aligned text table, one line per run and a total per agent. */
export function evalTable(results: EvalResult[]): string {
  const rows = [HEAD, ...results.map(row), ...summarize(results).map(totalRow)];
  const widths = HEAD.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i >= 5 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  const sep = widths.map((w) => "-".repeat(w)).join("  ");
  const table = [line(HEAD), sep, ...results.map((r) => line(row(r))), sep, ...summarize(results).map((s) => line(totalRow(s)))];
  const skipped = skippedLines(results);
  if (skipped.length) table.push("", "skipped (not counted as runs):", ...skipped);
  const killed = results.filter((r) => r.kills !== undefined);
  if (killed.length) {
    table.push("", "killed and resumed (--kill-every):");
    for (const r of killed) table.push(`  ${r.task}${r.repeat > 1 ? ` #${r.repeat}` : ""}: ${r.kills} kill(s), ${r.solved ? "solved" : "not solved"}, effects ${effectsText(r)}`);
  }
  return table.join("\n");
}

/** The report.md of an eval: totals per agent, each task side by side, then every run. */
export function evalMarkdown(results: EvalResult[], meta: { suite: string; model: string; complete: boolean }): string {
  const md = (cells: string[]) => `| ${cells.map((c) => c.replace(/\|/g, "\\|")).join(" | ")} |`;
  const out = [`# ledgerloop eval`, "", `- suite: \`${meta.suite}\``, `- model: \`${meta.model}\``, `- runs: ${results.length}${meta.complete ? "" : " (incomplete: resume it with `--resume`)"}`, ""];
  out.push("## Overall", "", md(["agent", "solved", "steps", "model calls", "input tok", "cached tok", "output tok", "cost $", "wall s"]), md(Array(9).fill("---")));
  for (const s of summarize(results)) {
    out.push(md([s.agent, solvedText(s), String(s.steps), String(s.modelCalls), String(s.inputTokens), String(s.cachedInputTokens), String(s.outputTokens), s.costUsd.toFixed(4), (s.wallMs / 1000).toFixed(1)]));
  }
  const agents = summarize(results).map((s) => s.agent);
  if (agents.length > 1) {
    out.push("", "## Per task, side by side", "", md(["task", ...agents.flatMap((a) => [`${a} solved`, `${a} steps`, `${a} cost $`])]), md(Array(1 + agents.length * 3).fill("---")));
    for (const task of [...new Set(results.map((r) => r.task))]) {
      const cells = agents.flatMap((a) => {
        const rs = results.filter((r) => r.task === task && r.agent === a);
        return [`${rs.filter((r) => r.solved).length}/${rs.length}`, String(rs.reduce((n, r) => n + r.steps, 0)), rs.reduce((n, r) => n + r.costUsd, 0).toFixed(4)];
      });
      out.push(md([task, ...cells]));
    }
  }
  const killed = results.filter((r) => r.kills !== undefined);
  if (killed.length) {
    out.push("", "## Killed and resumed (--kill-every)", "", md(["task", "rep", "kills", "solved", "effects", "interrupted commands"]), md(Array(6).fill("---")));
    for (const r of killed) out.push(md([r.task, String(r.repeat), String(r.kills), r.solved ? "yes" : "no", effectsText(r), String(r.effects?.interrupted ?? "")]));
    out.push("", "effects: `ok` when the ledger shows every step decided once and every action with exactly one outcome.");
  }
  out.push("", "## Runs", "", md(HEAD), md(HEAD.map(() => "---")), ...results.map((r) => md(row(r))));
  const skipped = skippedLines(results);
  if (skipped.length) out.push("", "## Skipped (not counted as runs)", "", ...skipped.map((l) => `- ${l.trim()}`));
  const failed = results.filter((r) => !r.solved && r.status !== "skipped");
  if (failed.length) {
    out.push("", "## Why runs were not solved", "");
    for (const r of failed) out.push(`### ${r.task} (${r.agent}, run ${r.repeat}): ${r.status}`, "", ...(r.error ? [`error: ${r.error}`, ""] : []), "```", r.hiddenOutput.slice(-1200) || "(no output)", "```", "");
  }
  return out.join("\n") + "\n";
}

/** A killed run's effects check in a few words: ok, or what was doubled or lost. */
export function effectsText(r: EvalResult): string {
  const e = r.effects;
  if (!e) return "unknown";
  if (effectsOk(e)) return "ok";
  const parts = [
    e.duplicatedSteps.length ? `step(s) ${e.duplicatedSteps.join(", ")} decided twice` : "",
    e.duplicatedOutcomes ? `${e.duplicatedOutcomes} action(s) with two outcomes` : "",
    e.withoutOutcome ? `${e.withoutOutcome} action(s) without outcome` : "",
  ];
  return parts.filter(Boolean).join("; ");
}
