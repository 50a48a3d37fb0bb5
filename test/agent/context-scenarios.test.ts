import { afterEach, describe, expect, it } from "vitest";
import { listLessons } from "../../src/memory/lessons.js";
import type { LedgerEvent } from "../../src/state.js";
import { promptText, testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

let agents: TestAgent[] = [];
afterEach(async () => {
  for (const a of agents) a.saver.verify();
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
});

const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });
const finish = call("finish", { summary: "done" });

/** ~2 KB source files, different enough that each read is real work. */
function sources(n: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    files[`src/mod${i}.ts`] = Array.from({ length: 50 }, (_, j) => `export function handler${i}_${j}(input: number) { return input * ${j}; }`).join("\n");
  }
  return files;
}

describe("the model does not forget", () => {
  it("a decision recorded at step 2 is still in the prompt at step 200, within budget", async () => {
    const ws = tempWorkspace(undefined, sources(20));
    const reads = Array.from({ length: 198 }, (_, i) => call("read_file", { path: `src/mod${i % 20}.ts` }));
    const a = await testAgent(
      ws,
      {
        decide: [
          call("list_files", {}),
          call("record_decision", { text: "All timestamps are stored as UTC ISO strings (decision ZULU-7)." }),
          ...reads,
          finish,
        ],
      },
      { maxSteps: 210, budgetTokens: 9000, summarizeThresholdTokens: 3000 },
    );
    agents.push(a);
    const final = await a.run("read all modules");
    expect(final).toMatchObject({ status: "finished", step: 201 });
    const p200 = a.decidePrompt(200);
    expect(promptText(p200)).toContain("ZULU-7");
    // Old turns are gone from the prompt (summarised), yet the prompt stayed within its budget.
    expect(p200.filter((m) => m.role === "assistant").length).toBeLessThanOrEqual(6);
    const built = (await a.events()).filter((e): e is LedgerEvent<"context_built"> => e.type === "context_built");
    expect(built).toHaveLength(201);
    for (const b of built) expect(b.payload.tokens).toBeLessThanOrEqual(9000);
    expect((await a.events()).some((e) => e.type === "summary")).toBe(true);
  });

  it("the stderr of a failed test run reaches the next decide", async () => {
    const ws = tempWorkspace(undefined, {
      "check.js": "console.error('AssertionError: expected 41 to equal 42 at check.js:3 (MARKER-STDERR)'); process.exit(1);\n",
    });
    const a = await testAgent(ws, { decide: [call("run_tests", { command: "node check.js" }), finish] });
    agents.push(a);
    await a.run("make the check pass");
    const fb = (await a.events()).find((e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback")!;
    expect(fb.payload.stderr).toContain("MARKER-STDERR");
    const next = a.decidePrompt(2);
    const toolMsg = next.find((m) => m.role === "tool")!;
    expect(toolMsg.content).toContain("--- stderr ---");
    expect(toolMsg.content).toContain("MARKER-STDERR");
  });

  it("a summary replaces its range, and the original events come back when retrieval hits them", async () => {
    const ws = tempWorkspace(undefined, sources(5));
    const reads = Array.from({ length: 12 }, (_, i) => call("read_file", { path: `src/mod${i % 5}.ts` }));
    const a = await testAgent(
      ws,
      {
        decide: [
          call("run_command", { command: "echo 'ZEBRA_FAILURE_42: cache key collision in src/mod1.ts' >&2; exit 1" }),
          ...reads,
          call("run_command", { command: "echo 'ZEBRA_FAILURE_42 again' >&2; exit 1" }),
          finish,
        ],
      },
      { maxSteps: 30, recentTurns: 3, summarizeThresholdTokens: 1500 },
    );
    agents.push(a);
    await a.run("fix the cache");
    const events = await a.events();
    const first = events.find(
      (e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback" && e.payload.output.includes("cache key collision"),
    )!;
    const summary = events.find((e): e is LedgerEvent<"summary"> => e.type === "summary" && e.payload.eventIds.includes(first.id))!;
    expect(summary).toBeDefined();
    // Step 15 follows the second failure: the first one is long out of the recent window and summarised...
    const p = a.decidePrompt(15);
    const recentToolText = p
      .filter((m) => m.role === "tool")
      .map((m) => m.content)
      .join("\n");
    expect(recentToolText).not.toContain("cache key collision");
    // ...and comes back, expanded from its summary, because the current error matches it.
    const built = events.filter((e): e is LedgerEvent<"context_built"> => e.type === "context_built" && e.payload.step === 15)[0]!;
    const recalled = built.payload.items.find((i) => i.section === "recalled" && i.source === `event:${first.id}`);
    expect(recalled?.note).toBe(`expanded from summary ${summary.id}`);
    expect(promptText(p)).toContain("cache key collision in src/mod1.ts");
    expect(promptText(p)).toMatch(/expanded from summary seq \d+-\d+/);
  });
});

describe("long-term memory", () => {
  it("a lesson learned in one run appears in the plan prompt of the next run in the same workspace", async () => {
    const ws = tempWorkspace(undefined, {
      "package.json": JSON.stringify({ name: "w", type: "module", scripts: { test: "node --test" } }),
      "sum.js": "export const sum = (a, b) => a - b;\n",
      "sum.test.js":
        "import { test } from 'node:test';\nimport assert from 'node:assert';\nimport { sum } from './sum.js';\ntest('sum adds', () => assert.equal(sum(2, 3), 5));\n",
    });
    const run1 = await testAgent(ws, {
      decide: [call("run_tests", {}), call("edit_file", { path: "sum.js", oldText: "a - b", newText: "a + b" }), call("run_tests", {}), finish],
    });
    agents.push(run1);
    expect((await run1.run("fix sum", "run-1")).status).toBe("finished");
    const lessons = await listLessons(run1.rt.store);
    const testLesson = lessons.find((l) => l.text.includes("npm test"));
    expect(testLesson, JSON.stringify(lessons)).toBeDefined();
    expect(testLesson!.sources[0]!.threadId).toBe("run-1");
    await run1.close();
    agents = [];

    const run2 = await testAgent(ws, {
      plan: [call("update_plan", { subtasks: [{ id: "s1", description: "add a multiply function with tests", status: "in_progress" }] })],
      decide: [finish],
    });
    agents.push(run2);
    await run2.run("add a multiply function next to sum, with tests", "run-2");
    const plan = run2.model.requests.find((r) => r.node === "plan")!;
    expect(promptText(plan.messages)).toContain("Lessons from earlier runs in this workspace");
    expect(promptText(plan.messages)).toContain(testLesson!.text);
    const spec = (await run2.events("run-2")).find((e): e is LedgerEvent<"task_spec"> => e.type === "task_spec")!;
    expect(spec.payload.memories).toContain(testLesson!.text);
    // Reflecting again on the same kind of fact does not duplicate it.
    const after = await listLessons(run2.rt.store);
    expect(after.filter((l) => l.text === testLesson!.text)).toHaveLength(1);
  });
});
