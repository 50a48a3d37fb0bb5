import fs from "node:fs";
import path from "node:path";
import { MemorySaver } from "@langchain/langgraph";
import { afterEach, describe, expect, it } from "vitest";
import { createCodingAgent } from "../../src/agent/graph.js";
import { ModelError } from "../../src/errors.js";
import { listRuns, runStatus, type RunFacts } from "../../src/ledger/run-status.js";
import { RunRegistry } from "../../src/ledger/runs.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { cli, cliSpawn, jsonLines } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

const runtimes: Runtime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
  cleanupTemp();
});

describe("runStatus: one status from what is recorded", () => {
  const f = (over: Partial<RunFacts>): RunFacts => ({ last: null, pendingInterrupt: false, runnerAlive: null, ...over });
  it.each([
    [f({ last: { type: "run_status", status: "finished" } }), "finished"],
    [f({ last: { type: "run_status", status: "failed" }, runnerAlive: true }), "failed"],
    [f({ last: { type: "run_status", status: "max_steps" } }), "max_steps"],
    [f({ last: { type: "run_status", status: "awaiting_approval" }, runnerAlive: false }), "awaiting_approval"],
    // A pause recorded only in the checkpoints (runs from before the ledger recorded pauses).
    [f({ last: { type: "agent_action" }, pendingInterrupt: true, runnerAlive: false }), "awaiting_approval"],
    [f({ last: { type: "time_travel", kind: "rewind" }, runnerAlive: false }), "rewound"],
    [f({ last: { type: "time_travel", kind: "fork" } }), "forked"],
    // The graph's own restore is followed by the node's events; on its own it means the node is under way.
    [f({ last: { type: "time_travel", kind: "restore" }, runnerAlive: true }), "running"],
    [f({ last: { type: "model_call" }, runnerAlive: true }), "running"],
    [f({ last: { type: "model_call" }, runnerAlive: false }), "interrupted"],
    [f({ last: { type: "model_call" }, runnerAlive: null }), "unknown"],
  ])("%j → %s", (facts, expected) => {
    expect(runStatus(facts)).toBe(expected);
  });
});

const call = (command: string) => ({ tool_calls: [{ name: "run_command", args: { command } }] });

describe("every entry point registers its run, and threads and the viewer show one status", () => {
  it("a script run whose model fails is registered (origin script) and listed as failed, not running", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const model = {
      name: "broken:model",
      async invoke(): Promise<never> {
        // A bad answer fails the run; an unreachable or rate-limited model would pause it instead.
        throw new ModelError("MODEL_BAD_RESPONSE", "the model server answered 503 with a body that is not a chat completion");
      },
    };
    const rt = await createRuntime({ workspace: ws, model: "scripted:x", retrieval: "lexical" }, { model });
    runtimes.push(rt);
    const agent = createCodingAgent({ runtime: rt });
    await expect(agent.invoke({ goal: "fail please" }, { configurable: { thread_id: "s1" } })).rejects.toThrow(/503/);
    const [run] = listRuns(rt.db);
    expect(run).toMatchObject({ thread: "s1", status: "failed", origin: "script", checkpointsIn: "state-db", goal: "fail please" });
    const last = (await rt.ledger.list("s1")).at(-1)!;
    expect(last).toMatchObject({ type: "run_status", payload: { status: "failed", reason: expect.stringMatching(/plan: .*503/) } });
    // The CLI lists it the same way (it used to say "running").
    const rows = jsonLines(cli(["threads", "-w", ws, "--json"]).stdout);
    expect(rows).toEqual([expect.objectContaining({ thread: "s1", status: "failed", origin: "script" })]);
  }, 120_000);

  it("a run of the exported graph with the server's own checkpointer is listed from the ledger, awaiting approval, with where its checkpoints are", async () => {
    const mod = await import("../../src/agent/graph.js");
    const graph = mod.graph;
    graph.checkpointer = new MemorySaver();
    try {
      const ws = tempWorkspace(undefined, { "README.md": "x\n" });
      const traj = path.join(tempWorkspace(), "ask.json");
      fs.writeFileSync(traj, JSON.stringify({ decide: [call("curl --version"), { tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }));
      const config = {
        configurable: { thread_id: "srv-1" },
        context: { workspace: ws, model: `scripted:${traj}`, sandbox: "none", vectors: "off", approve: "ask" },
      };
      const paused = (await graph.invoke({ goal: "ask first" }, config as never)) as { __interrupt__?: unknown[] };
      expect(paused.__interrupt__).toHaveLength(1);

      const rows = jsonLines(cli(["threads", "-w", ws, "--json"]).stdout);
      expect(rows).toEqual([
        expect.objectContaining({ thread: "srv-1", status: "awaiting_approval", origin: "server", checkpointsIn: "external", checkpoints: 0 }),
      ]);
      const hist = cli(["history", "srv-1", "-w", ws, "--json"]);
      expect(hist.code).toBe(0);
      expect(hist.stderr).toMatch(/kept by the LangGraph server/);
      const ledgerRows = jsonLines<{ checkpointId: string; view: string; next: string[] }>(hist.stdout);
      expect(ledgerRows.length).toBeGreaterThan(3);
      expect(ledgerRows.every((r) => r.view === "ledger")).toBe(true);
      // The checkpoint ids the ledger names are the server's own: the history there has them.
      const serverIds = new Set<string>();
      for await (const s of graph.getStateHistory({ configurable: { thread_id: "srv-1" } })) serverIds.add(String(s.config.configurable?.checkpoint_id));
      expect(ledgerRows.every((r) => serverIds.has(r.checkpointId))).toBe(true);
      expect(cli(["ledger", "srv-1", "-w", ws, "--json"]).code).toBe(0);
      expect(cli(["report", "srv-1", "-w", ws]).stdout).toMatch(/ask first/);
      // Commands that need the checkpoints say where they are instead of failing obscurely.
      const resume = cli(["resume", "srv-1", "-w", ws, "--approve"]);
      expect(resume.code).toBe(1);
      expect(resume.stderr).toMatch(/kept by the LangGraph server/);
    } finally {
      await mod.closeServerRuntimes();
      graph.checkpointer = undefined;
    }
  }, 180_000);

  it("a CLI run is running while its process lives, and interrupted once it is killed", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const traj = path.join(tempWorkspace(), "slow.json");
    fs.writeFileSync(traj, JSON.stringify({ decide: [call("sleep 120"), { tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }));
    const child = cliSpawn(["run", "sleep a while", "-w", ws, "-m", `scripted:${traj}`, "-t", "slow", "--sandbox", "none", "--approve", "auto", "-q"]);
    try {
      let rows: Array<{ thread: string; status: string; origin: string }> = [];
      const deadline = Date.now() + 90_000;
      while (Date.now() < deadline) {
        const db = path.join(ws, ".ledgerloop", "state.db");
        if (fs.existsSync(db)) {
          const r = cli(["threads", "-w", ws, "--json"]);
          rows = r.code === 0 ? jsonLines(r.stdout) : [];
          if (rows[0]?.status === "running") break;
        }
        await new Promise((res) => setTimeout(res, 300));
      }
      expect(rows).toEqual([expect.objectContaining({ thread: "slow", status: "running", origin: "cli" })]);
    } finally {
      child.kill("SIGKILL");
      await new Promise((res) => child.once("close", res));
      // A killed run leaves its Chroma server for the next process to adopt (by design); none comes here.
      const record = path.join(ws, ".ledgerloop", "chroma.server.json");
      if (fs.existsSync(record)) {
        try {
          process.kill((JSON.parse(fs.readFileSync(record, "utf8")) as { pid: number }).pid, "SIGTERM");
        } catch {
          // already gone
        }
      }
    }
    expect(jsonLines(cli(["threads", "-w", ws, "--json"]).stdout)).toEqual([expect.objectContaining({ thread: "slow", status: "interrupted" })]);
    // The registry holds the runner that was killed.
    const { openStateDb } = await import("../../src/ledger/state-db.js");
    const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"), { create: false, readonly: true });
    try {
      expect(new RunRegistry(db).get("slow")?.runner?.pid).toBe(child.pid);
    } finally {
      db.close();
    }
  }, 180_000);
});
