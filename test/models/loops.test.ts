/**
 * The model-behaviour contract, the loop clause: the same calls with the same results k times in a
 * row (repeatLimit) are pointed out to the model and trigger a reflection; a loop that goes on to 2k
 * stops the run as no_progress, recorded with its reason. A step that changes something resets it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { promptText, testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

let agents: TestAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
});

const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });
const plan = call("update_plan", { subtasks: [{ id: "s", description: "read the notes", status: "in_progress" }] });

describe("a model that repeats itself", () => {
  it("is told after repeatLimit identical steps, reflects once, and stops as no_progress at twice the limit", async () => {
    const ws = tempWorkspace(undefined, { "notes.txt": "the same every time\n" });
    const same = call("read_file", { path: "notes.txt" });
    const a = await testAgent(
      ws,
      { plan: [plan], decide: Array.from({ length: 12 }, () => same), reflect: [{ content: "stop repeating" }, { content: "x" }] },
      { maxSteps: 30, repeatLimit: 2 },
    );
    agents.push(a);
    const state = await a.run("read the notes");
    expect(state.status).toBe("no_progress");
    expect(state.step).toBe(4);
    // Steps 1-2 identical: the prompt of step 3 points it out; step 2's prompt did not.
    expect(promptText(a.decidePrompt(3))).toMatch(/Your last 2 steps made the same call\(s\) and got the same result\(s\)/);
    expect(promptText(a.decidePrompt(2))).not.toMatch(/same call\(s\)/);
    const events = await a.events();
    expect(events.filter((e) => e.type === "reflection").map((e) => (e.payload as { trigger: string }).trigger)).toEqual(["repetition", "end_of_run"]);
    const ended = events.filter((e) => e.type === "run_status");
    expect(ended).toHaveLength(1);
    expect(ended[0]!.payload).toMatchObject({ status: "no_progress", steps: 4 });
    expect(String((ended[0]!.payload as { reason?: string }).reason)).toMatch(/same results 4 steps in a row/);
  }, 120_000);

  it("a step whose result differs starts the count again", async () => {
    const ws = tempWorkspace(undefined, { "n.txt": "0\n" });
    const read = call("read_file", { path: "n.txt" });
    const bump = (n: number) => call("write_file", { path: "n.txt", content: `${n}\n` });
    const a = await testAgent(
      ws,
      {
        plan: [plan],
        decide: [read, read, bump(1), read, read, bump(2), read, call("finish", { summary: "done" })],
        reflect: [{ content: "x" }, { content: "y" }, { content: "z" }],
      },
      { maxSteps: 30, repeatLimit: 3 },
    );
    agents.push(a);
    const state = await a.run("count");
    expect(state.status).toBe("finished");
    const triggers = (await a.events()).filter((e) => e.type === "reflection").map((e) => (e.payload as { trigger: string }).trigger);
    expect(triggers).not.toContain("repetition");
  }, 120_000);
});
