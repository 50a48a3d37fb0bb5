import fs from "node:fs";
import path from "node:path";
import { Command } from "@langchain/langgraph";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createCodingAgent } from "../../src/agent/graph.js";
import type { LedgerEvent } from "../../src/state.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cli, jsonLines } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });
// `frobnicate` is no program the policy knows: it asks. `sudo` is always refused.
const SCRIPT = {
  decide: [
    call("run_command", { command: "echo ran > asked.txt && frobnicate --now" }),
    call("run_command", { command: "sudo id" }),
    call("finish", { summary: "done" }),
  ],
};

let agents: TestAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
});
afterAll(() => cleanupTemp());

const fbOf = (es: LedgerEvent[]) => es.filter((e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback");
const approvals = (es: LedgerEvent[]) => es.filter((e): e is LedgerEvent<"approval"> => e.type === "approval");

describe("approvals in the graph", () => {
  it("an ask pauses the run with interrupt(); a rejection reaches the model, and nothing ran", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const a = await testAgent(ws, SCRIPT, { approve: "ask" });
    agents.push(a);
    const agent = createCodingAgent({ runtime: a.rt });
    const cfg = { configurable: { thread_id: "t1" }, durability: "sync" as const, recursionLimit: 100 };
    await agent.invoke({ goal: "x" }, cfg);
    const paused = await agent.getState(cfg);
    const request = paused.tasks.flatMap((t) => t.interrupts)[0]!.value as { kind: string; command: string; rule: string };
    expect(request).toMatchObject({ kind: "approval", command: "echo ran > asked.txt && frobnicate --now", rule: "program.unknown" });
    expect(paused.next).toEqual(["act"]);
    expect(fs.existsSync(path.join(ws, "asked.txt"))).toBe(false);

    await agent.invoke(new Command({ resume: { decision: "reject" } }), cfg);
    const events = await a.events();
    expect(approvals(events).map((e) => e.payload)).toEqual([
      expect.objectContaining({ decision: "rejected", by: "user", rule: "program.unknown", command: "echo ran > asked.txt && frobnicate --now" }),
    ]);
    const [asked, sudo] = fbOf(events);
    expect(asked!.payload).toMatchObject({ status: "error", errorClass: "policy_denied", exitCode: 126 });
    expect(asked!.payload.output).toMatch(/needs approval, which it did not get/);
    expect(fs.existsSync(path.join(ws, "asked.txt"))).toBe(false);
    // A denial never asks: sudo is refused with the rule and the reason, and the run goes on.
    expect(sudo!.payload).toMatchObject({ errorClass: "policy_denied", exitCode: 126 });
    expect(sudo!.payload.output).toMatch(/rule priv\.escalation/);
    expect(approvals(events)).toHaveLength(1);
    expect((await agent.getState(cfg)).values).toMatchObject({ status: "finished" });
    // The model saw both refusals as the results of its calls (in the turn log: the cache layout
    // keeps tool results in place and puts only the volatile status last).
    expect(
      a
        .decidePrompt(2)
        .map((m) => String(m.content))
        .join("\n"),
    ).toMatch(/needs approval/);
  });

  it("an approval lets the command run, once, and is recorded", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const a = await testAgent(ws, SCRIPT, { approve: "ask" });
    agents.push(a);
    const agent = createCodingAgent({ runtime: a.rt });
    const cfg = { configurable: { thread_id: "t1" }, durability: "sync" as const, recursionLimit: 100 };
    await agent.invoke({ goal: "x" }, cfg);
    await agent.invoke(new Command({ resume: { decision: "approve" } }), cfg);
    expect(fs.readFileSync(path.join(ws, "asked.txt"), "utf8")).toBe("ran\n");
    const events = await a.events();
    expect(approvals(events)[0]!.payload).toMatchObject({ decision: "approved", by: "user" });
    // It ran (and failed: no such program), which is feedback, not a refusal.
    expect(fbOf(events)[0]!.payload).toMatchObject({ exitCode: 127, errorClass: "command_not_found" });
    const chain = await a.rt.ledger.causalChain(approvals(events)[0]!.causedBy!);
    // The pause itself is on the chain: the run said it was waiting for this action's approval.
    expect(chain.map((e) => e.type)).toEqual(["model_call", "agent_action", "run_status", "approval", "environment_feedback"]);
  });

  it("--approve auto and deny decide without pausing, and say so in the ledger", async () => {
    for (const [mode, decision] of [
      ["auto", "approved"],
      ["deny", "rejected"],
    ] as const) {
      const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
      const a = await testAgent(ws, SCRIPT, { approve: mode });
      agents.push(a);
      expect((await a.run("x")).status).toBe("finished");
      expect(approvals(await a.events())[0]!.payload).toMatchObject({ decision, by: "auto" });
      expect(fs.existsSync(path.join(ws, "asked.txt"))).toBe(mode === "auto");
    }
  });
});

// Each case starts several real CLI processes (seconds each on a busy machine): one test per
// answer, with room to spare. The "no answer yet" and "nothing to answer" checks run once.
const CLI_TIMEOUT = 240_000;

describe("approvals through the CLI", () => {
  it.each(["--approve", "--reject"])(
    "run pauses when nobody can answer, and resume %s answers later",
    (answer) => {
      const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
      const traj = path.join(ws, "..", `appr-${path.basename(ws)}.json`);
      fs.writeFileSync(traj, JSON.stringify(SCRIPT));
      const first = cli(["run", "task", "-w", ws, "--model", `scripted:${traj}`, "--thread", "P", "--json", "-q"]);
      expect(first.code).toBe(1);
      const out = JSON.parse(first.stdout);
      expect(out).toMatchObject({ status: "awaiting_approval", pending: { kind: "approval", rule: "program.unknown" } });
      if (answer === "--approve") {
        const human = cli(["resume", "P", "-w", ws]);
        expect(human.stderr).toMatch(/waiting for approval of: echo ran > asked\.txt && frobnicate --now/);
        expect(human.stderr).toMatch(/resume P .*--approve/);
      }
      const done = cli(["resume", "P", "-w", ws, answer, "--json", "-q"]);
      expect(done.code, done.stderr).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ status: "finished" });
      const events = jsonLines<{ type: string; payload: { decision?: string; by?: string } }>(
        cli(["ledger", "P", "-w", ws, "--type", "approval", "--json"]).stdout,
      );
      expect(events.map((e) => e.payload)).toEqual([expect.objectContaining({ decision: answer === "--approve" ? "approved" : "rejected", by: "user" })]);
      expect(fs.existsSync(path.join(ws, "asked.txt"))).toBe(answer === "--approve");
      if (answer === "--approve") {
        const again = cli(["resume", "P", "-w", ws, "--approve"]);
        expect(again.code).toBe(1);
        expect(again.stderr).toMatch(/not waiting for an approval/);
      }
      fs.rmSync(traj, { force: true });
    },
    CLI_TIMEOUT,
  );
});

describe("ledgerloop exec", () => {
  it(
    "mirrors the command's exit code, refuses with 126, and prints the structured feedback",
    () => {
      const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
      const ok = cli(["exec", "-w", ws, "--json", "--", "echo hello; echo oops >&2; exit 3"]);
      expect(ok.code).toBe(3);
      const fb = JSON.parse(ok.stdout);
      expect(fb).toMatchObject({ exitCode: 3, stdout: "hello\n", stderr: "oops\n", errorClass: "unknown", denied: null, stoppedBy: null, limit: null });
      expect(["bwrap", "unshare", "none"]).toContain(fb.sandbox);
      const made = JSON.parse(cli(["exec", "-w", ws, "--json", "--", "touch", "new file.txt"]).stdout);
      expect(made.filesChanged.created).toEqual(["new file.txt"]);
      const denied = cli(["exec", "-w", ws, "--json", "--", "sudo rm -rf /"]);
      expect(denied.code).toBe(126);
      expect(JSON.parse(denied.stdout)).toMatchObject({ errorClass: "policy_denied", denied: { rule: "priv.escalation" } });
      const asks = cli(["exec", "-w", ws, "--json", "--", "frobnicate"]);
      expect(asks.code).toBe(126);
      const yes = cli(["exec", "-w", ws, "--json", "--yes", "--", "frobnicate"]);
      expect(yes.code).toBe(127);
      const slow = cli(["exec", "-w", ws, "--json", "--timeout", "500", "--", "sleep 5"]);
      expect(slow.code).toBe(124);
      expect(JSON.parse(slow.stdout)).toMatchObject({ timedOut: true, errorClass: "timeout", stoppedBy: "limit", limit: "timeout" });
      expect(fs.existsSync(path.join(ws, ".ledgerloop"))).toBe(false);
    },
    CLI_TIMEOUT,
  );
});
