import { afterEach, describe, expect, it } from "vitest";
import type { LedgerEvent } from "../../src/state.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// A graceful stop (`ledgerloop cancel`, a worker's SIGTERM) lets the step in progress end as it
// would and stops the run before the next one: a step is decide → act → observe, so a stop that
// arrives while the model decides must still let the chosen action run and its outcome be recorded.

let agents: TestAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
});

const step = (n: number) => ({ tool_calls: [{ name: "run_command", args: { command: `echo step ${n} >> steps.txt` } }] });

describe("a graceful stop between steps", () => {
  it("asked for while the model decides, lets that step act and observe, then stops before the next one", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const a = await testAgent(ws, { decide: [step(1), step(2), step(3), { tool_calls: [{ name: "finish", args: { summary: "done" } }] }] });
    agents.push(a);
    const drain = new AbortController();
    a.rt.stopBetweenSteps = drain.signal;
    // The stop arrives while step 2's decide is in flight, as a worker's heartbeat would deliver it.
    const invoke = a.model.invoke.bind(a.model);
    a.model.invoke = async (req) => {
      if (req.node === "decide" && req.turn === 1) drain.abort();
      return invoke(req);
    };
    // The driver (runs/drive.ts) turns this into an interrupted run; here the node's error shows where it stopped.
    await expect(a.run("write three steps")).rejects.toThrow(/^stopped before context:/);
    const events = await a.events();
    const actions = events.filter((e): e is LedgerEvent<"agent_action"> => e.type === "agent_action");
    const answered = (id: string) => events.some((f) => f.type === "environment_feedback" && f.causedBy === id);
    // Step 2 was decided, so it acted: every recorded action has its outcome, and step 3 never started.
    expect(actions.map((x) => x.payload.step)).toEqual([1, 2]);
    expect(actions.filter((x) => !answered(x.id))).toEqual([]);
  });
});
