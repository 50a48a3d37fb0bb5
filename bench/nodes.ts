import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { createCodingAgent, recursionLimitFor } from "../src/agent/graph.js";
import { ScriptedModel } from "../src/models/scripted.js";
import { createRuntime, type Runtime } from "../src/runtime.js";
import type { RunSettingsInput } from "../src/settings.js";
import { median, printTable, type BenchResult } from "./report.js";

/**
 * Where a step's time goes: the same scripted read-only run, each node timed (the graph is built with
 * a resolver that wraps every node), under both retrieval settings. No targets: a diagnostic.
 */
async function timeNodes(retrieval: "lexical" | "hybrid", steps: number): Promise<{ perStep: number; nodes: Map<string, number[]> }> {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-nodes-")));
  for (let i = 0; i < 20; i++) {
    fs.writeFileSync(path.join(ws, `mod${i}.ts`), Array.from({ length: 60 }, (_, j) => `export const value${i}_${j} = compute(${j});`).join("\n"));
  }
  const decide = Array.from({ length: steps }, (_, i) => ({ tool_calls: [{ name: "read_file", args: { path: `mod${i % 20}.ts` } }] }));
  decide.push({ tool_calls: [{ name: "finish", args: { summary: "done" } }] } as never);
  const settings: RunSettingsInput = { workspace: ws, model: "scripted:bench", maxSteps: steps + 5, retrieval };
  const rt: Runtime = await createRuntime(settings, { model: new ScriptedModel({ decide }) });
  const nodes = new Map<string, number[]>();
  // Each node resolves the runtime first: the time from one resolve to the next node's is its share.
  let current: { name: string; start: number } | null = null;
  const close = () => {
    if (current) nodes.set(current.name, [...(nodes.get(current.name) ?? []), performance.now() - current.start]);
    current = null;
  };
  const agent = createCodingAgent({
    checkpointer: rt.checkpointer,
    resolve: async (config: LangGraphRunnableConfig) => {
      close();
      const name = String(config.metadata?.langgraph_node ?? "?");
      current = { name, start: performance.now() };
      return rt;
    },
  });
  const t0 = performance.now();
  await agent.invoke({ goal: "read every module" }, { configurable: { thread_id: "n" }, recursionLimit: recursionLimitFor(steps + 5), durability: "sync" });
  close();
  const perStep = (performance.now() - t0) / (steps + 1);
  await rt.close();
  fs.rmSync(ws, { recursive: true, force: true });
  return { perStep, nodes };
}

export async function benchNodes(steps = Number(process.env.BENCH_NODES_STEPS ?? 150)): Promise<BenchResult[]> {
  const rows: BenchResult[] = [];
  for (const retrieval of ["lexical", "hybrid"] as const) {
    const r = await timeNodes(retrieval, steps);
    rows.push({ name: `[${retrieval}] wall time per step (${steps} steps)`, value: r.perStep, unit: "ms" });
    for (const [node, xs] of r.nodes) {
      rows.push({ name: `[${retrieval}]   ${node} until the next node (median of ${xs.length})`, value: median(xs), unit: "ms" });
    }
  }
  printTable("time per node (diagnostic; the node's share includes the checkpoint write after it)", rows);
  return rows;
}
