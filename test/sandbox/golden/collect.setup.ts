/**
 * Records every command line the policy, parser and attack suites feed to the policy (or run through
 * the sandbox), for the golden-decisions fixture. Not a test: run it as a vitest setup file with
 * POLICY_COLLECT=<out.jsonl> (see policy-golden.test.ts for the command). The workspace path (and its
 * parent) and the home directory are replaced by placeholders so the fixture does not depend on
 * where the tests made their temp directories.
 */
import fs from "node:fs";
import path from "node:path";
import { vi } from "vitest";

const OUT = process.env.POLICY_COLLECT;

function record(entry: { source: string; command: string; workspace?: string; home?: string; policy?: unknown; level?: string; cwd?: string }): void {
  if (!OUT || typeof entry.command !== "string") return;
  let cmd = entry.command;
  let cwd = entry.cwd ?? null;
  if (entry.workspace) {
    const ws = path.resolve(entry.workspace);
    cmd = cmd.split(ws).join("<WS>").split(path.dirname(ws)).join("<WSPARENT>");
    if (cwd) cwd = path.relative(ws, path.resolve(ws, cwd)) || ".";
  }
  if (entry.home) cmd = cmd.split(entry.home).join("<HOME>");
  fs.appendFileSync(OUT, `${JSON.stringify({ source: entry.source, command: cmd, policy: entry.policy ?? null, level: entry.level ?? null, cwd })}\n`);
}

vi.mock("../../../src/sandbox/policy.js", async (importOriginal) => {
  const m = await importOriginal<typeof import("../../../src/sandbox/policy.js")>();
  return {
    ...m,
    evaluatePolicy: (cmd: string, policy: Parameters<typeof m.evaluatePolicy>[1], ctx: Parameters<typeof m.evaluatePolicy>[2]) => {
      record({ source: "evaluatePolicy", command: cmd, workspace: ctx.workspace, home: ctx.home, policy, level: ctx.level, cwd: ctx.cwd });
      return m.evaluatePolicy(cmd, policy, ctx);
    },
  };
});

vi.mock("../../../src/sandbox/policy-parts.js", async (importOriginal) => {
  const m = await importOriginal<typeof import("../../../src/sandbox/policy-parts.js")>();
  return {
    ...m,
    parseCommandLine: (cmd: string, opts?: Parameters<typeof m.parseCommandLine>[1]) => {
      if (new Error().stack?.split("\n")[2]?.includes("/test/")) record({ source: "parseCommandLine", command: cmd, workspace: opts?.cwd, home: opts?.home });
      return m.parseCommandLine(cmd, opts);
    },
  };
});

vi.mock("../../../src/sandbox/executor.js", async (importOriginal) => {
  const m = await importOriginal<typeof import("../../../src/sandbox/executor.js")>();
  return {
    ...m,
    createSandbox: (...args: Parameters<typeof m.createSandbox>) => {
      const sb = m.createSandbox(...args);
      const exec = sb.exec.bind(sb);
      sb.exec = (req) => {
        record({ source: "sandbox.exec", command: req.command, workspace: req.workspace });
        return exec(req);
      };
      return sb;
    },
  };
});
