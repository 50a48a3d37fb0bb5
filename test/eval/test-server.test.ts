import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTrajectory } from "../../src/models/scripted.js";
import { loadSuite } from "../../src/eval/task.js";
import { taskModel, testServerSeed } from "../../src/eval/models.js";
import { startTestServer, type TestServer } from "../../src/eval/test-server.js";
import { turnPlans, type TurnPlan } from "../../src/eval/test-server-plan.js";

// The eval's test server spoken to over real HTTP by a minimal client that acts as a runtime would:
// it runs every well-formed call, answers a bad one with an error result, and sends the
// conversation back. What it must show: the oracle is played in order, each misbehaviour once at its
// turn, a re-sent request is answered alike, and runs of the same task do not disturb each other.

const SUITE = path.join(import.meta.dirname, "../../eval/suite");
const tasks = loadSuite(SUITE).map((t) => ({ id: t.id, goal: t.goal, trajectory: loadTrajectory(t.oracleFile!) }));
const TASK = tasks.find((t) => t.id === "js-order-coupons")!;
const SEED = 1;
const TOOLS = ["read_file", "write_file", "edit_file", "list_files", "search_code", "run_command", "run_tests", "finish"].map((name) => ({
  type: "function",
  function: { name, description: name, parameters: { type: "object" } },
}));

type Msg = Record<string, unknown> & { role: string };
interface Answer {
  content: string | null;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
}

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer(tasks, { seed: SEED });
});
afterAll(() => server.close());

async function post(body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** One simulated run: `window` limits the turns sent back to the newest ones (as a context engine that compacts). */
function client(goal: string, window = Infinity) {
  const turns: Msg[][] = [];
  const ran: string[] = [];
  const seen: Array<{ calls: number; finish: string; text: string; bad: boolean }> = [];
  let finished = false;
  const request = () => ({
    model: "test-server",
    tools: TOOLS,
    messages: [{ role: "system", content: "You are an agent." }, { role: "user", content: `# Goal\n${goal}` }, ...turns.slice(-window).flat()],
  });
  return {
    ran,
    seen,
    get finished() {
      return finished;
    },
    request,
    /** Sends the conversation and takes the answer as a runtime would. */
    async step(): Promise<void> {
      const { status, json } = await post(request());
      expect(status).toBe(200);
      const choice = (json.choices as Array<{ message: Answer; finish_reason: string }>)[0]!;
      const calls = choice.message.tool_calls ?? [];
      const cut = choice.finish_reason === "length";
      const results: Msg[] = calls.map((c) => {
        let ok = !cut;
        try {
          JSON.parse(c.function.arguments);
        } catch {
          ok = false;
        }
        if (ok) ran.push(`${c.function.name} ${c.function.arguments}`);
        if (ok && c.function.name === "finish") finished = true;
        return { role: "tool", tool_call_id: c.id, content: ok ? "done" : "error: arguments are not JSON" };
      });
      seen.push({ calls: calls.length, finish: choice.finish_reason, text: choice.message.content ?? "", bad: results.some((r) => r.content !== "done") });
      const said: Msg = { role: "assistant", content: choice.message.content, ...(calls.length ? { tool_calls: calls.map((c) => ({ ...c, type: "function" })) } : {}) };
      turns.push(calls.length ? [said, ...results] : [said, { role: "user", content: "No tool was called. Call a tool." }]);
    },
  };
}

const oracleCalls = TASK.trajectory.decide!.flatMap((t) => (t.tool_calls ?? []).map((c) => `${c.name} ${typeof c.args === "string" ? c.args : JSON.stringify(c.args ?? {})}`));
const plans: TurnPlan[] = turnPlans(TASK.trajectory, TASK.id, SEED);
const misbehaving = plans.filter((p) => p.kind === "misbehave").length;
const saved = plans.reduce((n, p) => n + (p.kind === "parallel" ? p.turns - 1 : 0), 0);

describe("the eval's test server", () => {
  it("the seed's plan for this task has every kind of answer the test checks", () => {
    // If the plan's drawing changes, pick a task whose plan still has these (the checks below need them).
    expect(plans.map((p) => (p.kind === "misbehave" ? p.what : p.kind))).toEqual(expect.arrayContaining(["prose", "cut-off", "malformed-json", "parallel"]));
    expect(plans[0]).toEqual({ kind: "oracle" });
    expect(turnPlans(TASK.trajectory, TASK.id, SEED)).toEqual(plans);
    expect(turnPlans(TASK.trajectory, TASK.id, SEED + 1)).not.toEqual(plans);
  });

  it("plays the whole oracle in order, each misbehaviour once, to two interleaved runs: one sending everything, one only its two newest turns", async () => {
    const full = client(TASK.goal);
    const windowed = client(TASK.goal, 2);
    for (let i = 0; i < 60 && !(full.finished && windowed.finished); i++) {
      if (!full.finished) await full.step();
      if (!windowed.finished) await windowed.step();
    }
    for (const run of [full, windowed]) {
      expect(run.finished).toBe(true);
      expect(run.ran).toEqual(oracleCalls);
      // Every oracle turn once (parallel ones merged), plus one answer per misbehaviour.
      expect(run.seen).toHaveLength(TASK.trajectory.decide!.length - saved + misbehaving);
      expect(run.seen.filter((s) => s.calls === 0).map((s) => s.text)).toEqual([
        expect.stringMatching(/^I have looked at the task/),
        expect.stringMatching(/^I have looked at the task/),
        expect.stringMatching(/^I have looked at the task/),
      ]);
      expect(run.seen.filter((s) => s.finish === "length")).toHaveLength(1);
      expect(run.seen.filter((s) => s.bad && s.finish !== "length")).toHaveLength(1);
      expect(run.seen.some((s) => s.calls === 2 && !s.bad)).toBe(true);
    }
    const runs = new Set(server.played.filter((p) => p.task === TASK.id && p.node === "decide").map((p) => p.run));
    expect(runs.size).toBe(2);
  });

  it("a re-sent request gets the same turn again; the misbehaviour of a turn is shown once", async () => {
    const run = client(TASK.goal);
    const firstMisbehaving = plans.findIndex((p) => p.kind === "misbehave");
    for (let i = 0; run.ran.length < oracleCalls.length && run.seen.every((s) => s.calls > 0 && !s.bad); i++) await run.step();
    // The last answer misbehaved: the runtime's retry of the same request now gets the oracle's turn.
    const again = await post(run.request());
    const again2 = await post(run.request());
    const calls = (r: typeof again) => ((r.json.choices as Array<{ message: Answer }>)[0]!.message.tool_calls ?? []).map((c) => [c.id, c.function.name, c.function.arguments]);
    expect(calls(again)).toEqual(calls(again2));
    const turn = TASK.trajectory.decide![firstMisbehaving]!;
    expect(calls(again).map((c) => c[1])).toEqual((turn.tool_calls ?? []).map((c) => c.name));
  });

  it("--model test-server[:SEED]: the seed is a whole number, and the model exists only with the eval's server", () => {
    expect([testServerSeed("test-server"), testServerSeed("test-server:7"), testServerSeed("openai:test-server")]).toEqual([1, 7, null]);
    expect(() => testServerSeed("test-server:two")).toThrow(/seed must be a whole number, as in test-server:2/);
    const task = loadSuite(SUITE, [TASK.id])[0]!;
    expect(() => taskModel("test-server", task)).toThrow(/played by the server that ledgerloop eval starts/);
    expect(taskModel("test-server", task, server.url).instance?.name).toBe("openai:test-server");
  });

  it("a request it cannot place gets a 400 that says why", async () => {
    // A prompt cut down to the misbehaving answer alone: the run's place is unknown, not turn 0 again.
    const run = client(TASK.goal, 1);
    while (run.seen.every((s) => s.calls > 0)) await run.step();
    const lost = await post(run.request());
    expect(lost.status).toBe(400);
    expect(JSON.stringify(lost.json)).toContain("its run and turn are unknown");

    const none = await post({ model: "m", tools: TOOLS, messages: [{ role: "user", content: "Write me a poem." }] });
    expect(none.status).toBe(400);
    expect(JSON.stringify(none.json)).toContain("no task of the suite has its goal in this request");
    const text = await post({
      model: "m",
      messages: [
        { role: "system", content: "# Tools\nYou act only by calling tools. To call one, write a block" },
        { role: "user", content: TASK.goal },
      ],
    });
    expect(text.status).toBe(400);
    expect(JSON.stringify(text.json)).toContain("native tool calls only");
  });
});
