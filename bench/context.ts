import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildPrompt } from "../src/context/builder.js";
import { deferredTokenCounter } from "../src/context/token-thread.js";
import { loadTokenCounter, type TokenCounter } from "../src/context/tokens.js";
import { loadEventSchemas } from "../src/ledger/event-rows.js";
import { SqliteLedger } from "../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../src/ledger/state-db.js";
import { SqliteStore } from "../src/memory/sqlite-store.js";
import { rememberLessons } from "../src/memory/lessons.js";
import { createRetriever } from "../src/retrieval/hybrid.js";
import { TaskState, type TaskStateValue } from "../src/state.js";
import { toolSpecs } from "../src/agent/tools/index.js";
import { benchPrefixReuse } from "./context-reuse.js";
import { median, printTable, quantile, type BenchResult } from "./report.js";

const RUNS = Number(process.env.BENCH_CONTEXT_RUNS ?? 30);
const SIZES = process.env.BENCH_CONTEXT_SIZES?.split(",").map(Number);

/** A counter that counts its calls. */
function counting(inner: TokenCounter): TokenCounter & { calls: number } {
  const c = { encoding: inner.encoding, calls: 0, count: (t: string) => (c.calls++, inner.count(t)) };
  return c;
}

/** A fresh (empty-cached) in-thread counter and a fresh worker-thread counter, both loaded. */
async function freshCounters(): Promise<{ thread: TokenCounter; worker: TokenCounter & { close(): Promise<void> } }> {
  const worker = deferredTokenCounter({ model: "bench", encoding: "o200k_base", contextWindow: 128_000, reservedOutput: 4_096, fallback: false });
  await worker.ready;
  const thread = await loadTokenCounter("o200k_base");
  // Warm the worker's JIT on text no prompt holds, as this thread's already is: the rows compare round trips.
  const warm = fs.readFileSync(new URL(import.meta.url), "utf8");
  for (let i = 0; i < 20; i++) worker.count(`${i} ${warm}`);
  return { thread, worker };
}

function workspace(): string {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-ctx-")));
  for (let i = 0; i < 60; i++) {
    fs.mkdirSync(path.join(ws, `src/m${i % 6}`), { recursive: true });
    fs.writeFileSync(
      path.join(ws, `src/m${i % 6}/file${i}.ts`),
      Array.from({ length: 40 }, (_, j) => `export function op${i}_${j}(x: number) { return x + ${j}; } // cache ${j % 7}`).join("\n"),
    );
  }
  return ws;
}

/** A ledger of about `events` events shaped like a real run (5 events a step, a decision every 25 steps, summaries). */
function synthesize(db: import("../src/sqlite/driver.js").Database, events: number): { head: string; steps: number } {
  const ledger = new SqliteLedger(db);
  let head: string | null = null;
  const add = (type: string, payload: unknown, causedBy?: string): string => {
    head = ledger.appendSync({ threadId: "b", parentId: head, type: type as "decision", payload: payload as never, causedBy }).id;
    return head;
  };
  add("task_spec", { goal: "Add caching to the service layer and keep the tests green", subtasks: [], source: "deterministic" });
  let step = 0;
  let lastSummarised = 1;
  while ((head ? ledger.branchSync(head, { last: 1 })[0]!.seq : 0) < events) {
    step++;
    add("context_built", { step, promptRef: "0".repeat(64), tokens: 9000, budget: 16000, items: [], omitted: [] });
    const call = add("model_call", {
      node: "decide",
      turn: step - 1,
      model: "bench",
      content: `step ${step}`,
      toolCalls: [{ id: `c${step}`, name: "run_command", args: { command: `npm test -- file${step % 60}` } }],
    });
    const action = add(
      "agent_action",
      { tool: "run_command", args: { command: `npm test -- file${step % 60}` }, callId: `c${step}`, step, idempotencyKey: `k${step}`, idempotent: false },
      call,
    );
    const failed = step % 3 === 0;
    const output = Array.from(
      { length: 45 },
      (_, j) => `${failed ? "FAIL" : "ok"} src/m${step % 6}/file${step % 60}.ts:${j + 1} cache assertion ${j} step ${step}`,
    ).join("\n");
    add(
      "environment_feedback",
      { tool: "run_command", status: failed ? "error" : "ok", output, durationMs: 12, errorClass: failed ? "test_failure" : null },
      action,
    );
    if (step % 25 === 0) add("decision", { text: `Decision at step ${step}: cache entries expire after ${step} seconds.`, step }, action);
    if (step % 40 === 0) {
      const seq = ledger.branchSync(head, { last: 1 })[0]!.seq;
      add("summary", {
        fromSeq: lastSummarised,
        toSeq: seq - 30,
        eventIds: [],
        text: `Steps up to ${step - 6}: cache work, ${Math.floor(step / 3)} failing runs fixed.`,
        tier: "mid",
        source: "deterministic",
      });
      lastSummarised = seq - 29;
    }
  }
  return { head: head!, steps: step };
}

function stateFor(head: string, steps: number): TaskStateValue {
  const base = {} as Record<string, unknown>;
  for (const [k, f] of Object.entries(TaskState.shape)) base[k] = (f as { parse(v: unknown): unknown }).parse(undefined);
  return {
    ...base,
    goal: "Add caching to the service layer and keep the tests green",
    subtasks: [{ id: "s1", description: "cache the file lookups in src/m1", status: "in_progress" }],
    ledgerHead: head,
    step: steps,
    needsPlan: false,
  } as TaskStateValue;
}

/**
 * Context build time and tokens per section at growing ledger sizes, next to a prompt holding all
 * history. Each build searches afresh (the context node's per-step caches are not used here).
 */
export async function benchContext(sizes = SIZES ?? [1_000, 10_000, 50_000]): Promise<BenchResult[]> {
  await loadEventSchemas();
  const counter = await loadTokenCounter("o200k_base");
  const tools = toolSpecs();
  const ws = workspace();
  const rows: BenchResult[] = [];
  for (const size of sizes) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-ctxdb-"));
    const db = openStateDb(path.join(dir, "state.db"));
    const { head, steps } = synthesize(db, size);
    const ledger = new SqliteLedger(db);
    const store = new SqliteStore(db);
    await rememberLessons(store, ["Run the cache tests with npm test -- file<N>.", "Cache keys must include the tenant id."], {
      threadId: "old",
      trigger: "end_of_run",
      eventIds: [],
      at: "",
    });
    const state = stateFor(head, steps);
    // The default retriever (n-gram index + Chroma) over the workspace and the run's history, as a
    // run has it; indexing (the 10k-50k events included) happens before the timing starts.
    const retriever = await createRetriever({ workspace: ws, stateDir: dir, ledger, threadId: "b" });
    await retriever.index();
    const eventSearcher = {
      searchEvents: async (query: string, k: number) =>
        (await retriever.searchAll(query, { k, scope: "events", threadId: "b", branchHead: head }))
          .filter((h) => h.kind === "event")
          .map((h) => ({ eventId: (h as { eventId: string }).eventId, score: h.score })),
    };
    const input = { ledger, state, maxSteps: 100_000, budgetTokens: 16_000, tools, counter, workspace: ws, searcher: retriever, eventSearcher, store };
    await buildPrompt(input); // warm caches (tokenizer, statements, the events index)
    // In a run, events are embedded a step at a time; here the whole history arrived at once.
    await retriever.whenIdle();
    const times: number[] = [];
    let built = await buildPrompt(input);
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      built = await buildPrompt(input);
      times.push(performance.now() - t);
    }
    // The run's counter lives on a worker thread (token-thread.ts): a count it has not memoised is a
    // round trip. A fresh counter (every count a miss, as in a run's first prompt), then warm ones.
    const probe = counting(counter);
    await buildPrompt({ ...input, counter: probe });
    const fresh = await freshCounters();
    const tThread = performance.now();
    await buildPrompt({ ...input, counter: fresh.thread });
    const firstThread = performance.now() - tThread;
    const tWorker = performance.now();
    await buildPrompt({ ...input, counter: fresh.worker });
    const firstWorker = performance.now() - tWorker;
    const workerTimes: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      await buildPrompt({ ...input, counter: fresh.worker });
      workerTimes.push(performance.now() - t);
    }
    await fresh.worker.close();
    rows.push({ name: `count() calls per build at ${size} events`, value: probe.calls, unit: "calls" });
    rows.push({
      name: `first build, fresh worker counter at ${size}`,
      value: firstWorker,
      unit: "ms",
      baseline: firstThread,
      baselineName: "fresh in-thread counter",
    });
    rows.push({
      name: `build p50, worker counter at ${size}`,
      value: median(workerTimes),
      unit: "ms",
      baseline: median(times),
      baselineName: "in-thread counter",
    });
    // The naive alternative: every feedback of the run in the prompt.
    const t0 = performance.now();
    const all = await ledger.branch(head, { types: ["environment_feedback"] });
    const naiveTokens = all.reduce((n, e) => n + counter.count((e.payload as { output: string }).output), 0);
    const naiveMs = performance.now() - t0;
    const bySection = new Map<string, number>();
    for (const i of built.items) bySection.set(i.section, (bySection.get(i.section) ?? 0) + i.tokens);
    rows.push({
      name: `context build p50 at ${size} events`,
      value: median(times),
      unit: "ms",
      ...(size === 10_000 ? { target: "<= 30 ms", ok: median(times) <= 30 } : {}),
      baseline: naiveMs,
      baselineName: "naive: read+count all history",
    });
    rows.push({ name: `context build p95 at ${size} events`, value: quantile(times, 0.95), unit: "ms" });
    rows.push({
      name: `prompt tokens at ${size} events (budget 16000)`,
      value: built.tokens,
      unit: "tok",
      baseline: naiveTokens,
      baselineName: "naive: all feedback",
    });
    rows.push({
      name: `  tokens per section at ${size}: ${[...bySection].map(([s, n]) => `${s}=${n}`).join(" ")}`,
      value: built.omitted.reduce((n, o) => n + o.tokens, 0),
      unit: "tok omitted",
    });
    await retriever.close();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  fs.rmSync(ws, { recursive: true, force: true });
  rows.push(...(await benchPrefixReuse()));
  printTable("context engine", rows);
  return rows;
}
