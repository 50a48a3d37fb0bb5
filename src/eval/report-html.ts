import { effectsText, summarize } from "./report.js";
import type { EvalAgent, EvalResult } from "./run-task.js";

// report.html: what report.md says, plus two charts per task (solved rate, cost), one bar per agent.
// One file, inline SVG and CSS, no script and no external asset: it opens from a CI artifact or an
// e-mail as it is.

const COLORS: Record<EvalAgent, string> = { ledgerloop: "#2b6cb0", plain: "#dd6b20" };

/** Text for HTML (task names and errors come from suites and models). */
function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** One value per task and agent. */
interface Series {
  title: string;
  tasks: string[];
  agents: EvalAgent[];
  value: (task: string, agent: EvalAgent) => number;
  /** The largest value the axis shows (the solved rate's is 1). */
  max: number;
  label: (v: number) => string;
}

/** A grouped bar chart as inline SVG: one group per task, one bar per agent, a value over each bar. */
export function barChart(s: Series): string {
  const bar = 18;
  const gap = 14;
  const groupW = s.agents.length * bar + gap;
  const left = 50;
  const top = 30;
  const h = 160;
  const labelsH = 120;
  const width = left + s.tasks.length * groupW + 20;
  const height = top + h + labelsH;
  const max = s.max > 0 ? s.max : 1;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" role="img" aria-label="${esc(s.title)}">`];
  parts.push(`<text x="${left}" y="16" class="title">${esc(s.title)}</text>`);
  for (const f of [0, 0.5, 1]) {
    const y = top + h - f * h;
    parts.push(`<line x1="${left - 4}" x2="${width - 10}" y1="${y}" y2="${y}" class="grid"/><text x="${left - 6}" y="${y + 4}" class="axis">${esc(s.label(f * max))}</text>`);
  }
  s.tasks.forEach((task, i) => {
    const x0 = left + i * groupW + gap / 2;
    s.agents.forEach((agent, j) => {
      const v = s.value(task, agent);
      const bh = Math.max(v > 0 ? 1 : 0, (v / max) * h);
      const x = x0 + j * bar;
      parts.push(
        `<rect x="${x}" y="${(top + h - bh).toFixed(1)}" width="${bar - 2}" height="${bh.toFixed(1)}" fill="${COLORS[agent]}" data-task="${esc(task)}" data-agent="${agent}" data-value="${v}"><title>${esc(`${task} (${agent}): ${s.label(v)}`)}</title></rect>`,
      );
    });
    const cx = x0 + (s.agents.length * bar) / 2;
    parts.push(`<text transform="translate(${cx},${top + h + 8}) rotate(45)" class="task">${esc(task)}</text>`);
  });
  parts.push("</svg>");
  return parts.join("");
}

/** The report.html of an eval: totals, a chart of the solved rate and one of the cost per task, every run. */
export function evalHtml(results: EvalResult[], meta: { suite: string; model: string; complete: boolean }): string {
  const sums = summarize(results);
  const agents = sums.map((s) => s.agent);
  const tasks = [...new Set(results.map((r) => r.task))];
  const runsOf = (task: string, agent: EvalAgent) => results.filter((r) => r.task === task && r.agent === agent);
  const rate = (task: string, agent: EvalAgent) => {
    const rs = runsOf(task, agent);
    return rs.length ? rs.filter((r) => r.solved).length / rs.length : 0;
  };
  const cost = (task: string, agent: EvalAgent) => {
    const rs = runsOf(task, agent);
    return rs.length ? rs.reduce((n, r) => n + r.costUsd, 0) / rs.length : 0;
  };
  const maxCost = Math.max(0, ...tasks.flatMap((t) => agents.map((a) => cost(t, a))));
  const td = (c: string, num = false) => `<td${num ? ' class="n"' : ""}>${esc(c)}</td>`;
  const th = (cs: string[]) => `<tr>${cs.map((c) => `<th>${esc(c)}</th>`).join("")}</tr>`;
  const legend = agents.map((a) => `<span class="key" style="background:${COLORS[a]}"></span>${esc(a)}`).join(" &nbsp; ");
  const killCols = results.some((r) => r.kills !== undefined);
  const out = [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8"><title>ledgerloop eval</title>',
    "<style>body{font:14px system-ui,sans-serif;margin:24px;color:#1a202c}table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #cbd5e0;padding:3px 8px}td.n{text-align:right}th{background:#edf2f7}" +
      ".title{font-weight:600;font-size:13px}.axis{font-size:10px;text-anchor:end;fill:#4a5568}.task{font-size:10px;fill:#2d3748}.grid{stroke:#e2e8f0}.key{display:inline-block;width:10px;height:10px;margin-right:4px}</style>",
    "</head><body>",
    `<h1>ledgerloop eval</h1><p>suite <code>${esc(meta.suite)}</code>, model <code>${esc(meta.model)}</code>, ${results.length} run(s)${meta.complete ? "" : " (incomplete: resume it with <code>--resume</code>)"}</p>`,
    "<h2>Overall</h2><table>",
    th(["agent", "solved", "steps", "model calls", "input tok", "cached tok", "output tok", "cost $", "wall s"]),
    ...sums.map(
      (s) =>
        `<tr>${td(s.agent)}${td(`${s.solved}/${s.runs} (${Math.round(s.solvedRate * 100)}%)`, true)}${[s.steps, s.modelCalls, s.inputTokens, s.cachedInputTokens, s.outputTokens].map((n) => td(String(n), true)).join("")}${td(s.costUsd.toFixed(4), true)}${td((s.wallMs / 1000).toFixed(1), true)}</tr>`,
    ),
    "</table>",
    `<h2>Per task</h2><p>${legend}</p>`,
    `<div>${barChart({ title: "solved rate per task", tasks, agents, value: rate, max: 1, label: (v) => `${Math.round(v * 100)}%` })}</div>`,
    `<div>${barChart({ title: "cost per run, $ (mean over repeats)", tasks, agents, value: cost, max: maxCost, label: (v) => `$${v.toFixed(v > 0 && v < 0.01 ? 4 : 2)}` })}</div>`,
    "<h2>Runs</h2><table>",
    th(["task", "agent", "rep", "solved", "status", "steps", "calls", "input", "cached", "output", "cost $", "wall s", ...(killCols ? ["kills", "effects"] : [])]),
    ...results.map(
      (r) =>
        `<tr>${td(r.task)}${td(r.agent)}${td(String(r.repeat), true)}${td(r.solved ? "yes" : "no")}${td(r.status)}${[r.steps, r.modelCalls, r.inputTokens, r.cachedInputTokens, r.outputTokens].map((n) => td(String(n), true)).join("")}${td(r.costUsd.toFixed(4), true)}${td((r.wallMs / 1000).toFixed(1), true)}${!killCols ? "" : r.kills !== undefined ? td(String(r.kills), true) + td(effectsText(r)) : td("") + td("")}</tr>`,
    ),
    "</table>",
    "</body></html>",
  ];
  return out.join("\n") + "\n";
}
