import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContextBudgetError } from "../../src/context/budget.js";
import { buildPrompt, messagesTokens } from "../../src/context/builder.js";
import { loadTokenCounter, type TokenCounter } from "../../src/context/tokens.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { loadEventSchemas } from "../../src/ledger/event-rows.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { TaskState, type Subtask, type TaskStateValue } from "../../src/state.js";
import { toolSpecs } from "../../src/agent/tools/index.js";

// These tests append synchronously (appendSync): the event schemas load first.
await loadEventSchemas();

let counter: TokenCounter;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-ctx-"));
let n = 0;
beforeAll(async () => {
  counter = await loadTokenCounter("o200k_base");
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const tools = toolSpecs();

interface Spec {
  goal: string;
  subtasks: number;
  turns: Array<{ output: string; ok: boolean; decision?: string }>;
  budget: number;
}

/** Writes a ledger shaped like a real run: model_call → action → feedback (→ decision) per turn. */
function synthesize(spec: Spec): { ledger: SqliteLedger; state: TaskStateValue; decisions: string[]; close(): void } {
  const db = openStateDb(path.join(dir, `s${n++}.db`));
  const ledger = new SqliteLedger(db);
  let head = null as string | null;
  const append = (type: string, payload: unknown, causedBy?: string): { id: string } => {
    const e = ledger.appendSync({ threadId: "t", parentId: head, type: type as "decision", payload: payload as never, causedBy });
    head = e.id;
    return e;
  };
  const subtasks: Subtask[] = Array.from({ length: spec.subtasks }, (_, i) => ({
    id: `s${i}`,
    description: `subtask number ${i} `.repeat(3),
    status: "pending",
  }));
  append("task_spec", { goal: spec.goal, subtasks, source: "deterministic" });
  const decisions: string[] = [];
  spec.turns.forEach((t, i) => {
    const call = append("model_call", {
      node: "decide",
      turn: i,
      model: "scripted",
      content: `turn ${i}`,
      toolCalls: [{ id: `c${i}`, name: "run_command", args: { command: `make step${i}` } }],
    });
    const action = append(
      "agent_action",
      { tool: "run_command", args: { command: `make step${i}` }, callId: `c${i}`, step: i + 1, idempotencyKey: `k${i}`, idempotent: false },
      call.id,
    );
    append("environment_feedback", { tool: "run_command", status: t.ok ? "ok" : "error", output: t.output, durationMs: 1 }, action.id);
    if (t.decision) {
      decisions.push(t.decision);
      append("decision", { text: t.decision, step: i + 1 }, action.id);
    }
  });
  const base = {} as Record<string, unknown>;
  for (const [k, f] of Object.entries(TaskState.shape)) base[k] = (f as { parse(v: unknown): unknown }).parse(undefined);
  const state = { ...base, goal: spec.goal, subtasks, ledgerHead: head, step: spec.turns.length, needsPlan: false } as TaskStateValue;
  return { ledger, state, decisions, close: () => db.close() };
}

/** Random text between min and max chars: a random piece repeated (cheap to generate at 40k chars). */
const text = (min: number, max: number) =>
  fc
    .tuple(fc.string({ minLength: Math.min(min, 50), maxLength: Math.min(max, 200) }), fc.integer({ min: min, max }))
    .map(([piece, len]) => (piece.length ? piece.repeat(Math.ceil(len / piece.length)).slice(0, len) : piece));

describe("buildPrompt under random ledgers", () => {
  it("never exceeds the budget and never drops the fixed section", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          goal: text(1, 6000),
          subtasks: fc.integer({ min: 0, max: 12 }),
          turns: fc.array(
            fc.record({
              output: fc.oneof(text(0, 300), text(1000, 40_000)),
              ok: fc.boolean(),
              decision: fc.option(text(5, 1500), { nil: undefined, freq: 4 }),
            }),
            { maxLength: 40 },
          ),
          budget: fc.integer({ min: 5000, max: 60_000 }),
        }),
        async (spec) => {
          const s = synthesize(spec);
          try {
            let built;
            try {
              built = await buildPrompt({ ledger: s.ledger, state: s.state, maxSteps: 100, budgetTokens: spec.budget, tools, counter });
            } catch (err) {
              // Refusing is allowed only when even the fully compacted fixed part is over the budget.
              expect(err).toBeInstanceOf(ContextBudgetError);
              const fixed = Number(/: (\d+) tokens\); raise --budget/.exec((err as Error).message)?.[1]);
              expect(fixed).toBeGreaterThan(spec.budget);
              return;
            }
            const actual = messagesTokens(built.messages, counter) + counter.count(JSON.stringify(tools));
            expect(actual).toBeLessThanOrEqual(spec.budget);
            expect(built.tokens).toBe(actual);
            // Cache layout: the pinned prefix (goal, decisions) first, status and plan in the last message.
            const user = built.messages[1]!.content;
            const volatile = built.messages.at(-1)!;
            expect(built.messages[0]!.role).toBe("system");
            expect(user).toContain("# Goal");
            expect(volatile.role).toBe("user");
            for (const h of ["# Plan", "# Run status"]) expect(volatile.content).toContain(h);
            expect(user).toContain(spec.goal.slice(0, 40));
            if (s.decisions.length) expect(user).toContain("# Decisions (pinned");
            for (const d of s.decisions) expect(user).toContain(d.slice(0, 40));
            // Each recent turn is either in the prompt or accounted for as omitted.
            const shown = built.items.filter((i) => i.section === "recent" && i.source.startsWith("turn:")).length;
            const left = built.omitted.filter((i) => i.section === "recent" && i.source.startsWith("turn:")).length;
            expect(shown + left).toBe(Math.min(6, spec.turns.length));
          } finally {
            s.close();
          }
        },
      ),
      { numRuns: Number(process.env.FC_RUNS ?? 60) },
    );
  });

  it("keeps the most of the newest turn, cuts older outputs, and drops the oldest turns first", async () => {
    const log = (i: number) => Array.from({ length: 2000 }, (_, j) => `turn ${i} log line ${j} value=${(j * 31) % 997}`).join("\n");
    const turns = Array.from({ length: 6 }, (_, i) => ({ output: log(i), ok: true }));
    const s = synthesize({ goal: "g", subtasks: 1, turns, budget: 9000 });
    const built = await buildPrompt({ ledger: s.ledger, state: s.state, maxSteps: 100, budgetTokens: 9000, tools, counter });
    s.close();
    const toolMsgs = built.messages.filter((m) => m.role === "tool");
    const newest = toolMsgs.at(-1)!;
    expect(newest.content.startsWith("[ok] turn 5 log line 0")).toBe(true);
    expect(newest.content.length).toBeGreaterThan(10_000);
    // Older turns that made it in were cut harder than the newest one.
    for (const m of toolMsgs.slice(0, -1)) expect(m.content.length).toBeLessThan(3_200);
    // The oldest turns did not fit: they are listed as omitted, never silently lost.
    const omitted = built.omitted.filter((o) => o.section === "recent");
    expect(omitted.length).toBeGreaterThan(0);
    expect(toolMsgs.length + omitted.length).toBe(6);
    expect(omitted.every((o) => o.tokens > 0)).toBe(true);
  });

  it("refuses a budget smaller than the fixed part with a clear error", async () => {
    const s = synthesize({ goal: "g", subtasks: 0, turns: [], budget: 1000 });
    await expect(buildPrompt({ ledger: s.ledger, state: s.state, maxSteps: 10, budgetTokens: 1000, tools, counter })).rejects.toThrow(ContextBudgetError);
    await expect(buildPrompt({ ledger: s.ledger, state: s.state, maxSteps: 10, budgetTokens: 1000, tools, counter })).rejects.toThrow(/raise --budget/);
    s.close();
  });
});
