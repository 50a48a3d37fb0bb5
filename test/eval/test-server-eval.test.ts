import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, describe, expect, it } from "vitest";
import { runEval } from "../../src/eval/eval.js";
import { loadTrajectory } from "../../src/models/scripted.js";
import { turnPlans } from "../../src/eval/test-server-plan.js";
import type { PlayedAnswer } from "../../src/eval/test-server.js";

// `ledgerloop eval --model test-server`: two shipped tasks played over real HTTP to ledgerloop and to
// the plain baseline, through the same OpenAI adapter a user's model gets, with real sandbox,
// SQLite and hidden tests. Slow tier (test/tiers.ts): about a minute and a half.

const SUITE = path.join(import.meta.dirname, "../../eval/suite");
// Seed 1 plays, in js-editor-undo: three read-only turns as parallel calls, a malformed-JSON call
// and a cut-off answer; in py-export-formats: a prose answer at turn 3 and a tool call written as text.
const TASKS = ["js-editor-undo", "py-export-formats"];
const made: string[] = [];
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

function events(out: string, task: string, type: string): Array<Record<string, unknown>> {
  const db = new Database(path.join(out, "work", `${task}.ledgerloop.1`, "state", "state.db"), { readonly: true });
  try {
    return (db.prepare("SELECT payload FROM ll_events WHERE type = ? ORDER BY seq").pluck().all(type) as string[]).map((p) => JSON.parse(p) as Record<string, unknown>);
  } finally {
    db.close();
  }
}

describe("ledgerloop eval --model test-server", () => {
  it("the misbehaving server's answers: ledgerloop solves both tasks; the plain loop ends at the first prose answer", async () => {
    for (const t of TASKS) {
      const plans = turnPlans(loadTrajectory(path.join(SUITE, t, "oracle.json")), t, 1).map((p) => (p.kind === "misbehave" ? p.what : p.kind));
      // What this test relies on; if the drawing changes, choose tasks that still have these.
      expect(plans).toEqual(expect.arrayContaining(t === "js-editor-undo" ? ["parallel", "malformed-json", "cut-off"] : ["prose", "text-call"]));
      if (t === "js-editor-undo") expect(plans).not.toEqual(expect.arrayContaining(["prose"]));
    }
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "ll-eval-ts-"));
    made.push(out);
    const r = await runEval({ suiteDir: SUITE, model: "test-server", baseline: "plain", only: TASKS, concurrency: 2, outDir: out, settings: { vectors: "off" } });
    const row = (task: string, agent: string) => r.results.find((x) => x.task === task && x.agent === agent)!;
    for (const t of TASKS) expect([t, row(t, "ledgerloop").solved, row(t, "ledgerloop").status]).toEqual([t, true, "finished"]);
    // Parallel calls, a bad argument and a cut-off are error feedback to the plain loop as well.
    expect([row("js-editor-undo", "plain").solved, row("js-editor-undo", "plain").status]).toEqual([true, "finished"]);
    // A prose answer is the final answer of a plain tool-calling loop: it stops there, unsolved.
    const plainProse = row("py-export-formats", "plain");
    expect([plainProse.solved, plainProse.status, plainProse.steps]).toEqual([false, "no_tool_call", 4]);

    // The ledger shows each misbehaviour as the model sent it and what the runtime made of it.
    const undoActions = events(out, "js-editor-undo", "agent_action");
    const invalid = undoActions.map((a) => a.invalid).filter((x): x is string => typeof x === "string");
    expect(invalid).toEqual([expect.stringMatching(/not (valid )?JSON|JSON/i), expect.stringMatching(/cut off at the model's output token limit/)]);
    const undoCalls = events(out, "js-editor-undo", "model_call").filter((c) => c.node === "decide");
    expect(undoCalls.some((c) => (c.toolCalls as unknown[]).length === 3)).toBe(true);
    const proseCalls = events(out, "py-export-formats", "model_call").filter((c) => c.node === "decide" && (c.toolCalls as unknown[]).length === 0);
    expect(proseCalls.map((c) => c.content)).toEqual([expect.stringMatching(/^I have looked at the task/), expect.stringMatching(/^<tool_call>/)]);

    // The server's own log of what it played, in the out folder.
    const played = fs
      .readFileSync(path.join(out, "test-server.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as PlayedAnswer);
    const kinds = new Set(played.map((p) => p.played));
    for (const k of ["parallel", "malformed-json", "cut-off", "prose", "text-call", "plan"] as const) expect(kinds).toContain(k);
  }, 600_000);
});
