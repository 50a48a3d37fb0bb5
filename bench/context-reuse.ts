import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createCodingAgent, recursionLimitFor } from "../src/agent/graph.js";
import { ScriptedModel, type ScriptTurn } from "../src/models/scripted.js";
import { createRuntime } from "../src/runtime.js";
import type { LedgerEvent } from "../src/state.js";
import { median, type BenchResult } from "./report.js";

const STEPS = Number(process.env.BENCH_REUSE_STEPS ?? 100);
const BUDGET = 16_000;

/** A workspace of 20 ~2 KB modules and a check script that fails until fixed.js exists. */
function workspace(): string {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-reuse-")));
  fs.mkdirSync(path.join(ws, "src"));
  for (let i = 0; i < 20; i++) {
    fs.writeFileSync(
      path.join(ws, `src/mod${i}.js`),
      Array.from({ length: 40 }, (_, j) => `export function handler${i}_${j}(input) { return input * ${j} + ${i}; }`).join("\n") + "\n",
    );
  }
  fs.writeFileSync(
    path.join(ws, "check.js"),
    "const fs = require('fs');\nif (!fs.existsSync('fixed.js')) { console.error('AssertionError: expected fixed.js at check.js:2'); process.exit(1); }\nconsole.log('ok');\n",
  );
  return ws;
}

const call = (name: string, args: Record<string, unknown>): ScriptTurn => ({ tool_calls: [{ name, args }] });

/** A long run's mix of steps: reads, searches, commands, failing then passing checks, decisions, plan changes. */
function script(steps: number): ScriptTurn[] {
  const turns: ScriptTurn[] = [];
  for (let i = 0; i < steps - 1; i++) {
    const k = i % 10;
    if (i % 20 === 1) turns.push(call("record_decision", { text: `Decision ${i}: handlers stay pure; caching goes in src/cache${i}.js.` }));
    else if (i === 60) turns.push(call("write_file", { path: "fixed.js", content: "module.exports = 1;\n" }));
    else if (k === 3) turns.push(call("run_command", { command: "node check.js" }));
    else if (k === 5) turns.push(call("search_code", { query: `handler${i % 20}_7` }));
    else if (k === 7) turns.push(call("write_file", { path: `src/cache${i}.js`, content: `export const cache${i} = new Map();\n` }));
    else if (i % 33 === 0) turns.push(call("update_plan", { subtasks: [{ id: "cache", description: `add caching (pass ${i})`, status: "in_progress" }] }));
    else turns.push(call("read_file", { path: `src/mod${i % 20}.js` }));
  }
  turns.push(call("finish", { summary: "done" }));
  return turns;
}

/** Runs the scripted run through the real graph with one layout; the per-step reuse from its context_built events. */
async function runWith(layout: "cache" | "legacy"): Promise<{ reuse: number[]; tokens: number[]; uncached: number; compactions: number; status: string }> {
  const ws = workspace();
  const model = new ScriptedModel({ decide: script(STEPS) });
  const rt = await createRuntime(
    { workspace: ws, model: "scripted:bench", retrieval: "lexical", sandbox: "none", maxSteps: STEPS + 5, budgetTokens: BUDGET, promptLayout: layout },
    { model },
  );
  try {
    const agent = createCodingAgent({ runtime: rt });
    const config = { configurable: { thread_id: "bench" }, recursionLimit: recursionLimitFor(STEPS + 5), durability: "sync" as const };
    await agent.invoke({ goal: "Add caching to the handlers; node check.js must pass." }, config);
    const status = String(((await agent.getState(config)).values as { status: string }).status);
    const built = (await rt.ledger.list("bench", { types: ["context_built"] })) as LedgerEvent<"context_built">[];
    if (process.env.BENCH_REUSE_DEBUG && layout === "cache") {
      for (const b of built) {
        const vol = b.payload.items.filter((i) => !["system", "tools", "prefix", "goal", "decisions", "memories", "history", "log"].includes(i.section));
        console.log(
          b.payload.step,
          b.payload.tokens,
          b.payload.prefixReuse?.ratio,
          b.payload.layout?.built,
          b.payload.layout?.reason,
          vol.map((i) => `${i.section}:${i.source}:${i.tokens}`).join(" "),
        );
      }
    }
    return {
      reuse: built.slice(1).map((b) => b.payload.prefixReuse?.ratio ?? 0),
      tokens: built.map((b) => b.payload.tokens),
      uncached: built.reduce((n, b) => n + (b.payload.prefixReuse ? b.payload.prefixReuse.tokens - b.payload.prefixReuse.reusedTokens : 0), 0),
      compactions: built.filter((b) => b.payload.layout?.built === "compaction").length,
      status,
    };
  } finally {
    await rt.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

/** Prefix reuse of consecutive decide prompts over a 100-step scripted run, cache layout against the legacy one. */
export async function benchPrefixReuse(): Promise<BenchResult[]> {
  const legacy = await runWith("legacy");
  const cache = await runWith("cache");
  const over = [...cache.tokens, ...legacy.tokens].filter((t) => t > BUDGET).length;
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const total = (r: { tokens: number[] }) => sum(r.tokens);
  return [
    {
      name: `prefix reuse median, ${STEPS}-step scripted run (${cache.status})`,
      value: median(cache.reuse) * 100,
      unit: "%",
      target: ">= 85 %",
      ok: median(cache.reuse) >= 0.85,
      baseline: median(legacy.reuse) * 100,
      baselineName: "legacy layout",
    },
    { name: `  prefix reuse p10`, value: [...cache.reuse].sort((a, b) => a - b)[Math.floor(cache.reuse.length / 10)]! * 100, unit: "%" },
    {
      name: `  compactions (prefix rewritten) in ${cache.tokens.length} prompts`,
      value: cache.compactions,
      unit: "",
      baseline: legacy.compactions,
      baselineName: "legacy",
    },
    {
      name: `  message tokens not served by the prefix cache, whole run`,
      value: cache.uncached,
      unit: "tok",
      baseline: legacy.uncached,
      baselineName: "legacy",
    },
    { name: `  prompt tokens sent, whole run`, value: total(cache), unit: "tok", baseline: total(legacy), baselineName: "legacy" },
    { name: `  prompts over the ${BUDGET}-token budget (both layouts)`, value: over, unit: "", target: "= 0", ok: over === 0 },
  ];
}
