import { describe, expect, it } from "vitest";
import { evalHtml } from "../../src/eval/report-html.js";
import type { EvalResult } from "../../src/eval/run-task.js";

// report.html from results as the harness stores them: the charts' bars carry their values, and
// nothing in the page is fetched from elsewhere.

function result(task: string, agent: "ledgerloop" | "plain", solved: boolean, costUsd: number, repeat = 1): EvalResult {
  return { task, agent, repeat, model: "m", solved, status: solved ? "finished" : "max_steps", steps: 20, modelCalls: 21, inputTokens: 1000, cachedInputTokens: 0, outputTokens: 10, costUsd, wallMs: 1000, hiddenExit: solved ? 0 : 1, hiddenOutput: "" };
}

/** The bars of the chart whose title is given: task, agent, value and height. */
function bars(html: string, title: string): Array<{ task: string; agent: string; value: number; height: number }> {
  const svg = html.split("<svg").find((s) => s.includes(`>${title}</text>`))!;
  return [...svg.matchAll(/<rect [^>]*height="([\d.]+)" fill="[^"]+" data-task="([^"]+)" data-agent="(\w+)" data-value="([\d.e-]+)"/g)].map((m) => ({ task: m[2]!, agent: m[3]!, value: Number(m[4]), height: Number(m[1]) }));
}

describe("report.html", () => {
  const results = [
    result("a<b", "ledgerloop", true, 0.02),
    result("a<b", "plain", false, 0.04),
    result("a<b", "ledgerloop", false, 0.02, 2),
    result("a<b", "plain", false, 0.04, 2),
    result("c", "ledgerloop", true, 0.01),
    result("c", "plain", true, 0.01),
  ];
  const html = evalHtml(results, { suite: "/s", model: "openai:x", complete: true });

  it("charts the solved rate and the cost per task, one bar per agent, to scale", () => {
    const solved = bars(html, "solved rate per task");
    expect(solved.map((b) => [b.task, b.agent, b.value])).toEqual([["a&lt;b", "ledgerloop", 0.5], ["a&lt;b", "plain", 0], ["c", "ledgerloop", 1], ["c", "plain", 1]]);
    expect(solved[0]!.height * 2).toBeCloseTo(solved[2]!.height, 5);
    expect(solved[1]!.height).toBe(0);
    const cost = bars(html, "cost per run, $ (mean over repeats)");
    expect(cost.map((b) => b.value)).toEqual([0.02, 0.04, 0.01, 0.01]);
    expect(cost[1]!.height).toBeCloseTo(cost[0]!.height * 2, 5);
    expect(html).toContain("<td>ledgerloop</td><td class=\"n\">2/3 (67%)</td>");
  });

  it("is one self-contained page: no script, no external asset, names escaped", () => {
    expect(html).not.toMatch(/<script|<link|<img|@import|url\(/i);
    // The only URL is SVG's namespace, which is never fetched.
    expect([...html.matchAll(/https?:\/\/[^"\s]+/g)].map((m) => m[0])).toEqual(["http://www.w3.org/2000/svg", "http://www.w3.org/2000/svg"]);
    expect(html).not.toContain("a<b");
    expect(html).toContain("<td>a&lt;b</td>");
  });
});
