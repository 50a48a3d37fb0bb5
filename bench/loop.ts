import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { END, MessagesValue, START, StateGraph, StateSchema } from "@langchain/langgraph";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { SqliteCheckpointSaver } from "../src/ledger/sqlite-saver.js";
import { z } from "zod";
import { createCodingAgent, recursionLimitFor } from "../src/agent/graph.js";
import { openStateDb } from "../src/ledger/state-db.js";
import { ScriptedModel } from "../src/models/scripted.js";
import { createRuntime } from "../src/runtime.js";
import { readFileTool } from "../src/agent/tools/read-file.js";
import { median, printTable, type BenchResult } from "./report.js";

const FILES = 20;

function makeWorkspace(): string {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-loop-")));
  // ~2 KB source files: what a read_file or a short test run returns in a real session.
  for (let i = 0; i < FILES; i++) {
    const lines = Array.from({ length: 60 }, (_, j) => `export const value${i}_${j} = compute(${j}, "${"x".repeat(8)}");`);
    fs.writeFileSync(path.join(ws, `mod${i}.ts`), lines.join("\n").slice(0, 2048) + "\n");
  }
  return ws;
}

/** Bytes of checkpoint + metadata rows, averaged per checkpoint, for checkpoints whose agent step is `step`. */
function bytesAtStep(db: import("../src/sqlite/driver.js").Database, thread: string, step: number, stepOf: (cp: Buffer) => number | null): number {
  const rows = db.prepare("SELECT checkpoint, metadata FROM checkpoints WHERE thread_id = ?").all(thread) as Array<{ checkpoint: Buffer; metadata: Buffer }>;
  const sizes = rows.filter((r) => stepOf(r.checkpoint) === step).map((r) => r.checkpoint.length + r.metadata.length);
  return sizes.length ? sizes.reduce((a, b) => a + b, 0) / sizes.length : NaN;
}

function ledgerloopStep(cp: Buffer): number | null {
  const v = JSON.parse(cp.toString("utf8")).channel_values?.step;
  return typeof v === "number" ? v : null;
}

/** ledgerloop's graph: history in the ledger, small state. */
async function runLedgerloop(steps: number) {
  const ws = makeWorkspace();
  const decide = Array.from({ length: steps }, (_, i) => ({ tool_calls: [{ name: "read_file", args: { path: `mod${i % FILES}.ts` } }] }));
  decide.push({ tool_calls: [{ name: "finish", args: { summary: "done" } }] } as never);
  const model = new ScriptedModel({ decide });
  const stepStart: number[] = [];
  const rt = await createRuntime(
    { workspace: ws, model: "scripted:bench", maxSteps: steps + 5 },
    { model, progress: (e) => e.node === "decide" && (stepStart[e.step] = performance.now()) },
  );
  const agent = createCodingAgent({ runtime: rt });
  const t0 = performance.now();
  await agent.invoke({ goal: "read every module" }, { configurable: { thread_id: "bench" }, recursionLimit: recursionLimitFor(steps + 5), durability: "sync" });
  const total = performance.now() - t0;
  // Per-step loop time minus the tool's own time (recorded in each feedback).
  const feedback = await rt.ledger.list("bench", { types: ["environment_feedback"] });
  const toolMs = feedback.map((f) => (f.payload as { durationMs: number }).durationMs);
  const overhead: number[] = [];
  for (let s = 2; s <= steps; s++) {
    if (stepStart[s] !== undefined && stepStart[s - 1] !== undefined) overhead.push(stepStart[s]! - stepStart[s - 1]! - (toolMs[s - 2] ?? 0));
  }
  const b10 = bytesAtStep(rt.db, "bench", 10, ledgerloopStep);
  const bN = bytesAtStep(rt.db, "bench", steps, ledgerloopStep);
  const written = (rt.db.prepare("SELECT SUM(length(checkpoint) + length(metadata)) AS n FROM checkpoints").get() as { n: number }).n;
  await rt.close();
  const dbBytes = ["state.db", "state.db-wal"]
    .map((f) => path.join(ws, ".ledgerloop", f))
    .filter(fs.existsSync)
    .reduce((n, f) => n + fs.statSync(f).size, 0);
  fs.rmSync(ws, { recursive: true, force: true });
  return { total, overhead, b10, bN, dbBytes, written };
}

/**
 * Records the size of every checkpoint it writes and keeps only the newest few rows: the naive
 * design writes O(steps²) bytes in total (gigabytes at 1,000 steps), which would measure the disk.
 */
class MeasuringPruningSaver extends SqliteCheckpointSaver {
  readonly sizes = new Map<number, number[]>();
  written = 0;
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    const [, cp] = await this.serde.dumpsTyped(checkpoint);
    const [, md] = await this.serde.dumpsTyped(metadata);
    const bytes = cp.length + md.length;
    this.written += bytes;
    const step = (checkpoint.channel_values as { step?: number }).step;
    if (typeof step === "number") this.sizes.set(step, [...(this.sizes.get(step) ?? []), bytes]);
    const out = await super.put(config, checkpoint, metadata);
    this.db
      .prepare(
        "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id NOT IN (SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC LIMIT 3)",
      )
      .run(config.configurable?.thread_id, config.configurable?.thread_id);
    return out;
  }
  at(step: number): number {
    const xs = this.sizes.get(step) ?? [];
    return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
  }
}

/** The naive design: the message history lives in graph state and is checkpointed every superstep. */
async function runNaive(steps: number) {
  const ws = makeWorkspace();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-naive-"));
  const db = openStateDb(path.join(dir, "state.db"));
  const saver = new MeasuringPruningSaver(db);
  const State = new StateSchema({ messages: MessagesValue, step: z.number().default(0) });
  const ctx = { workspace: ws } as Parameters<typeof readFileTool.run>[1];
  const stepStart: number[] = [];
  const toolMs: number[] = [];
  const graph = new StateGraph(State)
    .addNode("decide", async (s) => {
      stepStart[s.step + 1] = performance.now();
      const id = `call_${s.step}`;
      return {
        step: s.step + 1,
        messages: [new AIMessage({ content: "", tool_calls: [{ id, name: "read_file", args: { path: `mod${s.step % FILES}.ts` } }] })],
      };
    })
    .addNode("act", async (s) => {
      const last = s.messages.at(-1) as AIMessage;
      const call = last.tool_calls![0]!;
      const t = performance.now();
      const r = await readFileTool.run(call.args as { path: string }, ctx);
      toolMs.push(performance.now() - t);
      return { messages: [new ToolMessage({ content: r.output, tool_call_id: call.id! })] };
    })
    .addEdge(START, "decide")
    .addEdge("decide", "act")
    .addConditionalEdges("act", (s) => (s.step >= steps ? END : "decide"), ["decide", END])
    .compile({ checkpointer: saver });
  const t0 = performance.now();
  await graph.invoke({ messages: [] }, { configurable: { thread_id: "naive" }, recursionLimit: steps * 2 + 10, durability: "sync" });
  const total = performance.now() - t0;
  const overhead: number[] = [];
  for (let s = 2; s <= steps; s++) overhead.push(stepStart[s]! - stepStart[s - 1]! - (toolMs[s - 2] ?? 0));
  db.close();
  fs.rmSync(ws, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
  return { total, overhead, b10: saver.at(10), bN: saver.at(steps), written: saver.written };
}

/** Loop overhead per step and checkpoint growth over a long scripted run, against the naive design. */
export async function benchLoop(steps = Number(process.env.BENCH_LOOP_STEPS ?? 1000)): Promise<BenchResult[]> {
  const ll = await runLedgerloop(steps);
  const naive = await runNaive(steps);
  const rows: BenchResult[] = [
    {
      name: `loop overhead per step, median (${steps} steps, model+tool time excluded)`,
      value: median(ll.overhead),
      unit: "ms",
      target: "<= 15 ms",
      ok: median(ll.overhead) <= 15,
      baseline: median(naive.overhead),
      baselineName: "naive (messages in state)",
    },
    { name: "checkpoint bytes at step 10", value: ll.b10, unit: "B", baseline: naive.b10, baselineName: "naive" },
    { name: `checkpoint bytes at step ${steps}`, value: ll.bN, unit: "B", baseline: naive.bN, baselineName: "naive" },
    {
      name: `growth: bytes at step ${steps} / step 10`,
      value: ll.bN / ll.b10,
      unit: "x",
      target: "<= 1.5",
      ok: ll.bN / ll.b10 <= 1.5,
      baseline: naive.bN / naive.b10,
      baselineName: "naive",
    },
    { name: "checkpoint bytes written over the whole run", value: ll.written / 1e6, unit: "MB", baseline: naive.written / 1e6, baselineName: "naive" },
    { name: "state.db size after the run (ledger + blobs + checkpoints)", value: ll.dbBytes / 1e6, unit: "MB" },
    { name: "wall time of the run", value: ll.total / 1000, unit: "s", baseline: naive.total / 1000, baselineName: "naive" },
  ];
  printTable("agent loop", rows);
  return rows;
}
