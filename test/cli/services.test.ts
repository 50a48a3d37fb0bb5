import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { cli, jsonLines } from "../helpers/cli.js";
import { noProcessesLeft } from "../helpers/processes.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

// The services example end to end through the CLI: two services started in the background, checked
// from later commands and the dashboard, stopped at the end — once straight through, once with the
// runner killed by SIGKILL in the middle and resumed. No service process may outlive either runner.

const WORKSPACE = path.join(REPO, "examples/services/workspace");
const MODEL = `scripted:${path.join(REPO, "examples/services/trajectory.json")}`;
const level = detectIsolation().level;

afterAll(() => cleanupTemp());

/** Service processes (by their command line) working in this workspace, after up to 10 s. */
const noServicesLeft = (ws: string) => noProcessesLeft(ws, /services\/(api|web)\/server\.js/);

/** Each action's tool and status when the run goes straight through. */
const STRAIGHT_THROUGH = [
  "start_process:ok",
  "start_process:ok",
  "run_command:ok",
  "run_command:ok",
  "process_status:ok",
  "process_output:ok",
  "stop_process:ok",
  "stop_process:ok",
  "finish:ok",
];

type Ev = { type: string; causedBy: string | null; payload: Record<string, unknown> };
const ledgerOf = (ws: string, thread: string) => jsonLines<Ev>(cli(["ledger", thread, "-w", ws, "--json"]).stdout);
const feedbackOf = (events: Ev[]) =>
  events.filter((e) => e.type === "environment_feedback").map((e) => e.payload as { tool: string; status: string; output: string });

describe(`services example (sandbox ${level})`, () => {
  it("runs straight through: the dashboard reaches both services, they are stopped, nothing is left", async () => {
    const ws = tempWorkspace(WORKSPACE);
    const r = cli(["run", "check the services", "-w", ws, "--model", MODEL, "--thread", "S", "--json", "-q"], { timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: "finished", steps: 7 });
    const events = ledgerOf(ws, "S");
    const fb = feedbackOf(events);
    expect(fb.map((f) => `${f.tool}:${f.status}`)).toEqual(STRAIGHT_THROUGH);
    expect(fb[2]!.output).toContain("dashboard: all services healthy");
    expect(fb[3]!.output).toContain('{"service":"api","status":"ok"}');
    // Each start, ready and stop is an event caused by the action that did it.
    const procs = events.filter((e) => e.type === "process");
    expect(procs.map((e) => `${e.payload.kind}:${e.payload.name}`)).toEqual(["start:api", "ready:api", "start:web", "ready:web", "stop:api", "stop:web"]);
    const actions = new Set(events.filter((e) => e.type === "agent_action").map((e) => (e as unknown as { id: string }).id));
    for (const p of procs) expect(actions.has(p.causedBy!)).toBe(true);
    expect(await noServicesLeft(ws)).toEqual([]);
    const report = cli(["report", "S", "-w", ws]).stdout;
    expect(report).toMatch(/## Background processes\n\n- api: stopped; ports 4101/);
  }, 180_000);

  it("killed by SIGKILL mid-run: nothing survives the runner, resume restarts both and they answer again", async () => {
    const ws = tempWorkspace(WORKSPACE);
    // Killed right after the dashboard check's command started, with both services running.
    const killed = cli(["run", "check the services", "-w", ws, "--model", MODEL, "--thread", "K", "--json", "-q"], {
      env: { LEDGERLOOP_FAILPOINT: "command-spawned:1" },
      timeoutMs: 120_000,
    });
    expect(killed.signal).toBe("SIGKILL");
    expect(await noServicesLeft(ws)).toEqual([]);
    const before = ledgerOf(ws, "K").filter((e) => e.type === "process");
    expect(before.map((e) => `${e.payload.kind}:${e.payload.name}`)).toEqual(["start:api", "ready:api", "start:web", "ready:web"]);

    const resumed = cli(["resume", "K", "-w", ws, "--json", "-q"], { timeoutMs: 120_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished" });
    const events = ledgerOf(ws, "K");
    const procs = events.filter((e) => e.type === "process");
    // Restarted in their start order, each caused by the event that first started it.
    const restarts = procs.filter((e) => e.payload.kind === "restart");
    expect(restarts.map((e) => e.payload.name)).toEqual(["api", "web"]);
    const ids = new Map(events.map((e) => [(e as unknown as { id: string }).id, e]));
    for (const r of restarts) expect(ids.get(r.causedBy!)?.payload).toMatchObject({ kind: "start", name: r.payload.name });
    const fb = feedbackOf(events);
    expect(fb[2]).toMatchObject({ tool: "run_command", status: "interrupted" });
    // The later command reaches the restarted services.
    expect(fb[3]).toMatchObject({ tool: "run_command", status: "ok" });
    expect(fb[3]!.output).toContain("dashboard: all services healthy");
    // The model was told.
    const ctx = cli(["context", "K", "-w", ws, "--step", "4", "--full"]).stdout;
    expect(ctx).toMatch(/Restarted after the run resumed[\s\S]*- api: restarted, ready after \d+ ms \(listening on 4101\)[\s\S]*- web: restarted/);
    expect(await noServicesLeft(ws)).toEqual([]);
  }, 240_000);

  it("a restart that fails after a resume is reported with its output", async () => {
    const ws = tempWorkspace(WORKSPACE);
    const killed = cli(["run", "check the services", "-w", ws, "--model", MODEL, "--thread", "F", "--json", "-q"], {
      env: { LEDGERLOOP_FAILPOINT: "command-spawned:1" },
      timeoutMs: 120_000,
    });
    expect(killed.signal).toBe("SIGKILL");
    // The workspace changed while the run was down: the web service no longer starts.
    fs.writeFileSync(path.join(ws, "services/web/server.js"), 'console.error("web: missing WEB_SECRET"); process.exit(2);\n');
    const resumed = cli(["resume", "F", "-w", ws, "--json", "-q"], { timeoutMs: 120_000 });
    expect(resumed.stdout).not.toBe("");
    const procs = ledgerOf(ws, "F").filter((e) => e.type === "process");
    const failed = procs.find((e) => e.payload.kind === "failed" && e.payload.name === "web")!;
    // Its output in the message. Exit code 1 instead of 2, seen once in a loaded full run, was bwrap
    // stopping on a host socket closed during its set-up (mask-race.test.ts).
    expect(failed.payload.reason, `web's last lines: ${JSON.stringify(failed.payload.lastLines)}; resume's stderr: ${resumed.stderr}`).toMatch(
      /restart after resume failed: "web" exited before it was ready \(exit code 2\)/,
    );
    expect(failed.payload.lastLines).toContain("web: missing WEB_SECRET");
    const ctx = cli(["context", "F", "-w", ws, "--step", "4", "--full"]).stdout;
    expect(ctx).toMatch(/- web: could NOT be restarted: "web" exited before it was ready \(exit code 2\)\n\s+\| web: missing WEB_SECRET/);
    expect(await noServicesLeft(ws)).toEqual([]);
  }, 240_000);
});

describe(`services example, time travel (sandbox ${level})`, () => {
  it("rewound to before the check, resume restarts the services the ledger says ran there, and the check passes", async () => {
    const ws = tempWorkspace(WORKSPACE);
    const r = cli(["run", "check the services", "-w", ws, "--model", MODEL, "--thread", "R", "--json", "-q"], { timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    // The run itself went as straight through: both services stayed up until they were stopped.
    const first = ledgerOf(ws, "R");
    const firstProcs = first.filter((e) => e.type === "process").map((e) => e.payload);
    expect(
      feedbackOf(first).map((f) => `${f.tool}:${f.status}`),
      `the run's process events: ${JSON.stringify(firstProcs)}`,
    ).toEqual(STRAIGHT_THROUGH);
    expect(firstProcs.map((p) => `${p.kind}:${p.name}`)).toEqual(["start:api", "ready:api", "start:web", "ready:web", "stop:api", "stop:web"]);
    const history = jsonLines<{ checkpointId: string; agentStep: number | null; next: string[] }>(cli(["history", "R", "-w", ws, "--json"]).stdout);
    // Before the act of step 4 (the second check): both services were running on that branch.
    const to = history.filter((h) => h.agentStep === 4 && h.next.includes("act")).at(-1)!.checkpointId;
    const rw = cli(["rewind", "R", "-w", ws, "--to", to]);
    expect(rw.code, rw.stderr).toBe(0);
    // Not quiet: its progress (on stderr) says why a restart failed.
    const resumed = cli(["resume", "R", "-w", ws, "--json"], { timeoutMs: 120_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    // The ledger as the resumed branch has it (rewind continues on the checkpoint's branch).
    const events = ledgerOf(ws, "R");
    const restarts = events.filter((e) => e.type === "process" && e.payload.kind === "restart");
    // Stop 39's CI: web's restart met a host socket closed during its sandbox's set-up (mask-race.test.ts).
    const procs = events.filter((e) => e.type === "process").map((e) => e.payload);
    expect(
      restarts.map((e) => e.payload.name),
      `process events: ${JSON.stringify(procs)}; resume's stderr: ${resumed.stderr}`,
    ).toEqual(["api", "web"]);
    const checks = feedbackOf(events).filter((f) => f.tool === "run_command");
    expect(checks.at(-1)).toMatchObject({ status: "ok" });
    expect(checks.at(-1)!.output).toContain("dashboard: all services healthy");
    expect(await noServicesLeft(ws)).toEqual([]);
  }, 240_000);
});
