import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openAgent } from "../../src/index.js";
import { cli } from "../helpers/cli.js";
import { cleanupTemp, DEMO_TRAJECTORY, DEMO_WORKSPACE, readTree, tempWorkspace } from "../helpers/workspace.js";

// `run --dry-run` works on a throwaway copy: the real workspace stays byte-identical (contents and
// modes) until `apply`, which reproduces the copy's result, and refuses on a conflicting change.

const MODEL = `scripted:${DEMO_TRAJECTORY}`;
let dryRoot: string;
const env = () => ({ LEDGERLOOP_DRY_RUNS: dryRoot });

beforeAll(() => {
  dryRoot = tempWorkspace();
});
afterAll(() => cleanupTemp());

/** Every path under dir (the state directory aside) with its mode and bytes, as one comparable value. */
function bytesAndModes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (r === ".ledgerloop") continue;
      const abs = path.join(dir, r);
      const st = fs.lstatSync(abs);
      if (e.isDirectory()) {
        out[`${r}/`] = (st.mode & 0o7777).toString(8);
        walk(r);
      } else out[r] = `${(st.mode & 0o7777).toString(8)} ${fs.readFileSync(abs).toString("base64")}`;
    }
  };
  walk("");
  return out;
}

function dryRun(ws: string, thread: string) {
  const r = cli(["run", "demo task", "-w", ws, "--model", MODEL, "--thread", thread, "--dry-run", "--json", "-q"], { env: env(), timeoutMs: 120_000 });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as {
    status: string;
    dryRun: {
      workspace: string;
      copy: string;
      changes: { created: string[]; modified: string[]; deleted: string[] };
      commands: Array<{ tool: string; command: string }>;
      diff: string;
    };
  };
}

describe("ledgerloop run --dry-run and apply", () => {
  it("leaves the workspace byte-identical, reports diff and commands, and apply reproduces the copy", () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const before = bytesAndModes(ws);
    const out = dryRun(ws, "D");
    expect(out.status).toBe("finished");
    expect(bytesAndModes(ws)).toEqual(before);
    expect(fs.existsSync(path.join(ws, ".ledgerloop"))).toBe(false);
    expect(out.dryRun.workspace).toBe(ws);
    expect(out.dryRun.copy.startsWith(dryRoot)).toBe(true);
    expect(out.dryRun.changes).toEqual({
      created: [],
      modified: ["dashboard/aggregate.js", "services/orders/server.js", "services/users/server.js"],
      deleted: [],
    });
    expect(out.dryRun.diff).toContain("+++ b/services/orders/server.js");
    expect(out.dryRun.diff).toContain('+    if (req.method === "GET" && req.url === "/health") {');
    expect(out.dryRun.commands.map((c) => c.tool)).toEqual(["run_tests", "run_command", "run_tests"]);
    expect(out.dryRun.commands[1]!.command).toMatch(/^sed /);

    const applied = cli(["apply", "D", "-w", ws, "--json"], { env: env() });
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout).applied.modified).toHaveLength(3);
    expect(bytesAndModes(ws)).toEqual(bytesAndModes(out.dryRun.copy));
    expect(readTree(ws)["services/orders/server.js"]).toContain('url === "/health"');
    // Once only.
    const again = cli(["apply", "D", "-w", ws], { env: env() });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/the dry run of D was applied already/);
  }, 240_000);

  it("apply refuses, naming the files, when the workspace changed them meanwhile, and writes nothing", () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    dryRun(ws, "C");
    fs.appendFileSync(path.join(ws, "services/users/server.js"), "// edited by hand\n");
    const before = bytesAndModes(ws);
    const r = cli(["apply", "C", "-w", ws], { env: env() });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`not applied: 1 file(s) the dry run changed were also changed in ${ws} since the copy was made: services/users/server.js`);
    expect(bytesAndModes(ws)).toEqual(before);
    // A change to a file the run did not touch is no conflict.
    const ws2 = tempWorkspace(DEMO_WORKSPACE);
    dryRun(ws2, "C2");
    fs.writeFileSync(path.join(ws2, "NOTES.md"), "mine\n");
    expect(cli(["apply", "C2", "-w", ws2], { env: env() }).code).toBe(0);
    expect(fs.readFileSync(path.join(ws2, "NOTES.md"), "utf8")).toBe("mine\n");
  }, 240_000);

  it("apply names an unknown dry run and a workspace that is not the dry run's", () => {
    const r = cli(["apply", "nope", "-w", DEMO_WORKSPACE], { env: env() });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no dry run of thread "nope" in ${dryRoot}`);
    const bad = cli(["apply", "../x"], { env: env() });
    expect(bad.stderr).toContain('"../x" is not a thread id');
  });
});

describe("openAgent({ dryRun: true })", () => {
  it("runs on a copy and returns the changes it would apply", async () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const before = bytesAndModes(ws);
    const saved = process.env.LEDGERLOOP_DRY_RUNS;
    process.env.LEDGERLOOP_DRY_RUNS = dryRoot;
    try {
      const agent = await openAgent({ workspace: ws, model: MODEL, dryRun: true, retrieval: "lexical", approve: "auto" });
      const r = await agent.run("demo task", { thread: "A1" });
      await agent.close();
      expect(r.status).toBe("finished");
      expect(r.dryRun?.changes.modified).toEqual(["dashboard/aggregate.js", "services/orders/server.js", "services/users/server.js"]);
      expect(bytesAndModes(ws)).toEqual(before);
      expect(cli(["apply", "A1", "-w", ws], { env: env() }).code).toBe(0);
      expect(bytesAndModes(ws)).toEqual(bytesAndModes(r.dryRun!.copy));
    } finally {
      if (saved === undefined) delete process.env.LEDGERLOOP_DRY_RUNS;
      else process.env.LEDGERLOOP_DRY_RUNS = saved;
    }
    await expect(openAgent({ workspace: ws, model: MODEL, dryRun: "yes" as never })).rejects.toThrow(/invalid setting dryRun: expected a boolean/);
  }, 240_000);
});
