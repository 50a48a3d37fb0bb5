import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPrompt, type BuiltPrompt } from "../../src/context/builder.js";
import { prefixReuse } from "../../src/context/reuse.js";
import { loadTokenCounter, type TokenCounter } from "../../src/context/tokens.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { loadEventSchemas } from "../../src/ledger/event-rows.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { TaskState, type TaskStateValue } from "../../src/state.js";
import { toolSpecs } from "../../src/agent/tools/index.js";

// These tests append synchronously (appendSync): the event schemas load first.
await loadEventSchemas();

let counter: TokenCounter;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-layout-"));
let n = 0;
beforeAll(async () => {
  counter = await loadTokenCounter("o200k_base");
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const tools = toolSpecs();

type Step = { output: number; ok: boolean; decision: boolean; summarize: boolean; noTool: boolean; planChange: boolean };

/**
 * Plays a run step by step the way the graph does (decide call, action, feedback, sometimes a
 * decision, a plan change or a summary), building each decide prompt from the previous one.
 */
async function play(steps: Step[], budget: number, layout: "cache" | "legacy" = "cache"): Promise<BuiltPrompt[]> {
  const db = openStateDb(path.join(dir, `l${n++}.db`));
  const ledger = new SqliteLedger(db);
  let head: string | null = null;
  const add = (type: string, payload: unknown, causedBy?: string) => {
    const e = ledger.appendSync({ threadId: "t", parentId: head, type: type as "decision", payload: payload as never, causedBy });
    head = e.id;
    return e;
  };
  add("task_spec", { goal: "Make the cache layer pass its tests", subtasks: [], source: "deterministic" });
  const base = {} as Record<string, unknown>;
  for (const [k, f] of Object.entries(TaskState.shape)) base[k] = (f as { parse(v: unknown): unknown }).parse(undefined);
  let state = { ...base, goal: "Make the cache layer pass its tests", needsPlan: false } as TaskStateValue;
  const prompts: BuiltPrompt[] = [];
  let previous: BuiltPrompt | null = null;
  let summarisedThrough = 0;
  const callSeqs: number[] = [];
  try {
    for (const [i, s] of steps.entries()) {
      state = { ...state, ledgerHead: head, step: i };
      const built: BuiltPrompt = await buildPrompt({ ledger, state, maxSteps: 500, budgetTokens: budget, tools, counter, layout, previous, recentTurns: 4 });
      prompts.push(built);
      previous = built;
      const call = add("model_call", {
        node: "decide",
        turn: i,
        model: "scripted",
        content: s.noTool ? "thinking" : "",
        toolCalls: s.noTool ? [] : [{ id: `c${i}`, name: "run_command", args: { command: `make t${i}` } }],
      });
      if (!s.noTool) {
        const action = add(
          "agent_action",
          { tool: "run_command", args: { command: `make t${i}` }, callId: `c${i}`, step: i + 1, idempotencyKey: `k${i}`, idempotent: false },
          call.id,
        );
        const output = Array.from({ length: s.output }, (_, j) => `line ${j} of step ${i}: ${s.ok ? "ok" : "FAIL expected 1 got 2"}`).join("\n");
        add("environment_feedback", { tool: "run_command", status: s.ok ? "ok" : "error", output, durationMs: 1 }, action.id);
        if (s.decision) add("decision", { text: `Decision D${i}: keys carry the tenant id.`, step: i + 1 }, action.id);
      }
      if (s.planChange) state = { ...state, subtasks: [{ id: "s1", description: `subtask revised at step ${i}`, status: "in_progress" }] };
      callSeqs.push(call.seq);
      // As the summarize node does: fold what is older than the recent turns.
      const through = (callSeqs.at(-4) ?? 0) - 1;
      if (s.summarize && through > summarisedThrough) {
        add("summary", {
          fromSeq: summarisedThrough + 1,
          toSeq: through,
          eventIds: [],
          text: `summary through seq ${through}`,
          tier: "mid",
          source: "deterministic",
        });
        summarisedThrough = through;
      }
    }
  } finally {
    db.close();
  }
  return prompts;
}

const step = fc.record({
  output: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 100, max: 600 })),
  ok: fc.boolean(),
  decision: fc.boolean().map((b) => b && Math.random() < 0.3),
  summarize: fc.integer({ min: 0, max: 9 }).map((k) => k === 0),
  noTool: fc.integer({ min: 0, max: 14 }).map((k) => k === 0),
  planChange: fc.integer({ min: 0, max: 5 }).map((k) => k === 0),
});

describe("the cache-friendly layout", () => {
  it("between two compactions every decide prompt extends the previous one, within budget", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 40 }), fc.integer({ min: 6000, max: 30_000 }), async (steps, budget) => {
        const prompts = await play(steps, budget);
        for (const [i, p] of prompts.entries()) {
          expect(p.tokens).toBeLessThanOrEqual(budget);
          expect(p.messages.at(-1)!.role).toBe("user");
          expect(p.messages.at(-1)!.content).toContain("# Run status");
          if (i === 0) continue;
          const prev = prompts[i - 1]!;
          if (p.layout.built === "extension") {
            // Append-only: the previous prompt, message for message, then something new.
            expect(p.messages.slice(0, prev.messages.length)).toEqual(prev.messages);
            expect(p.messages.length).toBeGreaterThan(prev.messages.length);
            expect(prefixReuse(prev.messages, p.messages, counter).reusedTokens).toBe(prefixReuse(null, prev.messages, counter).tokens);
          } else {
            expect(["summary", "budget"]).toContain(p.layout.reason);
            // The prefix is written once per compaction: the system prompt never changes.
            expect(p.messages[0]).toEqual(prev.messages[0]);
          }
        }
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 15) },
    );
  }, 120_000);

  it("a new summary compacts, and the summary moves into the prefix", async () => {
    const quiet = { output: 5, ok: true, decision: false, noTool: false, planChange: false };
    const steps = [
      ...Array.from({ length: 5 }, () => ({ ...quiet, summarize: false })),
      { ...quiet, summarize: true },
      { ...quiet, summarize: false },
      { ...quiet, summarize: false },
    ];
    const prompts = await play(steps, 20_000);
    expect(prompts.map((p) => p.layout.built)).toEqual([
      "compaction",
      "extension",
      "extension",
      "extension",
      "extension",
      "extension",
      "compaction",
      "extension",
    ]);
    expect(prompts[6]!.layout.reason).toBe("summary");
    expect(prompts[6]!.messages[1]!.content).toContain("# Earlier history (summarised)");
    expect(prompts[5]!.messages[1]!.content).not.toContain("# Earlier history");
  });

  it("the legacy layout rebuilds the first message every step (the baseline the bench compares with)", async () => {
    const quiet = { output: 30, ok: true, decision: false, summarize: false, noTool: false, planChange: false };
    const prompts = await play(
      Array.from({ length: 6 }, () => quiet),
      20_000,
      "legacy",
    );
    const reuse = prompts.slice(1).map((p, i) => prefixReuse(prompts[i]!.messages, p.messages, counter).ratio);
    expect(prompts.every((p) => p.layout.built === "compaction")).toBe(true);
    expect(Math.max(...reuse)).toBeLessThan(0.6);
    const cache = await play(
      Array.from({ length: 6 }, () => quiet),
      20_000,
    );
    const cacheReuse = cache.slice(1).map((p, i) => prefixReuse(cache[i]!.messages, p.messages, counter).ratio);
    // Each step of the same run reuses more in the cache layout, and more the longer the log is.
    cacheReuse.forEach((r, i) => expect(r).toBeGreaterThan(reuse[i]!));
    expect(cacheReuse.at(-1)!).toBeGreaterThan(0.75);
  });
});
