import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { createCodingAgent } from "../../src/agent/graph.js";
import { loadTrajectory, type Trajectory } from "../../src/models/scripted.js";
import type { LedgerEvent } from "../../src/state.js";
import { promptText, testAgent, type TestAgent } from "../helpers/agent.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

let agents: TestAgent[] = [];
afterEach(async () => {
  for (const a of agents) a.saver.verify();
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
  cleanupTemp();
});

async function agentFor(workspace: string, t: Trajectory, settings = {}) {
  const a = await testAgent(workspace, t, settings);
  agents.push(a);
  return a;
}

const of = <T extends LedgerEvent["type"]>(events: LedgerEvent[], type: T) => events.filter((e): e is LedgerEvent<T> => e.type === type);

describe("the demo trajectory, in process", () => {
  it("finishes, leaves a workspace whose tests pass, and a complete causal ledger", async () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const a = await agentFor(ws, loadTrajectory(DEMO_TRAJECTORY));
    const final = await a.run("add /health to both services and aggregate them");
    expect(final.status).toBe("finished");
    expect(final.step).toBe(10);
    expect(a.model.unusedTurns()).toEqual({});

    // The agent's work is real: the workspace's own test suite passes now.
    const out = execFileSync("node", ["--test", "test/"], { cwd: ws, encoding: "utf8" });
    expect(out).toMatch(/# pass 4/);

    const events = await a.events();
    const actions = of(events, "agent_action");
    const feedback = of(events, "environment_feedback");
    expect(actions).toHaveLength(12);
    // Every action has exactly one feedback, written after it (write-ahead), linked by causedBy.
    for (const act of actions) {
      const fbs = feedback.filter((f) => f.causedBy === act.id);
      expect(fbs).toHaveLength(1);
      expect(fbs[0]!.seq).toBeGreaterThan(act.seq);
      expect(act.payload.idempotencyKey).toBe(act.idempotencyKey);
    }
    // Each event's parent is the previous event: one linear branch.
    for (let i = 1; i < events.length; i++) expect(events[i]!.parentId).toBe(events[i - 1]!.id);

    const failing = feedback.find((f) => f.payload.tests && f.payload.tests.failed > 0)!;
    expect(failing.payload.tests).toMatchObject({ framework: "node-test", passed: 2, failed: 2 });
    expect(failing.payload.tests!.failedTests).toContain("orders service answers /health");
    const shellEdit = feedback.find((f) => f.payload.tool === "run_command")!;
    expect(shellEdit.payload.filesChanged?.modified).toEqual(["services/orders/server.js"]);
    const passing = feedback.filter((f) => f.payload.tests?.failed === 0);
    expect(passing.at(-1)!.payload.tests!.passed).toBe(4);

    expect(of(events, "decision")).toHaveLength(1);
    expect(of(events, "task_spec")[0]!.payload.subtasks.map((s) => s.id)).toEqual(["users-health", "orders-health", "dashboard", "verify"]);
    expect(events.at(-2)!.type).toBe("reflection");
    expect(events.at(-1)).toMatchObject({ type: "run_status", payload: { status: "finished", steps: 10 } });
    // Completed subtasks point at the evidence that completed them.
    for (const s of final.subtasks) {
      expect(s.status).toBe("completed");
      expect(events.some((e) => e.id === s.evidence)).toBe(true);
    }
  });

  it("shows the model what it needs: the pinned decision every later step, the failing tests right after", async () => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const a = await agentFor(ws, loadTrajectory(DEMO_TRAJECTORY));
    await a.run("demo");
    const decision = "Health endpoints answer GET /health";
    for (let step = 1; step <= 3; step++) expect(promptText(a.decidePrompt(step))).not.toContain(decision);
    for (let step = 4; step <= 10; step++) expect(promptText(a.decidePrompt(step))).toContain(decision);
    // Step 6 ran the tests (2 failed); step 7's prompt carries the failure, names and stderr included.
    const p7 = promptText(a.decidePrompt(7));
    expect(p7).toContain("2 failed");
    expect(p7).toContain("orders service answers /health");
    expect(p7).toMatch(/Last test run .*: 2 passed, 2 failed/);
    // Tool results come back as tool messages answering the assistant's tool calls.
    const msgs = a.decidePrompt(7);
    const lastAssistant = msgs.filter((m) => m.role === "assistant").at(-1)!;
    // Cache layout: the volatile part (status, plan, focus files) is the newest message, after the log.
    expect(msgs.at(-1)!.role).toBe("user");
    expect(msgs.at(-1)!.content).toContain("# Run status");
    const toolMsg = msgs.at(-2)!;
    expect(toolMsg.role).toBe("tool");
    expect(toolMsg.role === "tool" && lastAssistant.role === "assistant" && toolMsg.toolCallId).toBe(
      lastAssistant.role === "assistant" && lastAssistant.toolCalls![0]!.id,
    );
    // Every prompt is recorded and explainable: context_built lists items and points at the exact prompt.
    const built = of(await a.events(), "context_built");
    expect(built).toHaveLength(10);
    const blob = await a.rt.ledger.getBlob(built[6]!.payload.promptRef);
    expect(JSON.parse(blob!)).toEqual(msgs);
    expect(built[6]!.payload.items.map((i) => i.section)).toEqual(expect.arrayContaining(["system", "tools", "goal", "plan", "decisions", "status", "recent"]));
  });

  it("keeps checkpoints small: the state does not grow with the run", async () => {
    const ws = tempWorkspace(undefined, { "big.txt": "x".repeat(60) + "\n".repeat(1) + "y".repeat(2000) });
    const decide = Array.from({ length: 30 }, () => ({ tool_calls: [{ name: "read_file", args: { path: "big.txt" } }] }));
    // The same read 30 times on purpose (the state must not grow): the loop check is not what is tested.
    const a = await agentFor(ws, { decide: [...decide, { tool_calls: [{ name: "finish", args: { summary: "done" } }] }] }, { maxSteps: 40, repeatLimit: 1000 });
    const final = await a.run("read a lot");
    expect(final.status).toBe("finished");
    const rows = a.rt.db
      .prepare("SELECT length(checkpoint) AS n, json_extract(CAST(metadata AS TEXT), '$.step') AS step FROM checkpoints WHERE thread_id = 't1' ORDER BY step")
      .all() as Array<{ n: number; step: number }>;
    expect(rows.length).toBeGreaterThan(100);
    const early = rows.find((r) => r.step === 12)!.n;
    const late = rows.at(-3)!.n;
    expect(late).toBeLessThan(early * 1.3);
    expect(Math.max(...rows.map((r) => r.n))).toBeLessThan(6000);
  });
});

describe("bad tool calls become error feedback, never exceptions", () => {
  it("unknown tool, non-JSON arguments, schema failures and paths outside the workspace", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "hello\n" });
    const outside = path.join(path.dirname(ws), "ll-outside-secret.txt");
    fs.writeFileSync(outside, "top secret\n");
    fs.symlinkSync("/etc", path.join(ws, "etc-link"));
    try {
      const a = await agentFor(ws, {
        decide: [
          {
            tool_calls: [
              { name: "rm_rf", args: { path: "/" } },
              { name: "read_file", args: "{not json" },
              { name: "read_file", args: { path: 42 } },
              { name: "read_file", args: { path: "../ll-outside-secret.txt" } },
              { name: "read_file", args: { path: "etc-link/passwd" } },
              { name: "write_file", args: { path: ".git/hooks/pre-commit", content: "evil" } },
            ],
          },
          { tool_calls: [{ name: "read_file", args: { path: "a.txt" } }] },
          { tool_calls: [{ name: "finish", args: { summary: "ok" } }] },
        ],
      });
      const final = await a.run("probe the tools");
      expect(final.status).toBe("finished");
      const fb = of(await a.events(), "environment_feedback");
      expect(fb.slice(0, 6).map((f) => f.payload.status)).toEqual(["rejected", "rejected", "rejected", "error", "error", "error"]);
      expect(fb[0]!.payload.output).toMatch(/Unknown tool "rm_rf".*read_file/);
      expect(fb[1]!.payload.output).toMatch(/not valid JSON/);
      expect(fb[2]!.payload.output).toMatch(/Invalid arguments for read_file: path/);
      expect(fb[3]!.payload.output).toMatch(/outside the workspace/);
      expect(fb[4]!.payload.output).toMatch(/symlink|outside/i);
      expect(fb[5]!.payload.output).toMatch(/\.git/);
      expect(fb.map((f) => f.payload.output).join("\n")).not.toContain("top secret");
      expect(fs.existsSync(path.join(ws, ".git"))).toBe(false);
      // The model sees each error as the result of the call that caused it.
      const p2 = promptText(a.decidePrompt(2));
      expect(p2).toContain('Unknown tool "rm_rf"');
      expect(p2).toContain("not valid JSON");
      expect(fb[6]!.payload).toMatchObject({ tool: "read_file", status: "ok" });
    } finally {
      fs.rmSync(outside, { force: true });
    }
  });
});

describe("arguments sent as text", () => {
  it("run with the arguments they validate to: a JSON string parsed, an empty string as no arguments", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "hello\n" });
    const a = await agentFor(ws, {
      decide: [
        {
          tool_calls: [
            { name: "read_file", args: '{"path":"a.txt"}' },
            { name: "list_files", args: "" },
          ],
        },
        { tool_calls: [{ name: "finish", args: { summary: "ok" } }] },
      ],
    });
    expect((await a.run("read")).status).toBe("finished");
    const fb = of(await a.events(), "environment_feedback");
    expect(fb[0]!.payload).toMatchObject({ tool: "read_file", status: "ok" });
    expect(fb[0]!.payload.output).toContain("hello");
    expect(fb[1]!.payload).toMatchObject({ tool: "list_files", status: "ok" });
    expect(fb[1]!.payload.output).toContain("a.txt");
    const actions = of(await a.events(), "agent_action");
    expect(actions[0]!.payload.args).toEqual({ path: "a.txt" });
    expect(actions[1]!.payload.args).toEqual({});
  });
});

describe("run endings", () => {
  it("stops with script_exhausted when decide runs out of turns, and records it", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const a = await agentFor(ws, { decide: [{ tool_calls: [{ name: "list_files", args: {} }] }] });
    const final = await a.run("explore");
    expect(final.status).toBe("script_exhausted");
    expect(final.step).toBe(1);
    expect((await a.events()).at(-1)).toMatchObject({ type: "run_status", payload: { status: "script_exhausted" } });
  });

  it("stops at --max-steps", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const decide = Array.from({ length: 5 }, () => ({ tool_calls: [{ name: "list_files", args: {} }] }));
    const a = await agentFor(ws, { decide }, { maxSteps: 2 });
    const final = await a.run("explore");
    expect(final).toMatchObject({ status: "max_steps", step: 2 });
    expect(a.model.unusedTurns()).toEqual({ decide: [2, 3, 4] });
  });

  it("a turn without tool calls is recorded and the model is told to continue", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const a = await agentFor(ws, {
      decide: [{ content: "I think I am done?" }, { tool_calls: [{ name: "finish", args: { summary: "done" } }] }],
    });
    const final = await a.run("x");
    expect(final.status).toBe("finished");
    const p2 = a.decidePrompt(2);
    expect(p2.at(-2)).toMatchObject({ role: "assistant", content: "I think I am done?" });
    expect(p2.at(-1)).toMatchObject({ role: "user" });
    expect(p2.at(-1)!.content).toMatch(/without calling a tool/);
  });
});

describe("reflect and summarize", () => {
  it("reflects after a failure streak and at the end", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    // Three different failing commands: a failure streak, not a repetition.
    const fail = (n: number) => ({ tool_calls: [{ name: "run_command", args: { command: `echo boom ${n} >&2; exit 3` } }] });
    const a = await agentFor(
      ws,
      { decide: [fail(1), fail(2), fail(3), { tool_calls: [{ name: "finish", args: { summary: "gave up" } }] }] },
      { failureStreakLimit: 3 },
    );
    const final = await a.run("fail three times");
    expect(final.status).toBe("finished");
    const reflections = of(await a.events(), "reflection");
    expect(reflections.map((r) => r.payload.trigger)).toEqual(["failure_streak", "end_of_run"]);
    expect(reflections[0]!.payload.lessons.join("\n")).toMatch(/run_command failed/);
    expect(reflections[0]!.payload.fromEvents.length).toBeGreaterThan(0);
  });

  it("the same failing command three times is a repetition, whatever each run's duration", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    // Each run sleeps longer (0.1, 0.4, 0.7 s, counted in a file), so the durations surely differ; the results do not.
    const cmd = "n=$(cat .n 2>/dev/null || echo 0); echo $((n + 1)) > .n; sleep 0.$((n * 3 + 1)); echo boom >&2; exit 3";
    const fail = { tool_calls: [{ name: "run_command", args: { command: cmd } }] };
    const a = await agentFor(ws, { decide: [fail, fail, fail, { tool_calls: [{ name: "finish", args: { summary: "gave up" } }] }] }, { failureStreakLimit: 5 });
    const final = await a.run("fail three times the same way");
    expect(final.status).toBe("finished");
    const feedback = of(await a.events(), "environment_feedback").filter((f) => f.payload.tool === "run_command");
    expect(new Set(feedback.map((f) => f.payload.output)).size).toBeGreaterThan(1);
    expect(of(await a.events(), "reflection").map((r) => r.payload.trigger)).toEqual(["repetition", "end_of_run"]);
  });

  it("folds old history into a summary that the prompt shows instead of the old turns", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "alpha\n".repeat(300) });
    const decide = Array.from({ length: 12 }, (_, i) => ({
      tool_calls: [{ name: "read_file", args: { path: "a.txt", startLine: i + 1, endLine: i + 200 } }],
    }));
    const a = await agentFor(
      ws,
      { decide: [...decide, { tool_calls: [{ name: "finish", args: { summary: "read" } }] }] },
      { recentTurns: 3, summarizeThresholdTokens: 2000, maxSteps: 20 },
    );
    expect((await a.run("read")).status).toBe("finished");
    const events = await a.events();
    const summaries = of(events, "summary");
    expect(summaries.length).toBeGreaterThan(0);
    const first = summaries[0]!;
    // A summary lists exactly the events it covers, and they are older than it.
    for (const id of first.payload.eventIds) {
      const e = events.find((x) => x.id === id)!;
      expect(e.seq).toBeGreaterThanOrEqual(first.payload.fromSeq);
      expect(e.seq).toBeLessThanOrEqual(first.payload.toSeq);
    }
    expect(first.payload.text).toMatch(/step 1: read_file\(a\.txt\) → ok/);
    const last = a.decidePrompt(13);
    expect(promptText(last)).toContain("Earlier history (summarised)");
    // The summary stands in for the old turns: the compaction kept the 3 recent ones, and the turn log
    // grew append-only from there (cache layout), far short of all 12.
    const shown = last.filter((m) => m.role === "assistant").length;
    expect(shown).toBeGreaterThanOrEqual(3);
    expect(shown).toBeLessThan(8);
  });
});

describe("forks", () => {
  it("a run forked from an old checkpoint writes its own branch and sees only its own history", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const decide = [
      { tool_calls: [{ name: "record_decision", args: { text: "first decision" } }] },
      { tool_calls: [{ name: "list_files", args: {} }] },
      { tool_calls: [{ name: "read_file", args: { path: "a.txt" } }] },
      { tool_calls: [{ name: "finish", args: { summary: "done" } }] },
    ];
    const a = await agentFor(ws, { decide });
    await a.run("x");
    const original = await a.events();
    const agent = createCodingAgent({ runtime: a.rt });
    const history = [];
    for await (const s of agent.getStateHistory({ configurable: { thread_id: "t1" } })) history.push(s);
    // The checkpoint right after step 2's decide, before its action ran.
    const at = history.find((s) => (s.values as { step: number }).step === 2 && s.next.includes("act"))!;
    const forkConfig = await agent.updateState(at.config, {});
    await agent.invoke(null, { ...{ configurable: forkConfig.configurable }, durability: "sync", recursionLimit: 100 });
    const after = await agent.getState({ configurable: { thread_id: "t1" } });
    const head = (after.values as { ledgerHead: string }).ledgerHead;
    const branch = await a.rt.ledger.branch(head);
    const oldHead = (at.values as { ledgerHead: string }).ledgerHead;
    const shared = await a.rt.ledger.branch(oldHead);
    // The fork's history is the shared prefix plus its own events, none of the abandoned branch's.
    expect(branch.slice(0, shared.length).map((e) => e.id)).toEqual(shared.map((e) => e.id));
    const abandoned = new Set(original.filter((e) => e.seq > shared.at(-1)!.seq).map((e) => e.id));
    expect(branch.some((e) => abandoned.has(e.id))).toBe(false);
    expect(branch.slice(shared.length).length).toBeGreaterThan(0);
    expect(branch.at(-1)).toMatchObject({ type: "run_status", payload: { status: "finished" } });
    // The decision made before the fork point is on both branches; the ledger as a whole kept both.
    expect(branch.filter((e) => e.type === "decision")).toHaveLength(1);
    expect((await a.events()).length).toBeGreaterThan(original.length);
  });
});
