import fs from "node:fs";
import path from "node:path";
import { Command, MemorySaver, type CompiledStateGraph } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, REPO, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";

// The module as the server loads it (by the path in langgraph.json); it owns the runtimes to close.
let loaded: Record<string, unknown> | undefined;
afterAll(async () => {
  await (loaded?.closeServerRuntimes as (() => Promise<void>) | undefined)?.();
  cleanupTemp();
});

/**
 * What the LangGraph dev server (and so Studio) does with langgraph.json: import the named export,
 * give it the server's own checkpointer, and invoke it with the run settings in the context and no
 * recursion limit of its own (the server's default of 25 supersteps ends a run after ~4 steps).
 */
describe("the graph langgraph.json exports for LangGraph Studio", () => {
  it("runs the demo to the end with a server-provided checkpointer and context, and can be stepped back through", async () => {
    const spec = (JSON.parse(fs.readFileSync(path.join(REPO, "langgraph.json"), "utf8")) as { graphs: Record<string, string> }).graphs["coding-agent"]!;
    const [file, exportName] = spec.split(":") as [string, string];
    const mod = (loaded = (await import(path.join(REPO, file))) as Record<string, unknown>);
    const graph = mod[exportName] as CompiledStateGraph<Record<string, unknown>, Record<string, unknown>, string>;
    expect(Object.keys(graph.getGraph().nodes)).toEqual(expect.arrayContaining(["plan", "context", "decide", "act", "observe", "reflect", "summarize"]));
    graph.checkpointer = new MemorySaver();

    const ws = tempWorkspace(DEMO_WORKSPACE);
    const config = { configurable: { thread_id: "studio-1" }, context: { workspace: ws, model: `scripted:${DEMO_TRAJECTORY}` } };
    const final = (await graph.invoke({ goal: "Add /health to both services and the dashboard" }, config)) as { status: string; step: number };
    expect(final).toMatchObject({ status: "finished", step: 10 });
    expect(readTree(ws)["services/orders/server.js"]).toContain("/health");

    // Every superstep is in the server's checkpointer, for Studio's timeline and time travel.
    const history = [];
    for await (const s of graph.getStateHistory(config)) history.push(s);
    expect(history.length).toBeGreaterThan(40);
    const decideStep = history.find((s) => s.next.includes("decide") && (s.values as { step?: number }).step === 3);
    expect(decideStep).toBeDefined();

    // The ledger lives in the workspace's state directory, as with the CLI.
    const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"), { create: false, readonly: true });
    try {
      const events = await new SqliteLedger(db).list("studio-1");
      expect(events.filter((e) => e.type === "environment_feedback").length).toBeGreaterThanOrEqual(10);
      expect(events.at(-1)).toMatchObject({ type: "run_status", payload: { status: "finished" } });
    } finally {
      db.close();
    }
  }, 120_000);

  it("takes sandbox, approval and retrieval settings from the run context", async () => {
    const graph = (loaded ?? (loaded = (await import(path.join(REPO, "src/agent/graph.ts"))) as Record<string, unknown>)).graph as CompiledStateGraph<
      Record<string, unknown>,
      Record<string, unknown>,
      string
    >;
    graph.checkpointer = new MemorySaver();
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const config = {
      configurable: { thread_id: "studio-2" },
      context: { workspace: ws, model: `scripted:${DEMO_TRAJECTORY}`, sandbox: "none", vectors: "off", approve: "deny" },
    };
    expect(await graph.invoke({ goal: "demo" }, config)).toMatchObject({ status: "finished" });
    const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"), { create: false, readonly: true });
    try {
      const feedback = (await new SqliteLedger(db).list("studio-2", { types: ["environment_feedback"] })).map((e) => e.payload as { sandbox?: string });
      const commands = feedback.filter((p) => p.sandbox);
      expect(commands.length).toBeGreaterThan(0);
      expect(commands.every((p) => p.sandbox === "none")).toBe(true);
    } finally {
      db.close();
    }
    // No vector side: no Chroma data directory was made.
    expect(fs.existsSync(path.join(ws, ".ledgerloop", "chroma"))).toBe(false);
    // A command the policy wants approved is an interrupt the server shows; resuming it with a
    // decision runs (or refuses) the command and the run goes on.
    const traj = path.join(tempWorkspace(), "ask.json");
    fs.writeFileSync(
      traj,
      JSON.stringify({
        decide: [
          { tool_calls: [{ name: "run_command", args: { command: "curl --version >/dev/null 2>&1; echo asked-and-ran" } }] },
          { tool_calls: [{ name: "finish", args: { summary: "done" } }] },
        ],
      }),
    );
    const askWs = tempWorkspace(undefined, { "README.md": "x\n" });
    const ask = {
      configurable: { thread_id: "studio-ask" },
      context: { workspace: askWs, model: `scripted:${traj}`, sandbox: "none", vectors: "off", approve: "ask" },
    };
    const paused = (await graph.invoke({ goal: "ask first" }, ask)) as { __interrupt__?: Array<{ value: { kind: string; command: string } }> };
    expect(paused.__interrupt__?.[0]?.value).toMatchObject({ kind: "approval", command: expect.stringContaining("curl") });
    const resumed = (await graph.invoke(new Command({ resume: { decision: "approve" } }), ask)) as { status: string };
    expect(resumed.status).toBe("finished");
    const askDb = openStateDb(path.join(askWs, ".ledgerloop", "state.db"), { create: false, readonly: true });
    try {
      const events = await new SqliteLedger(askDb).list("studio-ask");
      expect(events.find((e) => e.type === "approval")?.payload).toMatchObject({ decision: "approved", by: "user" });
      expect(String((events.find((e) => e.type === "environment_feedback")?.payload as { output?: string }).output)).toContain("asked-and-ran");
    } finally {
      askDb.close();
    }

    // A context value that is not a setting is refused before anything runs.
    await expect(graph.invoke({ goal: "demo" }, { configurable: { thread_id: "studio-3" }, context: { workspace: ws, sandbox: "docker" } })).rejects.toThrow(
      /sandbox/,
    );
  }, 120_000);
});
