import { afterAll, describe, expect, it } from "vitest";
import { createCodingAgent, recursionLimitFor } from "../../src/agent/graph.js";
import { ScriptedModel, type Trajectory } from "../../src/models/scripted.js";
import { createRuntime } from "../../src/runtime.js";
import type { LedgerEvent } from "../../src/state.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// History recall searches once per 5-step window and reuses the answer for the window's later
// prompts that ask the same thing. That reuse used to live in the graph's memory: a run stopped
// mid-window and resumed in a new process (or forked from Studio) searched afresh at a later step,
// found the newer events too, and sent the model another prompt than the uninterrupted run did. The
// answer is now recorded with each prompt (context_built.recall) and reused from the ledger.

const FILES = { "src/widget.js": "export function parseWidget(s) {\n  return s.split(',');\n}\n", "README.md": "widgets\n" };
// The legacy layout shows only the last turn in full (the cache layout keeps its whole turn log),
// and every step's output talks about the goal's words, so each new feedback is a recall candidate.
const STEPS = 8;
const TRAJECTORY: Trajectory = {
  decide: [
    ...Array.from({ length: STEPS }, (_, i) => ({
      tool_calls: [{ name: "run_command", args: { command: `echo "widget parser check ${i}: parseWidget splits on commas, widget parser ok"` } }],
    })),
    { tool_calls: [{ name: "finish", args: { summary: "done" } }] },
  ],
};
const GOAL = "check the widget parser (parseWidget)";
const SETTINGS = {
  model: "scripted:test",
  retrieval: "lexical" as const,
  promptLayout: "legacy" as const,
  recentTurns: 1,
  maxSteps: 20,
  sandbox: "none" as const,
};

afterAll(() => cleanupTemp());

/** A fresh runtime and graph on the workspace: what a new process has (no memory of earlier builds). */
async function agentOn(ws: string) {
  const model = new ScriptedModel(TRAJECTORY);
  const rt = await createRuntime({ workspace: ws, ...SETTINGS }, { model });
  return { rt, graph: createCodingAgent({ runtime: rt }) };
}

/** Per prompt: the step and the recalled events (seq and score) its context_built recorded. */
function recalled(events: LedgerEvent[]): Array<{ step: number; items: Array<{ seq: number; score: number | undefined }> }> {
  const seqOf = new Map(events.map((e) => [e.id, e.seq]));
  return events
    .filter((e): e is LedgerEvent<"context_built"> => e.type === "context_built")
    .map((e) => ({
      step: e.payload.step,
      items: e.payload.items.filter((i) => i.section === "recalled").map((i) => ({ seq: seqOf.get(i.source.replace(/^event:/, "")) ?? -1, score: i.score })),
    }));
}

describe("history recall across a resume in the middle of a 5-step window", () => {
  it("recalls, at every step, what the uninterrupted run recalled", async () => {
    const config = { configurable: { thread_id: "t" }, durability: "sync" as const };
    // The uninterrupted run.
    const wsA = tempWorkspace(undefined, FILES);
    const a = await agentOn(wsA);
    await a.graph.invoke({ goal: GOAL }, { ...config, recursionLimit: recursionLimitFor(SETTINGS.maxSteps) });
    const eventsA = await a.rt.ledger.list("t");
    const whole = recalled(eventsA);
    await a.rt.close();
    // Recall found something, and the window's later prompts reused an earlier search: their
    // records are the first one's (the query's hash came through the ledger's redaction intact).
    expect(whole.some((p) => p.items.length > 0)).toBe(true);
    const records = eventsA.filter((e): e is LedgerEvent<"context_built"> => e.type === "context_built").map((e) => e.payload.recall);
    expect(records.every((r) => r && /^[0-9a-f]{64}$/.test(r.queryHash))).toBe(true);
    const firstWindow = records.filter((r) => r!.window === 0);
    expect(firstWindow.length).toBeGreaterThan(2);
    for (const r of firstWindow) expect(r).toEqual(firstWindow[0]);

    // The same run stopped after a few supersteps (LangGraph's recursion limit: the checkpoints up to
    // there are saved), then resumed by another runtime and graph.
    const wsB = tempWorkspace(undefined, FILES);
    const b1 = await agentOn(wsB);
    await expect(b1.graph.invoke({ goal: GOAL }, { ...config, recursionLimit: 14 })).rejects.toThrow(/recursion/i);
    const stoppedAt = (await b1.graph.getState(config)).values as { step: number };
    await b1.rt.close();
    // Stopped inside the first window, after its first recalled search: the case that went wrong.
    expect(stoppedAt.step).toBeGreaterThanOrEqual(2);
    expect(stoppedAt.step).toBeLessThan(4);
    const b2 = await agentOn(wsB);
    await b2.graph.invoke(null, { ...config, recursionLimit: recursionLimitFor(SETTINGS.maxSteps) });
    const resumed = recalled(await b2.rt.ledger.list("t"));
    await b2.rt.close();

    expect(resumed).toEqual(whole);
  }, 120_000);
});

describe("the recorded history search", () => {
  it("names its query by a hash of the redacted query: a secret in it cannot be tested against the ledger", async () => {
    const hashes: string[] = [];
    for (const secret of ["hunter2-recall-secret-one", "hunter2-recall-secret-two"]) {
      // A secret the redactor knows (an environment variable named like a key) quoted in the goal,
      // hence in the subtask that the recall query is made of.
      process.env.RECALL_TEST_API_KEY = secret;
      try {
        const ws = tempWorkspace(undefined, FILES);
        const a = await agentOn(ws);
        await a.graph
          .invoke({ goal: `${GOAL} with key ${secret}` }, { configurable: { thread_id: "s" }, durability: "sync", recursionLimit: 12 })
          .catch(() => {});
        const built = (await a.rt.ledger.list("s")).filter((e): e is LedgerEvent<"context_built"> => e.type === "context_built");
        await a.rt.close();
        expect(built.length).toBeGreaterThan(0);
        hashes.push(built[0]!.payload.recall!.queryHash);
      } finally {
        delete process.env.RECALL_TEST_API_KEY;
      }
    }
    // Two different secrets, one redacted query: the same hash (a hash of the raw query would differ).
    expect(hashes[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(hashes[1]).toBe(hashes[0]);
  }, 120_000);
});
