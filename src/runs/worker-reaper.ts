import type PgBoss from "pg-boss";
import type pg from "pg";
import { expiredRunLeases, requeueRun } from "../ledger/pg-run-leases.js";
import { enqueueOn, RUN_QUEUE } from "../queue/run-queue.js";

// A worker's reaper: hands over runs whose holder stopped renewing its lease (a dead worker, or
// one cut off from the database), each with a new job in the transaction that queues it again.

/** Output of a dead holder's job, as the reaper fails it: doctor counts these as takeovers, not failures. */
export interface TakeoverOutput {
  takeover: true;
  reason: string;
}

/** Queues again every run whose lease expired; returns how many it handed over. */
export async function reapExpiredRuns(pool: pg.Pool, boss: PgBoss, reaper: string, say: (line: string) => void): Promise<number> {
  let n = 0;
  for (const thread of await expiredRunLeases(pool)) {
    const client = await pool.connect();
    try {
      const r = await requeueRun(client, {
        thread,
        guard: "expired",
        note: `handed over by ${reaper}: the lease of its holder expired`,
        enqueue: (c, o) => enqueueOn(boss, c, { thread }, o),
      });
      if (!r) continue;
      n++;
      say(`${thread}: the lease of ${r.previous.worker} expired; queued again (job ${r.jobId})`);
      // The dead holder's job, for the record: it will never complete.
      if (r.previous.jobId) {
        const output: TakeoverOutput = {
          takeover: true,
          reason: `worker ${r.previous.worker} stopped renewing its lease; the run was queued again as job ${r.jobId}`,
        };
        await boss.fail(RUN_QUEUE, r.previous.jobId, output).catch(() => {});
      }
    } finally {
      client.release();
    }
  }
  return n;
}
