import fs from "node:fs";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import type pg from "pg";
import { expect } from "vitest";
import { cliSpawn } from "../helpers/cli.js";

/**
 * A scripted run of `steps` decide steps that leaves evidence of every effect: odd steps append
 * their own key to counter.txt with a command (not idempotent: a takeover must never run it
 * again), even steps write a file (idempotent: a takeover may write it again, same content).
 */
export function longTrajectory(steps: number): object {
  const decide = [];
  for (let k = 1; k <= steps; k++) {
    decide.push(
      k % 2
        ? { content: `step ${k}`, tool_calls: [{ name: "run_command", args: { command: `echo a${k} >> counter.txt` } }] }
        : { content: `step ${k}`, tool_calls: [{ name: "write_file", args: { path: `out/f${k}.txt`, content: `written at step ${k}\n` } }] },
    );
  }
  decide.push({ content: "done", tool_calls: [{ name: "finish", args: { summary: `${steps} steps done` } }] });
  return {
    plan: [
      {
        content: "one subtask",
        tool_calls: [{ name: "update_plan", args: { subtasks: [{ id: "work", description: "do the steps", status: "in_progress" }] } }],
      },
    ],
    decide,
  };
}

export function writeTrajectory(dir: string, steps: number): string {
  const file = path.join(dir, `trajectory-${steps}.json`);
  fs.writeFileSync(file, JSON.stringify(longTrajectory(steps)));
  return file;
}

/** A worker process, with its stdout (JSON outcome lines) and stderr collected. */
export interface WorkerProc {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * A test worker: short leases and polls, and it exits 1 s after its last run once the database
 * has no run queued or held by anyone (idleFor asks the database, so a released run waiting out
 * its retry delay, or one a dead worker still holds, keeps it alive). A longer idle period only
 * made every test wait it out once per worker.
 */
export function spawnWorker(url: string, dir: string, extra: string[] = [], env: Record<string, string> = {}): WorkerProc {
  const child = cliSpawn(
    ["worker", "--state", url, "--dir", dir, "--lease-seconds", "3", "--poll-seconds", "1", "--exit-when-idle", "1", "--json", "--verbose", ...extra],
    { env },
  );
  let out = "";
  let err = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, out: () => out, err: () => err, exited };
}

/**
 * The worker's exit, or — after `ms`, a liveness bound far above any expected time — a failure
 * carrying its stderr, instead of a test that hangs.
 */
export async function exitOf(w: WorkerProc, ms = 240_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let t: NodeJS.Timeout | undefined;
  const r = await Promise.race([w.exited, new Promise<null>((resolve) => (t = setTimeout(() => resolve(null), ms)))]);
  clearTimeout(t);
  if (!r) {
    w.child.kill("SIGKILL");
    throw new Error(`worker ${w.child.pid} did not exit within ${ms} ms; its stderr:\n${w.err().slice(-4000)}`);
  }
  return r;
}

/**
 * Polls `fn` until it returns a truthy value (no wall-clock assertion: the caller's timeout bounds
 * it). With `giveUp`, a liveness bound below the test's timeout: it throws `why()` instead, so a
 * hang fails with the evidence (the workers' stderr) rather than a bare timeout.
 */
export async function until<T>(fn: () => Promise<T | null | undefined | false>, everyMs = 250, giveUp?: { ms: number; why: () => string }): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (giveUp && Date.now() - start > giveUp.ms) throw new Error(`gave up after ${giveUp.ms} ms: ${giveUp.why()}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A ledger row of a queued run, as the invariant checks read it. */
export interface LedgerRow {
  id: string;
  seq: number;
  type: string;
  caused_by: string | null;
  payload: string;
}

/** A step's action of a `longTrajectory` run, its payload parsed. */
export interface StepAction {
  id: string;
  p: { tool: string; callId: string; args: { command?: string } };
}

/**
 * Reads a run's ledger and checks what no fault (a worker killed, stopped or cut off, the database
 * away) may break: one gap-free sequence (nothing lost), one action per call id, `steps` step
 * actions (run_command or write_file), each with exactly one feedback (nothing run twice).
 */
export async function checkRunLedger(
  c: pg.Client,
  thread: string,
  steps: number,
): Promise<{ events: LedgerRow[]; actions: StepAction[]; feedback: LedgerRow[] }> {
  const events = (await c.query<LedgerRow>("SELECT id, seq, type, caused_by, payload FROM ll_events WHERE thread_id = $1 ORDER BY seq", [thread])).rows;
  expect(
    events.map((e) => Number(e.seq)),
    `${thread}: gap-free`,
  ).toEqual(Array.from({ length: events.length }, (_, k) => k + 1));
  const actions: StepAction[] = events.filter((e) => e.type === "agent_action").map((e) => ({ id: e.id, p: JSON.parse(e.payload) as StepAction["p"] }));
  expect(new Set(actions.map((a) => a.p.callId)).size, `${thread}: one action per call id`).toBe(actions.length);
  const work = actions.filter((a) => a.p.tool === "run_command" || a.p.tool === "write_file");
  expect(work, `${thread}: step actions`).toHaveLength(steps);
  const feedback = events.filter((e) => e.type === "environment_feedback");
  for (const a of work)
    expect(
      feedback.filter((f) => f.caused_by === a.id),
      `${thread} ${a.p.callId}: one feedback`,
    ).toHaveLength(1);
  return { events, actions, feedback };
}
