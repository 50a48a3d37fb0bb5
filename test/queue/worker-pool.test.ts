import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import pg from "pg";
import { cliAsync } from "../helpers/cli.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { openPgState } from "../../src/ledger/pg-db.js";
import { startQueue, submitRun } from "../../src/queue/run-queue.js";
import { RunWorker, type JobOutcome } from "../../src/runs/worker.js";
import { until } from "./queue-fixtures.js";

afterAll(() => cleanupTemp());

const POOL_SIZE = 4;

/** A run of a few slow commands, so that the worker's three slots overlap. */
function slowTrajectory(dir: string): string {
  const decide: object[] = [1, 2, 3].map((k) => ({
    content: `step ${k}`,
    tool_calls: [{ name: "run_command", args: { command: `sleep 1 && echo s${k} >> slow.txt` } }],
  }));
  decide.push({ content: "done", tool_calls: [{ name: "finish", args: { summary: "slept" } }] });
  const plan = [{ content: "plan", tool_calls: [{ name: "update_plan", args: { subtasks: [{ id: "s", description: "sleep", status: "in_progress" }] } }] }];
  const file = path.join(dir, "slow.json");
  fs.writeFileSync(file, JSON.stringify({ plan, decide }));
  return file;
}

describePg("a worker holds one PostgreSQL pool", () => {
  const db = useTestDatabase("pool");

  // Before: the worker's own pool (up to 5), pg-boss's (3) and one more pool per run (up to 5
  // each), so three runs at once held 8 to 23 connections whatever the worker was told.
  it("three runs at once, the queue and the leases stay within --pool-size connections", async () => {
    const scratch = tempWorkspace();
    const model = `scripted:${slowTrajectory(scratch)}`;
    const state = await openPgState(db.url);
    const boss = await startQueue(db.url);
    for (const t of ["p1", "p2", "p3"]) {
      const ws = tempWorkspace(undefined, { "README.md": `${t}\n` });
      await submitRun(state.pool, boss, {
        thread: t,
        task: "sleep",
        source: { kind: "workspace", path: ws },
        settings: { model, retrieval: "lexical" } as never,
      });
    }
    await boss.stop({ graceful: false, wait: true });
    await state.close();

    const lines: string[] = [];
    const w = new RunWorker(db.url, {
      concurrency: 3,
      poolSize: POOL_SIZE,
      dir: path.join(scratch, "w"),
      leaseMs: 5_000,
      pollSeconds: 1,
      log: (l) => lines.push(l),
    });
    const watch = new pg.Client({ connectionString: db.url });
    await watch.connect();
    let peak = 0;
    let peakHeld = 0;
    let peakRows: unknown[] = [];
    // The submission's connections are closed, but their backends may take a moment to go.
    await until(async () => {
      const r = await watch.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
      );
      return r.rows[0].n === 0;
    }, 50);
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const r = await watch.query<{ conns: number; held: number }>(
          `SELECT (SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()) AS conns,
                  (SELECT count(*)::int FROM ll_run_leases WHERE state = 'held') AS held`,
        );
        if (r.rows[0]!.conns > peak) {
          peakRows = (
            await watch.query(
              "SELECT pid, application_name, backend_start, state, left(query, 60) AS q FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
            )
          ).rows;
        }
        peak = Math.max(peak, r.rows[0]!.conns);
        peakHeld = Math.max(peakHeld, r.rows[0]!.held);
        await new Promise((res) => setTimeout(res, 50));
      }
    })();
    try {
      await w.start();
      const done = await until(async () => {
        const r = await watch.query("SELECT count(*)::int AS n FROM ll_run_leases WHERE state = 'done'");
        return r.rows[0].n === 3;
      });
      expect(done).toBe(true);
    } finally {
      await w.stop();
      sampling = false;
      await sampler;
      await watch.end();
    }
    const outcomes: JobOutcome[] = w.outcomes;
    expect(outcomes.map((o) => [o.thread, o.outcome, o.status]).sort(), lines.join("\n")).toEqual([
      ["p1", "ran", "finished"],
      ["p2", "ran", "finished"],
      ["p3", "ran", "finished"],
    ]);
    // The three runs were held at once (the bound below is about concurrent runs, not one at a time)...
    expect(peakHeld).toBe(3);
    // ...and the whole process, pg-boss included, stayed within its one pool.
    expect(peak).toBeGreaterThanOrEqual(2);
    expect(peak, JSON.stringify(peakRows, null, 1)).toBeLessThanOrEqual(POOL_SIZE);
    expect(lines.join("\n")).toContain(`3 slot(s), ${POOL_SIZE} connection(s)`);
  });

  it("--pool-size takes a whole number of at least 2, and says which connections it sizes", async () => {
    for (const bad of ["1", "abc", "2.5", "0", "-3"]) {
      const r = await cliAsync(["worker", "--state", db.url, "--pool-size", bad]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.trim()).toBe(
        `ledgerloop: --pool-size must be a whole number of at least 2 (the worker's PostgreSQL connections, shared by its queue and runs), got "${bad}"`,
      );
    }
    // A valid size reaches the worker (its start line), and one below the slots is warned about.
    const ok = await cliAsync(["worker", "--state", db.url, "-c", "2", "--pool-size", "2", "--exit-when-idle", "1", "--dir", path.join(tempWorkspace(), "w")]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toContain("warning: --pool-size 2 is less than one connection per run plus one (3): runs will wait for connections");
    expect(ok.stderr).toMatch(/started: 2 slot\(s\), 2 connection\(s\)/);
  });
});
