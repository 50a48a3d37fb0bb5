import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSandbox, type ConfiguredSandbox } from "../../src/sandbox/executor.js";
import { DEFAULT_POLICY } from "../../src/sandbox/policy.js";
import { processHistory, runningProcesses } from "../../src/sandbox/process-history.js";
import { ProcessManager } from "../../src/sandbox/processes.js";
import type { LedgerEvent } from "../../src/state.js";
import { processOutputTool } from "../../src/agent/tools/process-output.js";
import { processStatusTool } from "../../src/agent/tools/process-status.js";
import { startProcessTool } from "../../src/agent/tools/start-process.js";
import { stopProcessTool } from "../../src/agent/tools/stop-process.js";
import type { ToolContext } from "../../src/agent/tools/tool.js";

// The tools against a real sandbox (the strongest level here, with a session), as act runs them.

let tmp: string;
let sb: ConfiguredSandbox;
let pm: ProcessManager;
let ctx: ToolContext;

beforeAll(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-procs-")));
  fs.writeFileSync(
    path.join(tmp, "server.js"),
    `const port = Number(process.argv[2]);\nrequire("http").createServer((q, s) => s.end("up")).listen(port, "127.0.0.1", () => console.log("listening on " + port));\n`,
  );
  sb = createSandbox({ workspace: tmp, session: true });
  pm = new ProcessManager(sb, tmp, 3);
  ctx = {
    workspace: tmp,
    sandbox: sb,
    searcher: { search: async () => [] },
    commandTimeoutMs: 20_000,
    testTimeoutMs: 20_000,
    outputCapBytes: 16 * 1024,
    processes: pm,
    policy: DEFAULT_POLICY,
  };
});

afterAll(async () => {
  await pm.stopAll();
  await sb.closeSession?.();
  fs.rmSync(tmp, { recursive: true, force: true });
});

// Each case starts from no running process, whatever the one before left.
afterEach(async () => {
  await pm.stopAll();
});

const start = (args: Parameters<typeof startProcessTool.run>[0]) => startProcessTool.run(args, ctx);

describe(`background process tools (sandbox ${createSandbox().level})`, () => {
  it("starts a server ready on its port, shows status and output, and stops it with a stop event", async () => {
    const r = await start({ command: "node server.js 4201", name: "one", readyPort: 4201, readyPattern: "^listening on", readyTimeoutMs: 20_000 });
    expect(r.status).toBe("ok");
    expect(r.output).toMatch(
      /started "one" \(pid \d+, sandbox: \w+, listening on 4201\): ready after \d+ ms — port 4201 listening, output matched: listening on 4201/,
    );
    expect(r.effects?.map((e) => e.kind === "process" && e.event.kind)).toEqual(["start", "ready"]);
    const st = await processStatusTool.run({ name: "one" }, ctx);
    expect(st.output).toMatch(/one: running \(pid \d+, listening on 4201\)/);
    expect(st.output).toContain("listening on 4201");
    const out = await processOutputTool.run({ name: "one", grep: "listening" }, ctx);
    expect(out.output).toContain("1 line(s) matching /listening/");
    const c = await sb.exec({ command: `node -e 'fetch("http://127.0.0.1:4201").then(r=>r.text()).then(t=>console.log(t))'`, cwd: tmp, timeoutMs: 20_000 });
    expect(c.stdout.trim()).toBe("up");
    expect(pm.describe()).toMatch(/- one: running \(pid \d+, listening on 4201\)/);
    const stop = await stopProcessTool.run({ name: "one" }, ctx);
    expect(stop.output).toMatch(/^stopped one/);
    expect(stop.effects).toHaveLength(1);
    const again = await stopProcessTool.run({ name: "one" }, ctx);
    expect(again.output).toMatch(/one was not running \(stopped/);
    expect(again.effects).toBeUndefined();
    expect(pm.describe()).toBeNull();
  }, 60_000);

  it("a ready check that never succeeds stops the process and returns its output and the reason", async () => {
    const r = await start({ command: "echo booting; sleep 30", name: "slow", readyPort: 4299, readyTimeoutMs: 600 });
    expect(r.status).toBe("error");
    expect(r.errorClass).toBe("ready_timeout");
    expect(r.output).toContain('"slow" was not ready after 600 ms (waited for port 4299 listening); it was stopped');
    expect(r.output).toContain("booting");
    expect(pm.get("slow")).toMatchObject({ status: "stopped" });
    expect(r.effects?.map((e) => e.kind === "process" && e.event.kind)).toEqual(["start", "failed"]);
  }, 30_000);

  it("a process that exits before it is ready fails with its exit code and output", async () => {
    const r = await start({ command: "echo 'config missing' >&2; exit 3", name: "broken", readyPattern: "ready" });
    expect(r.status).toBe("error");
    expect(r.output).toContain('"broken" exited before it was ready (exit code 3)');
    expect(r.output).toContain("config missing");
    expect(r.exitCode).toBe(3);
  }, 30_000);

  it("refuses a duplicate name, an unknown name, a bad pattern and more than the cap, with clear errors", async () => {
    expect((await start({ command: "sleep 30", name: "a" })).status).toBe("ok");
    const dup = await start({ command: "sleep 30", name: "a" });
    expect(dup.status).toBe("error");
    expect(dup.output).toMatch(/a process named "a" is already running \(pid \d+, started by: sleep 30\); stop_process it first/);
    const unknown = await processStatusTool.run({ name: "nope" }, ctx);
    expect(unknown.status).toBe("error");
    expect(unknown.output).toMatch(/no process named "nope" was started in this run; known: .*a/);
    expect((await processOutputTool.run({ name: "nope" }, ctx)).output).toContain('no process named "nope"');
    expect((await stopProcessTool.run({ name: "nope" }, ctx)).errorClass).toBe("unknown_process");
    const bad = await start({ command: "sleep 1", name: "re", readyPattern: "(" });
    expect(bad.output).toMatch(/readyPattern is not a valid regular expression/);
    expect((await start({ command: "sleep 30", name: "b" })).status).toBe("ok");
    expect((await start({ command: "sleep 30" })).output).toMatch(/started "sleep"/);
    const over = await start({ command: "sleep 30", name: "d" });
    expect(over.status).toBe("error");
    expect(over.errorClass).toBe("process_cap");
    expect(over.output).toContain("at most 3 background processes may run at once in a run; running: a, b, sleep");
    await pm.stopAll();
  }, 60_000);

  it("a process that dies on its own is handed out once, with its exit code and last output", async () => {
    const r = await start({ command: "echo started; sleep 0.5; echo 'fatal: lost connection'; exit 7", name: "flaky" });
    expect(r.status).toBe("ok");
    const deadline = Date.now() + 10_000;
    while (pm.get("flaky") && (pm.get("flaky") as { status: string }).status === "running" && Date.now() < deadline)
      await new Promise((res) => setTimeout(res, 50));
    expect(pm.describe()).toMatch(/- flaky: EXITED on its own \(exit code 7\)[\s\S]*fatal: lost connection/);
    const exits = pm.takeExits();
    expect(exits.map((x) => [x.name, x.exit?.exitCode])).toEqual([["flaky", 7]]);
    expect(pm.takeExits()).toEqual([]);
  }, 30_000);

  it("the policy applies as to run_command: a denied command never starts", async () => {
    const r = await start({ command: "sudo node server.js 4202", name: "root" });
    expect(r.status).toBe("error");
    expect(r.errorClass).toBe("policy_denied");
    expect(typeof pm.get("root")).toBe("string");
  });
});

describe("processHistory", () => {
  const ev = (id: string, payload: Record<string, unknown>) => ({ id, type: "process", payload }) as unknown as LedgerEvent;
  it("folds start, stop, exit and restart into what was running, in start order", () => {
    const events = [
      ev("1", { kind: "start", name: "api", command: "a", readyPort: 1 }),
      ev("2", { kind: "ready", name: "api", command: "a", ports: [1] }),
      ev("3", { kind: "start", name: "web", command: "w" }),
      ev("4", { kind: "start", name: "db", command: "d" }),
      ev("5", { kind: "exit", name: "db", command: "d", exitCode: 1 }),
      ev("6", { kind: "stop", name: "web", command: "w" }),
      ev("7", { kind: "start", name: "web", command: "w2" }),
    ];
    expect(runningProcesses(events).map((p) => [p.name, p.command, p.startEvent])).toEqual([
      ["api", "a", "1"],
      ["web", "w2", "7"],
    ]);
    expect(processHistory(events).find((p) => p.name === "db")).toMatchObject({ status: "exited", exitCode: 1 });
    expect(processHistory(events).find((p) => p.name === "web")?.starts).toBe(2);
    expect(runningProcesses(events).find((p) => p.name === "api")).toMatchObject({ readyPort: 1, ports: [1] });
  });
});

describe("a process that dies on its own, in a run", () => {
  it("is a ledger event caused by its start and shows in the next prompt with exit code and last output", async () => {
    const { testAgent, promptText } = await import("../helpers/agent.js");
    const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-procs-run-")));
    const agent = await testAgent(
      ws,
      {
        decide: [
          {
            content: "start",
            tool_calls: [{ name: "start_process", args: { name: "worker", command: "echo working; sleep 1; echo 'worker: out of jobs'; exit 4" } }],
          },
          { content: "wait", tool_calls: [{ name: "run_command", args: { command: "sleep 2" } }] },
          { content: "look", tool_calls: [{ name: "record_decision", args: { text: "the worker exits when it has no jobs" } }] },
          { content: "done", tool_calls: [{ name: "finish", args: { summary: "ok" } }] },
        ],
      } as never,
      { approve: "auto" },
    );
    try {
      const state = await agent.run("watch the worker");
      expect(state.status).toBe("finished");
      const events = await agent.events();
      const start = events.find((e) => e.type === "agent_action" && (e.payload as { tool: string }).tool === "start_process")!;
      const exit = events.find((e) => e.type === "process" && (e.payload as { kind: string }).kind === "exit")!;
      expect(exit.payload).toMatchObject({ name: "worker", exitCode: 4 });
      expect((exit.payload as { lastLines: string[] }).lastLines).toContain("worker: out of jobs");
      expect(exit.causedBy).toBe(start.id);
      expect(promptText(agent.decidePrompt(3))).toMatch(/- worker: EXITED on its own \(exit code 4\)[\s\S]*\| worker: out of jobs/);
    } finally {
      await agent.close();
      fs.rmSync(ws, { recursive: true, force: true });
    }
  }, 120_000);
});
