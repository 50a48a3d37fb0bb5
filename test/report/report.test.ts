import { afterEach, describe, expect, it } from "vitest";
import { buildReport, reportMarkdown } from "../../src/report/report.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

let agents: TestAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
});

const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });

/** A project with one passing and one failing node:test test (or both passing). */
function project(failing: boolean) {
  return tempWorkspace(undefined, {
    "package.json": JSON.stringify({ name: "p", version: "1.0.0", type: "module", scripts: { test: "node --test test/" } }),
    "test/a.test.js": `import test from "node:test";\nimport assert from "node:assert";\ntest("adds", () => assert.equal(1 + 1, 2));\ntest("subtracts", () => assert.equal(2 - 1, ${failing ? 3 : 1}));\n`,
  });
}

const plan = call("update_plan", {
  subtasks: [
    { id: "add", description: "addition works", status: "in_progress" },
    { id: "sub", description: "subtraction works", status: "pending" },
  ],
});

async function reportOf(a: TestAgent) {
  const state = await a.run("make the arithmetic tests pass");
  return buildReport(a.rt.ledger, a.rt.revisions, "t1", state.ledgerHead, state.subtasks);
}

describe("the run report says what the evidence says", () => {
  it("does not show the plan done, nor the summary as true, when the last test run failed", async () => {
    const a = await testAgent(project(true), {
      decide: [plan, call("run_tests", {}), call("finish", { summary: "All tests pass; both subtasks are done." })],
    });
    agents.push(a);
    const r = await reportOf(a);
    expect(r.status).toBe("finished");
    expect(r.lastTests).toMatchObject({ step: 2, passed: 1, failed: 1, passing: false, failedTests: [expect.stringMatching(/subtracts/)] });
    // finish marked them completed in the state, but nothing proves it.
    expect(r.plan.map((s) => [s.id, s.status, s.proven])).toEqual([
      ["add", "completed", false],
      ["sub", "completed", false],
    ]);
    expect(r.plan[0]!.proof).toMatch(/finish at step 3, but the last test run \(step 2\) failed/);
    const md = reportMarkdown(r);
    expect(md).toMatch(/\*\*Tests\.\*\* Last run \(step 2\): 1 passed, 1 failed, 0 skipped — \*\*failing\*\* \(.*subtracts/);
    expect(md).toContain("## Summary (the agent's words, not verified: the last test run (step 2) failed)");
    expect(md).not.toMatch(/- \[x\]/);
    expect(md).toMatch(/- \[\?\] \*\*add\*\* addition works — unproven/);
  }, 120_000);

  it("shows the plan done when the last test run before finish passed", async () => {
    const a = await testAgent(project(false), {
      decide: [plan, call("run_tests", {}), call("finish", { summary: "All tests pass." })],
    });
    agents.push(a);
    const r = await reportOf(a);
    expect(r.lastTests).toMatchObject({ passed: 2, failed: 0, passing: true });
    expect(r.plan.every((s) => s.status === "completed" && s.proven)).toBe(true);
    const md = reportMarkdown(r);
    expect(md).toMatch(/Last run \(step 2\): 2 passed, 0 failed, 0 skipped — passing\./);
    expect(md).toContain("## Summary\n");
    expect(md).toMatch(/- \[x\] \*\*sub\*\* subtraction works \(tests passed at step 2, then finish\)/);
  }, 120_000);

  it("says nothing verifies a run that never ran its tests", async () => {
    const a = await testAgent(project(false), { decide: [plan, call("finish", { summary: "Done." })] });
    agents.push(a);
    const r = await reportOf(a);
    expect(r.lastTests).toBeNull();
    expect(r.plan.some((s) => s.proven)).toBe(false);
    expect(reportMarkdown(r)).toContain("No test run recorded: nothing in this run verifies the result.");
  }, 120_000);
});
