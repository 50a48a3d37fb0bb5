import { spawnSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/build.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

// The example scripts import "ledgerloop" and run with plain node (no TypeScript loader): inside the
// repository Node resolves the package's own name through its `exports`, i.e. the built dist/.
beforeAll(() => ensureBuilt(), 300_000);
afterAll(() => cleanupTemp());

function script(name: string): { code: number | null; stdout: string; stderr: string; workspace: string } {
  const workspace = path.join(tempWorkspace(), "ws");
  const r = spawnSync(process.execPath, [path.join(REPO, "examples/scripts", name), workspace], {
    cwd: REPO,
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, workspace };
}

describe("example scripts against the built package", () => {
  it("invoke.mjs drives the compiled graph to the end of the demo", () => {
    const r = script("invoke.mjs");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/thread run-\S+: finished after 10 step\(s\)/);
    expect(r.stdout).toContain("verify=completed");
  });

  it("stream.mjs prints every node's update in order", () => {
    const r = script("stream.mjs");
    expect(r.code, r.stderr).toBe(0);
    const nodes = r.stdout
      .split("\n")
      .map((l) => l.split(" ")[0])
      .filter(Boolean);
    expect(nodes.slice(0, 4)).toEqual(["plan", "context", "decide", "act"]);
    expect(nodes.at(-2)).toBe("reflect");
    expect(r.stdout).toMatch(/: finished\n$/);
  });

  it("history.mjs reads LangGraph's history and the CLI's rows, and they agree", () => {
    const r = script("history.mjs");
    expect(r.code, r.stderr).toBe(0);
    const lg = Number(/(\d+) checkpoints \(LangGraph getStateHistory\)/.exec(r.stdout)?.[1]);
    const cli = Number(/(\d+) checkpoints \(getHistory\)/.exec(r.stdout)?.[1]);
    expect(lg).toBeGreaterThan(30);
    expect(cli).toBe(lg);
    expect(r.stdout).toMatch(/threads: run-\S+ finished/);
  });

  it("rewind.mjs puts the files back as they were before the run", () => {
    const r = script("rewind.mjs");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("has the /health route");
    expect(r.stdout).toMatch(/rewound run-\S+ to \S+: \d+ file\(s\) restored; services\/users\/server.js is as before the run/);
  });
});
