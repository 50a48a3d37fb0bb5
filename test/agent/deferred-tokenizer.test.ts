import { afterEach, describe, expect, it } from "vitest";
import { loadTokenCounter } from "../../src/context/tokens.js";
import type { LedgerEvent } from "../../src/state.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, DEMO_WORKSPACE, tempWorkspace } from "../helpers/workspace.js";

// The tokenizer's ranks are the heaviest single load before a run's first prompt (issue 30). The
// runtime no longer waits for them: they load while the run starts (the index, the Chroma server,
// the graph) on a worker thread, and the graph's nodes wait for them. These tests pin both halves: the
// runtime comes back first, and every count is the exact one (a count before the load waits for it).

/** Whether `p` has settled by now: only promise jobs run before the answer, no I/O. */
async function settled(p: Promise<unknown> | undefined): Promise<boolean> {
  // No promise at all: the counter was ready when the runtime was returned.
  if (!p) return true;
  return Promise.race([
    p!.then(
      () => true,
      () => true,
    ),
    Promise.resolve(false),
  ]);
}

const finish = { tool_calls: [{ name: "finish", args: { summary: "done" } }] };

let agent: TestAgent | undefined;
afterEach(async () => {
  await agent?.close();
  agent = undefined;
  cleanupTemp();
});

describe("the token counter of a runtime", () => {
  // First in the file: this process has not loaded gpt-tokenizer yet, so its load needs file I/O.
  it("is still loading when createRuntime returns; the run's nodes wait for it and count exactly", async () => {
    agent = await testAgent(tempWorkspace(DEMO_WORKSPACE), { decide: [finish] });
    expect(await settled(agent.rt.counterReady)).toBe(false);
    // Counting before the load waits for it, with the exact figure.
    const eager = await loadTokenCounter("o200k_base", true);
    expect(agent.rt.counter.count("a word")).toBe(eager.count("a word"));

    const end = await agent.run("finish at once");
    expect(end.status).toBe("finished");
    const built = (await agent.events()).find((e): e is LedgerEvent<"context_built"> => e.type === "context_built")!;
    expect(built.payload.tokens).toBeGreaterThan(0);
    // The same counts as a counter loaded up front (the scripted model is counted with o200k and the margin).
    const prompt = JSON.stringify(agent.decidePrompt(1));
    expect(agent.rt.counter.count(prompt)).toBe(eager.count(prompt));
  });
});
