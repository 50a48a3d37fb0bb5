import { afterEach, describe, expect, it } from "vitest";
import { buildReport, reportMarkdown } from "../../src/report/report.js";
import { detectCgroups } from "../../src/sandbox/limits.js";
import { promptText, testAgent, type TestAgent } from "../helpers/agent.js";
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
    // The first finish after a failing test run is not taken: the model is shown the failures and
    // finishes only by saying so again.
    const a = await testAgent(project(true), {
      decide: [
        plan,
        call("run_tests", {}),
        call("finish", { summary: "All tests pass." }),
        call("finish", { summary: "All tests pass; both subtasks are done." }),
      ],
    });
    agents.push(a);
    const r = await reportOf(a);
    expect(r.status).toBe("finished");
    expect(promptText(a.decidePrompt(4))).toMatch(/You called finish, but the last test run failed \(1 failing\)/);
    expect(r.lastTests).toMatchObject({ step: 2, passed: 1, failed: 1, passing: false, failedTests: [expect.stringMatching(/subtracts/)] });
    // finish marked them completed in the state, but nothing proves it.
    expect(r.plan.map((s) => [s.id, s.status, s.proven])).toEqual([
      ["add", "completed", false],
      ["sub", "completed", false],
    ]);
    expect(r.plan[0]!.proof).toMatch(/finish at step 4, but the last test run \(step 2\) failed/);
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

describe("what stopped a command, and what commands used", () => {
  it("records the limit that stopped a command and each command's CPU in its feedback event, and the report adds them up", async () => {
    // CPU time, not wall time: the loop ends once the process itself has used 300 ms of CPU.
    const burn = `node -e "while (process.cpuUsage().user < 300000);"`;
    const a = await testAgent(project(false), {
      decide: [call("run_command", { command: burn }), call("run_command", { command: "sleep 20", timeoutMs: 500 }), call("finish", { summary: "Done." })],
    });
    agents.push(a);
    const r = await reportOf(a);
    const fb = (await a.events())
      .filter((e) => e.type === "environment_feedback" && e.payload.tool === "run_command")
      .map((e) => e.payload as Record<string, unknown>);
    expect(fb).toHaveLength(2);
    expect(fb[0]).toMatchObject({ status: "ok", stoppedBy: null, limit: null });
    expect(fb[1]).toMatchObject({ status: "error", errorClass: "timeout", stoppedBy: "limit", limit: "timeout" });
    const cg = detectCgroups().parents;
    if (cg.cpuacct && cg.memory) {
      // Measured by the command's own cgroups: all of its processes, node included.
      expect((fb[0]!.usage as { cpuMs: number }).cpuMs).toBeGreaterThanOrEqual(300);
      expect((fb[0]!.usage as { memoryPeakBytes: number }).memoryPeakBytes).toBeGreaterThan(1024 * 1024);
      expect(r.commands).toMatchObject({ count: 2, measured: 2, mostCpu: { step: 1, command: burn } });
      expect(r.commands!.cpuMs).toBeGreaterThanOrEqual(300);
      expect(reportMarkdown(r)).toMatch(
        /## Commands\n\n2 shell commands, \d+\.\d\d s of CPU in all; the most CPU: step 1 `node -e .*` \(\d+\.\d\d s\); the highest memory peak: step \d `.*` \(\d+(\.\d)? MiB\)\./,
      );
    } else {
      expect(r.commands).toMatchObject({ count: 2, measured: 0, mostCpu: null });
      expect(reportMarkdown(r)).toContain("2 shell commands, CPU not measured (no cgroups).");
    }
    expect(r.problems).toEqual([expect.objectContaining({ step: 2, errorClass: "timeout", stoppedBy: "limit", limit: "timeout" })]);
    // The error class says "timeout" already: no second word for it.
    expect(reportMarkdown(r)).toMatch(/- step 2: .*sleep 20.* → error \(timeout\)\n/);
  }, 120_000);
});
