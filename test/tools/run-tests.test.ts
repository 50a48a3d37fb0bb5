import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLexicalSearcher } from "../../src/retrieval/lexical.js";
import { createLocalSandbox } from "../../src/sandbox/executor.js";
import type { ToolContext } from "../../src/agent/tools/index.js";
import { runTestsTool } from "../../src/agent/tools/run-tests.js";

let ws: string;
let ctx: ToolContext;

beforeEach(() => {
  ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-run-tests-")));
  // A node:test suite the detector finds through package.json.
  fs.writeFileSync(path.join(ws, "package.json"), JSON.stringify({ name: "t", type: "module", scripts: { test: "node --test" } }));
  fs.writeFileSync(path.join(ws, "a.test.js"), 'import test from "node:test";\ntest("adds", () => {});\ntest("fails", () => { throw new Error("boom"); });\n');
  ctx = {
    workspace: ws,
    sandbox: createLocalSandbox(),
    searcher: createLexicalSearcher(ws),
    commandTimeoutMs: 10_000,
    testTimeoutMs: 60_000,
    outputCapBytes: 16 * 1024,
  };
});
afterEach(() => fs.rmSync(ws, { recursive: true, force: true }));

describe("run_tests", () => {
  it("detects the command the policy is shown, and runs it with parsed counts", async () => {
    expect(await runTestsTool.command!({}, ctx)).toBe("npm test --silent");
    const r = await runTestsTool.run({}, ctx);
    expect(r.command).toBe("npm test --silent");
    expect(r.tests).toMatchObject({ passed: 1, failed: 1 });
    expect(r.errorClass).toBe("test_failure");
  });

  it("runs exactly the command that was checked (and approved), not a fresh detection", async () => {
    // What the policy saw must be what runs, even if the workspace would now detect another command.
    const command = "node --test --test-name-pattern=adds a.test.js";
    const r = await runTestsTool.run(
      {},
      { ...ctx, checked: { command, verdict: { decision: "allow", rule: "test", reason: "checked by the test", parts: [] } } },
    );
    expect(r.command).toBe("node --test --test-name-pattern=adds a.test.js");
    expect(r.tests).toMatchObject({ passed: 1, failed: 0 });
  });
});
