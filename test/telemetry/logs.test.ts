import fs from "node:fs";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_TASK } from "../../src/cli/demo.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { RunRegistry, sqliteRunRegistry } from "../../src/ledger/runs.js";
import { detectCgroups } from "../../src/sandbox/limits.js";
import { withRetries } from "../../src/models/retry.js";
import type { Runtime } from "../../src/runtime.js";
import { createRedactor } from "../../src/secrets.js";
import { endObservation, observeModelCall, observeNode } from "../../src/telemetry/observer.js";
import { runLogFile } from "../../src/workspace/location.js";
import { cli, cliSpawn, jsonLines } from "../helpers/cli.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

type Line = Record<string, unknown> & { event: string; traceId: string; thread: string; level: number };
const readLog = (file: string) => jsonLines<Line>(fs.readFileSync(file, "utf8"));

describe("the run log of a real CLI run", () => {
  let ws = "";
  let thread = "";
  let run: { code: number | null; stderr: string };
  beforeAll(() => {
    ws = tempWorkspace(DEMO_WORKSPACE);
    const r = cli(["run", DEMO_TASK, "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--json", "-q", "--log-level", "info"], { timeoutMs: 180_000 });
    run = r;
    expect(r.code, r.stderr).toBe(0);
    thread = (JSON.parse(r.stdout) as { thread: string }).thread;
  }, 200_000);

  it("is one JSON line per moment, every line under the trace id the run registry records", () => {
    const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
    const trace = new RunRegistry(db).get(thread)!.trace!;
    const counts = db.prepare("SELECT type, COUNT(*) AS n FROM ll_events WHERE thread_id = ? GROUP BY type").all(thread) as Array<{ type: string; n: number }>;
    db.close();
    expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
    const file = runLogFile(path.join(ws, ".ledgerloop"), thread);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const lines = readLog(file);
    expect(new Set(lines.map((l) => l.traceId))).toEqual(new Set([trace.traceId]));
    expect(new Set(lines.map((l) => l.thread))).toEqual(new Set([thread]));
    const n = (t: string) => counts.find((c) => c.type === t)?.n ?? 0;
    // Every model call and every tool run the ledger holds is a log line too.
    expect(lines.filter((l) => l.event === "model_call")).toHaveLength(n("model_call"));
    expect(lines.filter((l) => l.event === "tool_run")).toHaveLength(n("environment_feedback"));
    const tests = lines.filter((l) => l.event === "tool_run" && l.tool === "run_tests");
    expect(tests.map((l) => [l.status, l.exitCode, l.risk])).toEqual([
      ["error", 1, "exec"],
      ["ok", 0, "exec"],
    ]);
    expect(tests[0]!.level).toBe(40); // a failing tool run is a warning
    // A shell command's line has what its cgroups measured (where there are any) and no stop: it ended by itself.
    const cg = detectCgroups().parents;
    if (cg.cpuacct && cg.memory) expect(tests.every((l) => (l.cpuMs as number) > 0 && (l.memoryPeakBytes as number) > 1 << 20)).toBe(true);
    expect(tests.some((l) => "stoppedBy" in l || "limit" in l)).toBe(false);
    // Nodes: each start has its end, with a duration and an outcome.
    const starts = lines.filter((l) => l.event === "node_start");
    const ends = lines.filter((l) => l.event === "node_end");
    expect(ends.map((l) => l.node)).toEqual(starts.map((l) => l.node));
    expect(ends.every((l) => typeof l.durationMs === "number" && l.status === "ok")).toBe(true);
    // Subtasks: the demo's four end completed, each with a duration.
    const subEnds = lines.filter((l) => l.event === "subtask_end");
    expect(subEnds.map((l) => l.status)).toEqual(["completed", "completed", "completed", "completed"]);
    expect(subEnds.every((l) => typeof l.durationMs === "number" && (l.durationMs as number) >= 0)).toBe(true);
    expect(lines.filter((l) => l.event === "subtask_start").map((l) => l.subtask)).toContain(subEnds[0]!.subtask);
    expect(lines.at(-1)).toMatchObject({ event: "run_end", status: "finished" });
  });

  it("--log-level info puts the log lines on stderr too", () => {
    const onStderr = run.stderr
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Line);
    expect(onStderr.some((l) => l.event === "node_end" && l.thread === thread)).toBe(true);
    expect(onStderr.some((l) => l.event === "node_start")).toBe(false); // debug, below info
  });

  it("ledgerloop logs prints it readable, as JSON, or from a level on", () => {
    const r = cli(["logs", thread, "-w", ws]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}run_start/m);
    expect(r.stdout).toMatch(/WARN {2}tool_run +run_tests error \(test_failure\).*exitCode=1/m);
    const j = cli(["logs", thread, "-w", ws, "--json"]);
    expect(jsonLines(j.stdout)).toHaveLength(readLog(runLogFile(path.join(ws, ".ledgerloop"), thread)).length);
    const w = cli(["logs", thread, "-w", ws, "--json", "--level", "warn"]);
    const warns = jsonLines<Line>(w.stdout);
    expect(warns.length).toBeGreaterThan(0);
    expect(warns.every((l) => l.level >= 40)).toBe(true);
  });

  it("bad input: an unknown thread, an unknown level", () => {
    const u = cli(["logs", "no-such-run", "-w", ws]);
    expect(u.code).toBe(1);
    expect(u.stderr).toMatch(/unknown thread "no-such-run"/);
    const l = cli(["logs", thread, "-w", ws, "--level", "loud"]);
    expect(l.code).toBe(2);
    expect(l.stderr).toMatch(/--level must be one of/);
    const r = cli(["run", "x", "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--log-level", "chatty"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--log-level must be one of trace, debug, info, warn, error, fatal, silent, got "chatty"/);
  });

  it("logs --follow prints the lines a running run appends", async () => {
    const ws2 = tempWorkspace(DEMO_WORKSPACE);
    const runner = cliSpawn(["run", DEMO_TASK, "-w", ws2, "--model", `scripted:${DEMO_TRAJECTORY}`, "-t", "followed", "-q"]);
    const file = runLogFile(path.join(ws2, ".ledgerloop"), "followed");
    const t0 = Date.now();
    while (!fs.existsSync(file) && Date.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 100));
    const follower = cliSpawn(["logs", "followed", "-w", ws2, "--follow", "--json"]);
    let out = "";
    follower.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    await new Promise((r) => runner.on("close", r));
    const t1 = Date.now();
    while (!out.includes('"event":"run_end"') && Date.now() - t1 < 30_000) await new Promise((r) => setTimeout(r, 100));
    follower.kill("SIGINT");
    const code = await new Promise((r) => follower.on("close", r));
    expect(code).toBe(0);
    const lines = jsonLines<Line>(out);
    expect(lines.map((l) => l.event)).toEqual(readLog(file).map((l) => l.event));
    expect(lines.at(-1)!.event).toBe("run_end");
  }, 200_000);
});

describe("the observer itself", () => {
  it("redacts secrets, counts retries of a model call and logs a failing node", async () => {
    const dir = tempWorkspace();
    const stateDir = path.join(dir, ".ledgerloop");
    fs.mkdirSync(stateDir);
    const db = openStateDb(path.join(stateDir, "state.db"));
    const secret = "zq9-very-secret-value-4711";
    const rt = {
      db,
      runs: sqliteRunRegistry(db),
      dbPath: path.join(stateDir, "state.db"),
      stateDir,
      workspace: dir,
      redactor: createRedactor([secret]),
      model: { name: "openai:gpt-4o-mini" },
    } as unknown as Runtime;
    const state = { step: 3, subtasks: [{ id: "a", description: `do it with ${secret}`, status: "in_progress" as const }] };
    let calls = 0;
    await observeNode(rt, "t1", "decide", state, async () => {
      await observeModelCall(
        { node: "decide", turn: 0, model: "openai:gpt-4o-mini" },
        () =>
          withRetries(
            async () => {
              if (++calls === 1) throw Object.assign(new Error("busy"), { status: 503 });
              return { content: "", toolCalls: [], usage: { inputTokens: 100, cachedInputTokens: 40, outputTokens: 7 } };
            },
            { retries: 2, baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 10 },
          ),
        () => 0.25,
      );
      return { subtasks: [{ ...state.subtasks[0]!, status: "completed" as const }] };
    });
    await expect(observeNode(rt, "t1", "act", state, async () => Promise.reject(new Error(`tool broke near ${secret}`)))).rejects.toThrow();
    await endObservation(rt, "t1", "failed", 3);
    const raw = fs.readFileSync(runLogFile(stateDir, "t1"), "utf8");
    expect(raw).not.toContain(secret);
    const lines = jsonLines<Line>(raw);
    expect(lines.find((l) => l.event === "model_retry")).toMatchObject({ attempt: 1, fault: "unavailable", httpStatus: 503, level: 40 });
    expect(lines.find((l) => l.event === "model_call")).toMatchObject({
      inputTokens: 100,
      cachedInputTokens: 40,
      outputTokens: 7,
      costUsd: 0.25,
      retries: 1,
      step: 3,
    });
    expect(lines.find((l) => l.event === "subtask_end")).toMatchObject({
      subtask: "a",
      status: "completed",
      description: expect.stringContaining("[REDACTED]"),
    });
    const err = lines.find((l) => l.event === "node_error")!;
    expect(err).toMatchObject({ node: "act", errorClass: "Error", level: 40 });
    expect(String(err.msg)).toContain("[REDACTED]");
    expect(lines.filter((l) => l.event === "node_end").map((l) => l.status)).toEqual(["ok", "error"]);
    db.close();
  });
});

describe("a stopped command in the run log", () => {
  it("its tool_run line says what stopped it, which limit, and what it used", () => {
    const ws = tempWorkspace(undefined, { "README.md": "x\n" });
    const t = path.join(tempWorkspace(), "t.json");
    fs.writeFileSync(
      t,
      JSON.stringify({
        decide: [
          { content: "", tool_calls: [{ name: "run_command", args: { command: "sleep 20", timeoutMs: 300 } }] },
          { content: "", tool_calls: [{ name: "finish", args: { summary: "ok" } }] },
        ],
      }),
    );
    const r = cli(["run", "Wait", "-w", ws, "--model", `scripted:${t}`, "--json", "-q"], { timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    const thread = (JSON.parse(r.stdout) as { thread: string }).thread;
    const ran = readLog(runLogFile(path.join(ws, ".ledgerloop"), thread)).filter((l) => l.event === "tool_run" && l.tool === "run_command");
    expect(ran).toHaveLength(1);
    expect(ran[0]).toMatchObject({ status: "error", errorClass: "timeout", stoppedBy: "limit", limit: "timeout", level: 40 });
    const cg = detectCgroups().parents;
    if (cg.cpuacct) expect(typeof ran[0]!.cpuMs).toBe("number");
  }, 150_000);
});

describe("secrets stay out of the run log", () => {
  it("a token in the goal and one in the environment never reach the log file", async () => {
    const token = "ghp_" + "Zx8Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc";
    const envSecret = "q8Zr2Lw9Xv4Tn7Kp3Jm6-env-value";
    const ws = tempWorkspace(undefined, { "README.md": "x\n" });
    const t = path.join(tempWorkspace(), "t.json");
    // No plan turn: the deterministic plan makes subtasks out of the goal (which the log names).
    fs.writeFileSync(
      t,
      JSON.stringify({
        decide: [
          { content: "", tool_calls: [{ name: "run_command", args: { command: "exit 3" } }] },
          { content: "", tool_calls: [{ name: "finish", args: { summary: "ok" } }] },
        ],
      }),
    );
    const r = cli(["run", `Deploy with ${token} then report`, "-w", ws, "--model", `scripted:${t}`, "--json", "-q", "--log-level", "debug"], {
      env: { MY_SERVICE_API_KEY: envSecret },
      timeoutMs: 120_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const thread = (JSON.parse(r.stdout) as { thread: string }).thread;
    const raw = fs.readFileSync(runLogFile(path.join(ws, ".ledgerloop"), thread), "utf8");
    expect(raw).toContain("[REDACTED]");
    expect(raw).toMatch(/"event":"tool_run".*"exitCode":3/);
    for (const s of [token, envSecret]) {
      expect(raw).not.toContain(s);
      expect(r.stderr).not.toContain(s);
    }
  }, 150_000);
});
