import fs from "node:fs";
import path from "node:path";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, cliSpawn, jsonLines } from "../helpers/cli.js";
import { noProcessesLeft, processesIn } from "../helpers/processes.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";

type Ev = { id: string; seq: number; type: string; parentId: string | null; causedBy: string | null; payload: unknown };

// prefixReuse is a token measurement like `tokens`: tool outputs carry timings, so it varies by a token or two.
const VOLATILE = new Set(["durationMs", "promptRef", "idempotencyKey", "usage", "items", "omitted", "tokens", "ts", "startedAt", "prefixReuse"]);

/** A ledger with ids, times and durations taken out, so two runs of the same script compare equal. */
function normalize(events: Ev[], ws: string): unknown[] {
  const seqOf = new Map(events.map((e) => [e.id, e.seq]));
  const scrub = (v: unknown): unknown => {
    if (typeof v === "string") {
      if (seqOf.has(v)) return `#${seqOf.get(v)}`;
      return v
        .split(ws)
        .join("WS")
        .replace(/\(\d+\.\d\d s, sandbox/g, "(T s, sandbox")
        .replace(/duration_ms:? [\d.]+/g, "duration_ms T")
        .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "TS");
    }
    if (Array.isArray(v)) return v.map(scrub);
    if (v && typeof v === "object") {
      return Object.fromEntries(
        Object.entries(v)
          .filter(([k]) => !VOLATILE.has(k))
          .map(([k, x]) => [k, scrub(x)]),
      );
    }
    return v;
  };
  return events.map((e) => ({
    seq: e.seq,
    type: e.type,
    parent: e.parentId ? seqOf.get(e.parentId) : null,
    causedBy: e.causedBy ? seqOf.get(e.causedBy) : null,
    payload: scrub(e.payload),
  }));
}

function ledgerOf(ws: string, thread: string): Ev[] {
  const r = cli(["ledger", thread, "-w", ws, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return jsonLines<Ev>(r.stdout);
}

const MODEL = `scripted:${DEMO_TRAJECTORY}`;
const TASK = "demo task";
let baseline: { ledger: unknown[]; tree: Record<string, string> };

beforeAll(() => {
  const ws = tempWorkspace(DEMO_WORKSPACE);
  const r = cli(["run", TASK, "-w", ws, "--model", MODEL, "--thread", "T", "--json", "-q"]);
  expect(r.code, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ thread: "T", status: "finished", steps: 10 });
  baseline = { ledger: normalize(ledgerOf(ws, "T"), ws), tree: readTree(ws) };
});
afterAll(() => cleanupTemp());

describe("a run killed with SIGKILL resumes to the same workspace and the same ledger", () => {
  // Points spread over the run: mid-plan, between a model answer and its actions, between an action
  // and its feedback, right after feedback of the failing test run, between a node's ledger writes
  // and its checkpoint, and late in the run.
  const points = [
    "ledger-append:1",
    "ledger-append:5",
    "ledger-append:32",
    "ledger-append:33",
    "ledger-append:36",
    "checkpoint-put:9",
    "checkpoint-put:30",
    "ledger-append:51",
  ];
  it.each(points)("killed at %s", (point) => {
    const ws = tempWorkspace(DEMO_WORKSPACE);
    const killed = cli(["run", TASK, "-w", ws, "--model", MODEL, "--thread", "T", "--json", "-q"], {
      env: { LEDGERLOOP_FAILPOINT: point },
    });
    expect(killed.signal).toBe("SIGKILL");
    expect(killed.stdout).toBe("");
    const resumed = cli(["resume", "T", "-w", ws, "--json", "-q"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ thread: "T", status: "finished", steps: 10 });
    expect(normalize(ledgerOf(ws, "T"), ws)).toEqual(baseline.ledger);
    expect(readTree(ws)).toEqual(baseline.tree);
  });
});

describe("a run killed in the middle of a slow command", () => {
  // Without isolation the command outlives the runner and resume must stop it; under bwrap or
  // unshare the sandbox dies with the runner (--die-with-parent, PID namespace) and takes it along.
  // "spawned" kills the runner right after it started the command and before it could record the
  // process: the tag the command carries must still lead resume to it.
  const cases: Array<[string, "none" | "auto", "running" | "spawned"]> = [
    ["while it runs (sandbox none)", "none", "running"],
    ["while it runs (sandbox auto)", "auto", "running"],
    ["before its process was recorded (sandbox none)", "none", "spawned"],
  ];
  it.each(cases)(
    "killed %s: not run again, reported interrupted, no process left behind",
    async (_name, sandbox, when) => {
      const ws = tempWorkspace(undefined, { "README.md": "x\n" });
      // Without isolation only resume stops the command: it sleeps long enough that no resume, however
      // slow on a loaded machine, comes after its natural end, and the processes working in the
      // workspace show whether it was stopped. A sandboxed one dies with the runner (its working
      // directory is the sandbox's view), so there the test waits past the command's natural end.
      const nap = sandbox === "none" ? 90 : 6;
      const traj = path.join(tempWorkspace(), "traj.json");
      fs.writeFileSync(
        traj,
        JSON.stringify({
          decide: [
            { tool_calls: [{ name: "run_command", args: { command: `echo started >> started.log; sleep ${nap}; echo done >> done.log` } }] },
            { tool_calls: [{ name: "finish", args: { summary: "stop" } }] },
          ],
        }),
      );
      const requests = path.join(ws, "..", `req-${path.basename(ws)}.jsonl`);
      try {
        const args = ["run", "slow", "-w", ws, "--model", `scripted:${traj}`, "--thread", "S", "--json", "-q", "--sandbox", sandbox];
        const child = cliSpawn(args, when === "spawned" ? { env: { LEDGERLOOP_FAILPOINT: "command-spawned:1" } } : {});
        const exited = once(child, "exit");
        const t0 = Date.now();
        // Generous: on a loaded machine the CLI's start, the index and the plan come first.
        // "spawned" kills the runner before the command's shell has run a line: only another end counts.
        // The line, not the file: the shell creates started.log before echo writes to it, and a
        // kill in between (bwrap takes the command along) would leave it empty.
        const started = () => fs.existsSync(path.join(ws, "started.log")) && fs.readFileSync(path.join(ws, "started.log"), "utf8") === "started\n";
        while (!started()) {
          const ended = child.exitCode !== null || child.signalCode !== null;
          if (ended && !(when === "spawned" && child.signalCode === "SIGKILL"))
            throw new Error(`the run ended (${child.exitCode ?? child.signalCode}) before its command started`);
          if (Date.now() - t0 > 120_000) throw new Error("the command never started");
          await new Promise((r) => setTimeout(r, 20));
        }
        const startedAt = Date.now();
        if (when === "running") child.kill("SIGKILL");
        const [, signal] = await exited;
        expect(signal).toBe("SIGKILL");
        // The runner is gone and its command runs on: what resume has to stop.
        if (sandbox === "none") expect(processesIn(ws).length).toBeGreaterThan(0);
        const resumed = cli(["resume", "S", "-w", ws, "--json", "-q"], { env: { LEDGERLOOP_RECORD_REQUESTS: requests } });
        expect(resumed.code, resumed.stderr).toBe(0);
        expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "finished" });
        // Started once (never re-run), and stopped: it can no longer reach its last line.
        expect(fs.readFileSync(path.join(ws, "started.log"), "utf8")).toBe("started\n");
        if (sandbox === "none") {
          expect(await noProcessesLeft(ws), "processes still working in the workspace after resume").toEqual([]);
        } else {
          await new Promise((r) => setTimeout(r, Math.max(0, startedAt + (nap + 1) * 1000 - Date.now())));
        }
        expect(fs.existsSync(path.join(ws, "done.log"))).toBe(false);
        const fb = ledgerOf(ws, "S").filter((e) => e.type === "environment_feedback");
        expect(fb[0]!.payload).toMatchObject({ tool: "run_command", status: "interrupted" });
        // Who stopped it may vary (this resume, or another runner's sweep of stale cgroups when
        // tests run side by side); that nothing of it runs on does not.
        expect(String((fb[0]!.payload as { output: string }).output)).toMatch(/None of its processes is still running\./);
        // The model's next prompt tells it what happened.
        const sent = jsonLines<{ node: string; turn: number; messages: Array<{ content: string }> }>(fs.readFileSync(requests, "utf8"));
        const next = sent.find((r) => r.node === "decide" && r.turn === 1)!;
        expect(next.messages.map((m) => m.content).join("\n")).toMatch(/was interrupted.*NOT run again/s);
      } finally {
        fs.rmSync(traj, { force: true });
        fs.rmSync(requests, { force: true });
      }
    },
    300_000,
  );
});
