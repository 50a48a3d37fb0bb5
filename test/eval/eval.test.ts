import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { inflateRawSync } from "node:zlib";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, describe, expect, it } from "vitest";
import { runEval } from "../../src/eval/eval.js";
import { loadSuite } from "../../src/eval/task.js";
import { cliSpawn } from "../helpers/cli.js";
import { startOpenAIStub, type StubReply } from "../helpers/openai-stub.js";

// The shipped suite through the real harness: real runtime, sandbox, SQLite, hidden tests in the
// sandbox. Slow tier (test/tiers.ts): about a minute for the oracle run on a 2-core machine.

const SUITE = path.join(import.meta.dirname, "../../eval/suite");
const tasks = loadSuite(SUITE);
const made: string[] = [];
const outDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "ll-eval-"));
  made.push(d);
  return d;
};
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});
const settings = { vectors: "off" as const };

/** Every text the run's state dir holds: its files as bytes, and the ledger's compressed blobs inflated. */
function stateText(stateDir: string): string {
  const parts: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else parts.push(fs.readFileSync(p).toString("latin1"));
    }
  };
  walk(stateDir);
  const db = new Database(path.join(stateDir, "state.db"), { readonly: true });
  for (const row of db.prepare("SELECT data FROM ll_blobs").all() as Array<{ data: Buffer }>) parts.push(inflateRawSync(row.data).toString("utf8"));
  db.close();
  return parts.join("\n");
}

/** The text of every file under a folder. */
function filesText(dir: string): string {
  return (fs.readdirSync(dir, { recursive: true }) as string[])
    .map((f) => path.join(dir, f))
    .filter((p) => fs.statSync(p).isFile())
    .map((p) => fs.readFileSync(p, "utf8"))
    .join("\n");
}

describe("ledgerloop eval on the shipped suite", () => {
  it("the oracle solves every task; the hidden tests never reach the run's state", async () => {
    const out = outDir();
    const t0 = Date.now();
    const r = await runEval({ suiteDir: SUITE, model: "oracle", concurrency: 2, outDir: out, settings });
    console.log(`oracle: ${r.results.length} task(s) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(r.results.map((x) => [x.task, x.solved, x.status])).toEqual(tasks.map((t) => [t.id, true, "finished"]));
    for (const x of r.results) expect(x.steps, x.task).toBeGreaterThanOrEqual(15);
    // No oracle step is refused by the policy or fails as a tool (a failing test run is fine).
    for (const x of r.results) expect(x.faults, x.task).toBeUndefined();
    expect(fs.readFileSync(r.reportFile, "utf8")).toContain(`| ledgerloop | ${tasks.length}/${tasks.length} (100%) |`);
    for (const t of tasks) {
      const state = path.join(out, "work", `${t.id}.ledgerloop.1`, "state");
      const text = stateText(state);
      // The search finds what the run did see (its goal is in the ledger) ...
      expect(text, t.id).toContain(t.goal.slice(0, 60));
      // ... and none of the hidden tests, which are in the workspace now (copied after the run).
      for (const f of fs.readdirSync(t.hiddenDir!, { recursive: true }) as string[]) {
        const p = path.join(t.hiddenDir!, f);
        // An empty __init__.py says nothing a run could leak.
        if (!fs.statSync(p).isFile() || fs.statSync(p).size === 0) continue;
        expect(fs.existsSync(path.join(out, "work", `${t.id}.ledgerloop.1`, "workspace", f)), f).toBe(true);
        // Lines of the hidden tests that the run could not have written itself (not in the task's
        // workspace, not in its oracle), searched as they are and as JSON strings carry them.
        const known = `${filesText(t.workspaceDir!)}\n${fs.readFileSync(t.oracleFile!, "utf8")}`;
        const own = fs
          .readFileSync(p, "utf8")
          .split("\n")
          .map((l) => l.trim())
          .filter((l) => l.length > 30 && !known.includes(l) && !known.includes(JSON.stringify(l).slice(1, -1)));
        expect(own.length, `${t.id}/${f}`).toBeGreaterThan(5);
        for (const line of own) {
          expect(text.includes(line) || text.includes(JSON.stringify(line).slice(1, -1)), `${t.id}/${f}: ${line}`).toBe(false);
        }
        expect(text.includes(path.basename(f)), `${t.id}: ${f}`).toBe(false);
      }
    }
  }, 600_000);

  it("a do-nothing model solves none, with ledgerloop and with the plain baseline", async () => {
    const r = await runEval({ suiteDir: SUITE, model: "nothing", baseline: "plain", concurrency: 2, outDir: outDir(), settings });
    expect(r.results).toHaveLength(tasks.length * 2);
    for (const x of r.results) {
      expect(x.solved, `${x.task} ${x.agent}`).toBe(false);
      expect(x.hiddenExit, `${x.task} ${x.agent}`).not.toBe(0);
      expect(x.status).toBe(x.agent === "plain" ? "no_tool_call" : "no_progress");
    }
  }, 600_000);

  it("--resume runs only what has no result; a second eval into the same folder is refused", async () => {
    const out = outDir();
    const first = await runEval({ suiteDir: SUITE, model: "nothing", only: [tasks[0]!.id], outDir: out, settings });
    const file = path.join(out, "results", `${tasks[0]!.id}.ledgerloop.1.json`);
    const stored = fs.readFileSync(file, "utf8");
    const mtime = fs.statSync(file).mtimeMs;
    await expect(runEval({ suiteDir: SUITE, model: "nothing", only: [tasks[0]!.id], outDir: out, settings })).rejects.toMatchObject({ code: "EVAL_OUT_EXISTS" });
    await expect(runEval({ suiteDir: SUITE, model: "oracle", only: [tasks[0]!.id], outDir: out, resume: true, settings })).rejects.toMatchObject({ code: "EVAL_OUT_MISMATCH" });
    // As if interrupted after the first task: the resume runs the second one only.
    const seen: string[] = [];
    const both = [tasks[0]!.id, tasks[1]!.id];
    const resumed = await runEval({ suiteDir: SUITE, model: "nothing", only: both, outDir: out, resume: true, settings, onResult: (x) => seen.push(x.task) });
    expect(resumed.resumed).toBe(1);
    expect(seen).toEqual([tasks[1]!.id]);
    expect(resumed.results[0]).toEqual(first.results[0]);
    expect(resumed.results.map((x) => x.task)).toEqual(both);
    expect(fs.readFileSync(file, "utf8")).toBe(stored);
    expect(fs.statSync(file).mtimeMs).toBe(mtime);
  }, 600_000);

  it("through the CLI against an OpenAI-compatible server, ledgerloop and the plain baseline side by side", async () => {
    const task = tasks.find((t) => t.id === "js-order-coupons")!;
    const oracle = JSON.parse(fs.readFileSync(task.oracleFile!, "utf8")) as { plan: Turn[]; decide: Turn[] };
    type Turn = { content?: string; tool_calls?: Array<{ name: string; args: unknown }> };
    const reply = (t: Turn): StubReply => ({ content: t.content ?? "", tool_calls: (t.tool_calls ?? []).map((c) => ({ name: c.name, arguments: JSON.stringify(c.args) })), usage: { prompt_tokens: 1000, completion_tokens: 50 } });
    const turns = { ledgerloop: 0, plain: 0 };
    const stub = await startOpenAIStub({
      respond: (body) => {
        const system = String(body.messages[0]?.content ?? "");
        if (system.startsWith("You plan")) return reply(oracle.plan[0]!);
        if (system.startsWith("You review") || system.startsWith("Summarise")) return { content: "Nothing to add." };
        const who = system.startsWith("You are a coding agent working in a project workspace") ? "plain" : "ledgerloop";
        const t = oracle.decide[turns[who]++];
        return t ? reply(t) : { content: "done" };
      },
    });
    try {
      const out = outDir();
      const child = cliSpawn(["eval", SUITE, "--task", task.id, "--model", "openai:stub-model", "--baseline", "plain", "--vectors", "off", "--out", out, "--json"], {
        env: { OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: "sk-test" },
      });
      let stdout = "";
      let stderr = "";
      child.stdout!.on("data", (d) => (stdout += d));
      child.stderr!.on("data", (d) => (stderr += d));
      const code = await new Promise<number | null>((r) => child.on("exit", r));
      expect(code, stderr).toBe(0);
      const json = JSON.parse(stdout) as { summary: Array<{ agent: string; solved: number; runs: number; modelCalls: number; inputTokens: number }>; results: Array<{ agent: string; solved: boolean; steps: number }> };
      expect(json.results.map((x) => [x.agent, x.solved])).toEqual([["ledgerloop", true], ["plain", true]]);
      const ll = json.summary.find((s) => s.agent === "ledgerloop")!;
      const plain = json.summary.find((s) => s.agent === "plain")!;
      // Both loops played the same decide turns; ledgerloop also planned. Tokens are the server's.
      expect(plain.modelCalls).toBe(oracle.decide.length);
      expect(ll.modelCalls).toBeGreaterThan(oracle.decide.length);
      expect(ll.inputTokens).toBeGreaterThanOrEqual((oracle.decide.length + 1) * 1000);
      expect(fs.readFileSync(path.join(out, "report.md"), "utf8")).toContain("## Per task, side by side");
      console.log(stderr.split("\n").filter((l) => l.startsWith("[")).join("\n"));
    } finally {
      await stub.close();
    }
  }, 600_000);
});
