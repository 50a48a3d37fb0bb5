import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runEval } from "../../src/eval/eval.js";
import { stepFault } from "../../src/eval/faults.js";

// An oracle trajectory whose steps are refused "solves" a task only by luck: the harness finds
// such steps in the run's ledger (or the baseline's tool results) and does not count the run as
// solved. Slow tier (test/tiers.ts): two real runs of a shipped task.

const SUITE = path.join(import.meta.dirname, "../../eval/suite");
const made: string[] = [];
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

describe("faulty steps", () => {
  it("a failing test run is how a bug is found; a refused, stopped or rejected step is a fault", () => {
    const tests = { tool: "run_tests", status: "error", output: "tests: 1 failed", exitCode: 1, errorClass: "test_failure" };
    expect(stepFault(3, tests)).toBeNull();
    expect(stepFault(3, { ...tests, exitCode: 126, errorClass: "policy_denied", output: "command refused by policy (rule x)" })).toMatch(/^step 3 run_tests \(error, policy_denied\): command refused/);
    expect(stepFault(3, { ...tests, exitCode: null, stoppedBy: "limit" })).not.toBeNull();
    expect(stepFault(4, { tool: "run_command", status: "error", output: "exit code 1\nmore", exitCode: 1 })).toBe("step 4 run_command (error): exit code 1");
    expect(stepFault(5, { tool: "write_file", status: "rejected", output: "Unknown tool" })).not.toBeNull();
    expect(stepFault(5, { tool: "run_command", status: "interrupted", output: "interrupted" })).not.toBeNull();
    expect(stepFault(6, { tool: "read_file", status: "ok", output: "x" })).toBeNull();
  });

  it("an oracle with a step the policy refuses is not counted as solved, with either agent", async () => {
    // js-order-coupons with one more step: inline code loading modules by computed names, which
    // the policy refuses without an approval (the oracles of two shipped tasks once did this).
    const suite = fs.mkdtempSync(path.join(os.tmpdir(), "ll-broken-oracle-"));
    made.push(suite);
    const dir = path.join(suite, "js-order-coupons");
    fs.cpSync(path.join(SUITE, "js-order-coupons"), dir, { recursive: true });
    const oracle = JSON.parse(fs.readFileSync(path.join(dir, "oracle.json"), "utf8")) as { decide: unknown[] };
    const bad = { content: "", tool_calls: [{ name: "run_command", args: { command: `node -e "import('./src/cart.js').then((m) => console.log(Object.keys(m)))"` } }] };
    oracle.decide.splice(oracle.decide.length - 1, 0, bad);
    fs.writeFileSync(path.join(dir, "oracle.json"), JSON.stringify(oracle));
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "ll-eval-"));
    made.push(out);
    const r = await runEval({ suiteDir: suite, model: "oracle", baseline: "plain", outDir: out, settings: { vectors: "off" } });
    expect(r.results.map((x) => x.agent)).toEqual(["ledgerloop", "plain"]);
    for (const x of r.results) {
      // The hidden tests pass (the refused step changed nothing), yet the run is not solved.
      expect(x.hiddenExit, x.agent).toBe(0);
      expect(x.solved, x.agent).toBe(false);
      expect(x.faults, x.agent).toHaveLength(1);
      expect(x.faults![0], x.agent).toMatch(/run_command \(error, policy_denied\): command refused by policy \(rule interp\.inline-exec\)/);
      expect(x.error, x.agent).toMatch(/^the oracle trajectory has 1 faulty step\(s\)/);
    }
  }, 300_000);
});
