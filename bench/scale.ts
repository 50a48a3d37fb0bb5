import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { openPgState } from "../src/ledger/pg-db.js";
import { startQueue, submitRun } from "../src/queue/run-queue.js";
import { ensureBuilt } from "../test/helpers/build.js";
import { createTestDatabase } from "../test/helpers/postgres.js";
import { writeTrajectory } from "../test/queue/queue-fixtures.js";
import { median, printTable, benchPgUrl, type BenchResult } from "./report.js";
import { benchState } from "./state.js";

// Scaling out on PostgreSQL (issue 11, item 7), with the built bin as real worker processes:
//   1. runs per minute with 1, 2 and 4 workers (concurrency 1 each) on the same scripted task, each
//      configuration on its own fresh database, from the first submit to the last run done;
//   2. checkpoint + ledger writes per step on PostgreSQL against SQLite (bench/state.ts's figures);
//   3. takeover: a worker holding a long run is SIGKILLed while a second one idles; the time from the
//      kill to the run's lease re-acquired by the second, and to the first ledger event it writes.
// Workers on one machine share its cores with each other and with PostgreSQL itself: the speed-up is
// bounded by the core count, which the output states. PostgreSQL from LEDGERLOOP_BENCH_PG_URL or
// LEDGERLOOP_TEST_PG_URL; sizes from BENCH_SCALE_RUNS, _STEPS, _WORKERS, _REPS, _LEASE and _DEFAULT_REPS
// (takeovers with the default 30 s lease; 0 skips them).

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BIN = path.join(REPO, "bin/ledgerloop.js");
const env = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One worker process of the built bin, with its stdout (--json outcome lines) and stderr kept. */
interface Worker {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<unknown>;
  started: Promise<void>;
}

function spawnWorker(url: string, dir: string, args: string[]): Worker {
  const childEnv = { ...process.env };
  // What a run would otherwise pick up from the bench's environment instead of its submission.
  for (const k of ["LEDGERLOOP_FAILPOINT", "LEDGERLOOP_MODEL", "LEDGERLOOP_RECORD_REQUESTS", "LEDGERLOOP_STATE_URL"]) delete childEnv[k];
  const child = spawn(process.execPath, [BIN, "worker", "--state", url, "--dir", dir, "--json", ...args], {
    cwd: REPO,
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const exited = new Promise((resolve) => child.on("exit", resolve));
  const started = new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => {
      err += d;
      // RunWorker.start's line: the queue is being polled from here on.
      if (/\] started: /.test(err)) resolve();
    });
    void exited.then(() => reject(new Error(`worker ${child.pid} exited before it started:\n${err.slice(-2000)}`)));
  });
  started.catch(() => {});
  return { child, out: () => out, err: () => err, exited, started };
}

/** Throws, with its stderr, when a worker the bench still counts on has exited: no point waiting for it. */
function assertAlive(ws: Array<Worker | undefined>): void {
  for (const w of ws) {
    if (w && (w.child.exitCode !== null || w.child.signalCode !== null)) {
      throw new Error(`bench scale: worker ${w.child.pid} exited (${w.child.exitCode ?? w.child.signalCode}):\n${w.err().slice(-2000)}`);
    }
  }
}

/** SIGTERM (its runs go back to the queue), then SIGKILL if it has not exited in time. */
async function stopWorker(w: Worker, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return;
  w.child.kill(signal);
  const t = setTimeout(() => w.child.kill("SIGKILL"), 60_000);
  await w.exited;
  clearTimeout(t);
}

/** Polls `fn` every `everyMs` until it returns a value; throws after `boundMs` (a liveness bound, not a target). */
async function until<T>(what: string, fn: () => Promise<T | null | undefined>, everyMs: number, boundMs: number, detail: () => string = () => ""): Promise<T> {
  const t0 = performance.now();
  for (;;) {
    const v = await fn();
    if (v !== null && v !== undefined) return v;
    if (performance.now() - t0 > boundMs) throw new Error(`bench scale: ${what} did not happen within ${boundMs / 1000} s${detail()}`);
    await sleep(everyMs);
  }
}

/**
 * CPU seconds (user + system, with the children it has waited for: its commands) a process has
 * used, from /proc; null where there is no /proc. Load from other processes does not inflate it.
 */
function cpuSeconds(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): utime, stime, cutime, cstime are 14–17.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(f[i]), 0);
    return ticks / CLOCK_TICKS;
  } catch {
    return null;
  }
}
// sysconf(_SC_CLK_TCK): 100 on Linux everywhere in practice.
const CLOCK_TICKS = 100;

const totalCpu = (ws: Worker[]) => {
  const xs = ws.map((w) => cpuSeconds(w.child.pid!));
  return xs.some((x) => x === null) ? null : xs.reduce((a, b) => a! + b!, 0)!;
};

function tempDir(label: string): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `ll-bench-scale-${label}-`)));
}

/** A fresh shared-workspace source for one run. */
function runWorkspace(root: string, i: number): string {
  const ws = path.join(root, `ws${i}`);
  fs.mkdirSync(ws, { recursive: true });
  fs.writeFileSync(path.join(ws, "README.md"), `run ${i}\n`);
  return ws;
}

const settingsFor = (trajectory: string) => ({ model: `scripted:${trajectory}`, retrieval: "lexical", approve: "deny" }) as never;

/**
 * `runs` runs of `steps` steps through `workers` worker processes on a fresh database: milliseconds
 * from the first submit to the last run done (ll_run_leases polled every 100 ms; the workers are
 * started, and have said so, before the clock starts).
 */
export async function throughput(base: string, workers: number, runs: number, steps: number): Promise<{ ms: number; cpuPerRun: number | null }> {
  const db = await createTestDatabase(`scale_${workers}w`, base);
  const root = tempDir(`${workers}w`);
  const trajectory = writeTrajectory(root, steps);
  const state = await openPgState(db.url);
  const ws: Worker[] = [];
  try {
    for (let i = 0; i < workers; i++) ws.push(spawnWorker(db.url, path.join(root, `w${i}`), ["--concurrency", "1", "--poll-seconds", "1"]));
    await Promise.all(ws.map((w) => w.started));
    const cpu0 = totalCpu(ws);
    const sources = Array.from({ length: runs }, (_, i) => runWorkspace(root, i));
    const boss = await startQueue(db.url);
    const t0 = performance.now();
    try {
      for (let i = 0; i < runs; i++) {
        await submitRun(state.pool, boss, {
          thread: `S${i}`,
          task: "steps",
          source: { kind: "workspace", path: sources[i]! },
          settings: settingsFor(trajectory),
        });
      }
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
    await until(
      `${runs} runs done by ${workers} worker(s)`,
      async () => {
        assertAlive(ws);
        const r = await state.pool.query<{ state: string; n: number }>("SELECT state, COUNT(*)::int AS n FROM ll_run_leases GROUP BY state");
        const by = Object.fromEntries(r.rows.map((x) => [x.state, x.n]));
        if (by.failed || by.paused) {
          const notes = await state.pool.query("SELECT thread_id, state, note FROM ll_run_leases WHERE state IN ('failed', 'paused')");
          throw new Error(`bench scale: a run did not finish: ${JSON.stringify(notes.rows[0])}`);
        }
        return by.done === runs ? true : null;
      },
      100,
      600_000,
      () => `; worker stderr:\n${ws.map((w) => w.err().slice(-1500)).join("\n")}`,
    );
    const ms = performance.now() - t0;
    const cpu1 = totalCpu(ws);
    // A run "done" may have ended failed or out of script: only finished runs count.
    const unfinished = await state.pool.query("SELECT thread_id, note FROM ll_run_leases WHERE note NOT LIKE 'finished%'");
    if (unfinished.rowCount) throw new Error(`bench scale: run ${unfinished.rows[0].thread_id} did not finish: ${unfinished.rows[0].note}`);
    return { ms, cpuPerRun: cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) / runs };
  } finally {
    await Promise.all(ws.map((w) => stopWorker(w)));
    await state.close();
    await db.drop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/**
 * One takeover: worker A takes a long run; worker B starts and idles; once A has recorded a few
 * actions it is SIGKILLed. Milliseconds from the kill to B holding the run's lease, and to the
 * first ledger event of the run after the kill (B's: A is dead), both polled every 50 ms.
 */
export async function takeover(base: string, leaseSeconds: number, pollSeconds: number): Promise<{ lease: number; event: number; takeovers: number }> {
  const db = await createTestDatabase(`scale_takeover`, base);
  const root = tempDir("takeover");
  // Long enough that A cannot finish before B has started, and B not before the figures are in.
  const trajectory = writeTrajectory(root, 400);
  const state = await openPgState(db.url);
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  const args = ["--concurrency", "1", "--lease-seconds", String(leaseSeconds), "--poll-seconds", String(pollSeconds)];
  let a: Worker | undefined;
  let b: Worker | undefined;
  try {
    a = spawnWorker(db.url, path.join(root, "a"), args);
    await a.started;
    const boss = await startQueue(db.url);
    try {
      await submitRun(state.pool, boss, {
        thread: "T",
        task: "steps",
        source: { kind: "workspace", path: runWorkspace(root, 0) },
        settings: settingsFor(trajectory),
      });
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
    const heldBy = async (pid: number) =>
      (await c.query("SELECT 1 FROM ll_run_leases WHERE thread_id = 'T' AND state = 'held' AND worker LIKE $1", [`%:${pid}:%`])).rowCount || null;
    const actions = async () => Number((await c.query("SELECT COUNT(*) AS n FROM ll_events WHERE thread_id = 'T' AND type = 'agent_action'")).rows[0].n);
    const errs = () => `; stderr:\n${[a, b].map((w) => w?.err().slice(-1500) ?? "").join("\n")}`;
    await until("worker A taking the run", () => heldBy(a!.child.pid!), 100, 120_000, errs);
    b = spawnWorker(db.url, path.join(root, "b"), args);
    await b.started;
    await until(
      "worker A recording 3 actions",
      async () => {
        assertAlive([a, b]);
        return (await actions()) >= 3 ? true : null;
      },
      100,
      120_000,
      errs,
    );

    const killedAt = new Date().toISOString();
    const t0 = performance.now();
    a.child.kill("SIGKILL");
    await a.exited;
    // A is dead, but a commit it had sent may still land: B's events are those after this seq that
    // were also made after the kill (an event's ts is its writer's clock, this machine's).
    const before = Number((await c.query("SELECT COALESCE(MAX(seq), 0) AS s FROM ll_events WHERE thread_id = 'T'")).rows[0].s);
    let lease: number | undefined;
    let event: number | undefined;
    await until(
      "the takeover",
      async () => {
        assertAlive([b]);
        if (lease === undefined && (await heldBy(b!.child.pid!))) lease = performance.now() - t0;
        if (
          event === undefined &&
          (await c.query("SELECT 1 FROM ll_events WHERE thread_id = 'T' AND seq > $1 AND ts > $2 LIMIT 1", [before, killedAt])).rowCount
        )
          event = performance.now() - t0;
        return lease !== undefined && event !== undefined ? true : null;
      },
      50,
      Math.max(120_000, leaseSeconds * 4000),
      errs,
    );
    const takeovers = Number((await c.query("SELECT takeovers FROM ll_run_leases WHERE thread_id = 'T'")).rows[0].takeovers);
    return { lease: lease!, event: event!, takeovers };
  } finally {
    if (a) await stopWorker(a, "SIGKILL");
    if (b) await stopWorker(b);
    await c.end();
    await state.close();
    await db.drop();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

export async function benchScale(): Promise<BenchResult[]> {
  const base = benchPgUrl("scale figures");
  if (!base) return [];
  ensureBuilt();
  const runs = env("BENCH_SCALE_RUNS", 12);
  const steps = env("BENCH_SCALE_STEPS", 10);
  const counts = (process.env.BENCH_SCALE_WORKERS ?? "1,2,4").split(",").map(Number);
  const reps = env("BENCH_SCALE_REPS", 3);
  const leaseSeconds = env("BENCH_SCALE_LEASE", 3);
  const pollSeconds = 1;
  const cores = os.availableParallelism();
  console.log(
    `\nbench scale: ${cores} core(s) on this machine (os.availableParallelism), load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" / ")} (1/5/15 min) at the start; ` +
      `the workers, this process and PostgreSQL share them, so ${counts.at(-1)} workers cannot run more than ${cores} at once`,
  );

  const rows: BenchResult[] = [];
  const perMin: Record<number, number> = {};
  const cpu: number[] = [];
  for (const n of counts) {
    const { ms, cpuPerRun } = await throughput(base, n, runs, steps);
    perMin[n] = (runs * 60_000) / ms;
    if (cpuPerRun !== null) cpu.push(cpuPerRun);
    const one = perMin[counts[0]!];
    rows.push({
      name: `${n} worker(s): ${runs} runs of ${steps} steps, first submit to last done (${(ms / 1000).toFixed(1)} s)`,
      value: perMin[n]!,
      unit: "runs/min",
      ...(n !== counts[0] ? { baseline: one, baselineName: `${counts[0]} worker(s)` } : {}),
    });
    if (cpuPerRun !== null) rows.push({ name: `  CPU of the ${n} worker process(es) per run (user + sys, with their commands)`, value: cpuPerRun, unit: "s" });
  }
  if (cpu.length) {
    // What the workers alone could do with every core to themselves (PostgreSQL's own CPU aside).
    rows.push({ name: `CPU-bound ceiling: ${cores} cores / median worker CPU per run`, value: (cores * 60) / median(cpu), unit: "runs/min" });
  }
  printTable(`runs per minute (built bin, --concurrency 1 each, --retrieval lexical, ${cores} cores; the ratio is the speed-up)`, rows);

  const stateRows = await benchState();

  const lease: number[] = [];
  const event: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = await takeover(base, leaseSeconds, pollSeconds);
    if (t.takeovers !== 1) throw new Error(`bench scale: the run was taken over ${t.takeovers} times, expected 1`);
    lease.push(t.lease);
    event.push(t.event);
  }
  const fmt = (xs: number[]) => xs.map((x) => (x / 1000).toFixed(2)).join(", ");
  // Expected: the lease expires L - u after the kill (u ∈ [0, L/3): the holder renews every L/3),
  // the next reaper tick hands the run over within L/3 (mean L overall), and the idle worker's
  // next poll takes it within P; what remains (acquire, materialise, open the runtime, resume) is
  // the same whatever the lease.
  const expectedLease = leaseSeconds * 1000 + (pollSeconds * 1000) / 2;
  const overhead = median(event) - expectedLease;
  const dflt = { lease: 30, poll: 2 };
  const dfltExpected = dflt.lease * 1000 + (dflt.poll * 1000) / 2 + overhead;
  const takeoverRows: BenchResult[] = [
    {
      name: `kill → run's lease re-acquired by the idle worker, p50 of ${reps} (${fmt(lease)} s)`,
      value: median(lease) / 1000,
      unit: "s",
      baseline: expectedLease / 1000,
      baselineName: "lease + poll/2",
    },
    {
      name: `kill → first new ledger event of the run, p50 of ${reps} (${fmt(event)} s)`,
      value: median(event) / 1000,
      unit: "s",
      baseline: expectedLease / 1000,
      baselineName: "lease + poll/2",
    },
    {
      name: `  derived for the defaults, lease 30 s, poll 2 s (range ${((dflt.lease * 2) / 3 + overhead / 1000).toFixed(0)}–${((dflt.lease * 4) / 3 + dflt.poll + overhead / 1000).toFixed(0)} s)`,
      value: dfltExpected / 1000,
      unit: "s",
    },
  ];
  // The defaults measured too (a single takeover costs ~35 s, so few of them): where in that range
  // one lands depends on when the dead worker last renewed and when the reaper ticks.
  const dfltReps = env("BENCH_SCALE_DEFAULT_REPS", 1);
  if (dfltReps > 0) {
    const dl: number[] = [];
    const de: number[] = [];
    for (let i = 0; i < dfltReps; i++) {
      const t = await takeover(base, dflt.lease, dflt.poll);
      if (t.takeovers !== 1) throw new Error(`bench scale: the run was taken over ${t.takeovers} times, expected 1`);
      dl.push(t.lease);
      de.push(t.event);
    }
    takeoverRows.push(
      {
        name: `  measured with the defaults: kill → lease re-acquired, p50 of ${dfltReps} (${fmt(dl)} s)`,
        value: median(dl) / 1000,
        unit: "s",
        baseline: dfltExpected / 1000,
        baselineName: "derived",
      },
      {
        name: `  measured with the defaults: kill → first new ledger event, p50 of ${dfltReps} (${fmt(de)} s)`,
        value: median(de) / 1000,
        unit: "s",
        baseline: dfltExpected / 1000,
        baselineName: "derived",
      },
    );
  }
  printTable(
    `takeover of a SIGKILLed worker's run (--lease-seconds ${leaseSeconds}: reaper tick ${Math.max(0.5, leaseSeconds / 3).toFixed(1)} s, --poll-seconds ${pollSeconds})`,
    takeoverRows,
  );
  return [...rows, ...stateRows, ...takeoverRows];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await benchScale();
