import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import pg from "pg";
import { jsonLines } from "../helpers/cli.js";
import { clusterSkipReason, startCluster, type PgCluster } from "../helpers/pg-cluster.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { openPgState } from "../../src/ledger/pg-db.js";
import { startQueue, submitRun } from "../../src/queue/run-queue.js";
import { checkRunLedger, exitOf, spawnWorker, until, writeTrajectory, type WorkerProc } from "./queue-fixtures.js";

afterAll(() => cleanupTemp());

const RUNS = 12;
// Runs handed back while the database was away wait 1 s, not the default 5, once it is back:
// what is asserted (every run finished once) does not depend on the wait, only the file's time does.
const FAST_RETRY = ["--retry-delay-seconds", "1"];
const STEPS = 10;
const skip = clusterSkipReason();
const suite = skip ? describe.skip : describe;

/** 12 runs on shared workspaces, submitted to `url`; returns each run's workspace. */
async function submitAll(url: string, scratch: string, prefix: string): Promise<string[]> {
  const model = `scripted:${writeTrajectory(scratch, STEPS)}`;
  const state = await openPgState(url);
  const boss = await startQueue(url);
  const workspaces: string[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const ws = tempWorkspace(undefined, { "README.md": "run\n" });
      workspaces.push(ws);
      await submitRun(state.pool, boss, {
        thread: `${prefix}${i}`,
        task: "steps",
        source: { kind: "workspace", path: ws },
        settings: { model, retrieval: "lexical", approve: "deny", sandbox: "none" } as never,
      });
    }
  } finally {
    await boss.stop({ graceful: false, wait: true });
    await state.close();
  }
  return workspaces;
}

/** Waits until at least `n` runs are held by a worker with `actions` or more actions recorded. */
async function runsMidway(url: string, n: number, actions: number): Promise<void> {
  await until(async () => {
    const c = new pg.Client({ connectionString: url });
    try {
      await c.connect();
      const r = await c.query(
        `SELECT COUNT(*)::int AS n FROM ll_run_leases l WHERE l.state = 'held'
           AND (SELECT COUNT(*) FROM ll_events e WHERE e.thread_id = l.thread_id AND e.type = 'agent_action') >= $1`,
        [actions],
      );
      return r.rows[0].n >= n;
    } catch {
      return false;
    } finally {
      await c.end().catch(() => {});
    }
  }, 200);
}

/**
 * What every fault must leave: each worker exited 0 on its own (idle), never through the
 * unhandled-rejection net; every run finished, its ledger gap-free, each decision one action with
 * exactly one feedback, and no command run twice (each appends its own key to counter.txt).
 */
async function expectAllFinishedOnce(
  url: string,
  workers: WorkerProc[],
  workspaces: string[],
  prefix: string,
): Promise<{ pauses: number; handedBack: number }> {
  for (const w of workers) expect(await exitOf(w, 600_000), w.err().slice(-3000)).toEqual({ code: 0, signal: null });
  for (const w of workers) expect(w.err()).not.toMatch(/unhandled/);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const leases = (await c.query("SELECT thread_id, state, note FROM ll_run_leases ORDER BY thread_id")).rows as Array<{
      thread_id: string;
      state: string;
      note: string;
    }>;
    expect(
      leases.filter((l) => l.state !== "done"),
      JSON.stringify(leases),
    ).toEqual([]);
    expect(leases).toHaveLength(RUNS);
    // The note of a run's end says how it ended: finished, not failed.
    for (const l of leases) expect(l.note, l.thread_id).toMatch(/^finished after \d+ step\(s\) on /);
    for (let i = 0; i < RUNS; i++) {
      const thread = `${prefix}${i}`;
      await checkRunLedger(c, thread, STEPS);
      const counter = fs.readFileSync(path.join(workspaces[i]!, "counter.txt"), "utf8").trim().split("\n");
      expect(new Set(counter).size, `${thread}: ${counter.join(",")}`).toBe(counter.length);
    }
  } finally {
    await c.end();
  }
  const errs = workers.map((w) => w.err()).join("\n");
  const handedBack = workers
    .flatMap((w) => jsonLines<{ outcome: string; detail?: string }>(w.out()))
    .filter((o) => o.outcome === "handed_over" && /state database unavailable/.test(o.detail ?? "")).length;
  return { pauses: errs.match(/the state database is unavailable/g)?.length ?? 0, handedBack };
}

suite(`workers through database faults${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let cluster: PgCluster | undefined;
  afterAll(() => cluster?.destroy());

  it("3 workers, 12 runs: the database restarted, then stopped for 20 s; every run finishes once, no worker exits", async () => {
    cluster = await startCluster();
    const scratch = tempWorkspace();
    const workspaces = await submitAll(cluster.url, scratch, "R");
    const workers = [0, 1, 2].map((i) => spawnWorker(cluster!.url, path.join(scratch, `w${i}`), ["--concurrency", "2", ...FAST_RETRY]));
    try {
      await runsMidway(cluster.url, 3, 3);
      cluster.restart();
      await runsMidway(cluster.url, 3, 6);
      cluster.stop();
      await new Promise((r) => setTimeout(r, 20_000));
      cluster.start();
      const r = await expectAllFinishedOnce(cluster.url, workers, workspaces, "R");
      console.error(`faults: restart + 20 s stop: ${r.pauses} pause line(s), ${r.handedBack} run(s) handed back for the database`);
      expect(r.pauses).toBeGreaterThanOrEqual(1);
    } finally {
      for (const w of workers) w.child.kill("SIGKILL");
      cluster.destroy();
      cluster = undefined;
    }
  }, 900_000);

  it("3 workers, 12 runs: every connection taken (53300) for 15 s; no run is failed for it, every run finishes once", async () => {
    cluster = await startCluster({ maxConnections: 60 });
    const scratch = tempWorkspace();
    const workspaces = await submitAll(cluster.url, scratch, "C");
    const workers = [0, 1, 2].map((i) => spawnWorker(cluster!.url, path.join(scratch, `w${i}`), ["--concurrency", "2", ...FAST_RETRY]));
    const hog: pg.Client[] = [];
    let refusals = 0;
    try {
      await runsMidway(cluster.url, 3, 3);
      // Take every free slot, then drop the workers' own connections and take those slots too, for 15 s.
      const grab = async () => {
        for (;;) {
          const c = new pg.Client({ connectionString: cluster!.url });
          c.on("error", () => {});
          try {
            await c.connect();
            hog.push(c);
          } catch (err) {
            expect((err as { code?: string }).code).toBe("53300");
            refusals++;
            return;
          }
        }
      };
      await grab();
      await hog[0]!.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> ALL($1::int[])", [
        (await Promise.all(hog.map((c) => c.query("SELECT pg_backend_pid() AS p")))).map((r) => r.rows[0].p as number),
      ]);
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline) {
        await grab();
        await new Promise((r) => setTimeout(r, 100));
      }
      await Promise.all(hog.splice(0).map((c) => c.end().catch(() => {})));
      const r = await expectAllFinishedOnce(cluster.url, workers, workspaces, "C");
      console.error(`faults: ${refusals} refused hog connection(s); ${r.pauses} pause line(s), ${r.handedBack} run(s) handed back for the database`);
      expect(r.pauses).toBeGreaterThanOrEqual(1);
    } finally {
      await Promise.all(hog.map((c) => c.end().catch(() => {})));
      for (const w of workers) w.child.kill("SIGKILL");
      cluster.destroy();
      cluster = undefined;
    }
  }, 900_000);
});
