import { expect, it } from "vitest";
import pg from "pg";
import { QUEUE_SCHEMA, RUN_QUEUE, startQueue } from "../../src/queue/run-queue.js";
import { createTestDatabase, describePg } from "../helpers/postgres.js";

// Workers started together on a new database (a deployment scaled to N replicas, `bench scale`)
// all install the queue at once. pg-boss's own install is serialised by its advisory lock, but
// its create_queue is not: two processes creating the same queue deadlocked, and a worker died on
// start with "deadlock detected" (seen by `bench scale` starting 4 workers on a fresh database).
describePg("starting the queue", () => {
  it("several processes starting it at once on a new database all start, with one run queue", async () => {
    for (let round = 0; round < 16; round++) {
      const db = await createTestDatabase(`queue_start_${round}`);
      try {
        const started = await Promise.allSettled(
          Array.from({ length: 6 }, async () => {
            const boss = await startQueue(db.url);
            await boss.stop({ graceful: false, wait: true });
          }),
        );
        const failures = started.filter((s): s is PromiseRejectedResult => s.status === "rejected").map((s) => String(s.reason?.message ?? s.reason));
        expect(failures, `round ${round}`).toEqual([]);
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          const q = await c.query(`SELECT name FROM ${QUEUE_SCHEMA}.queue`);
          expect(q.rows.map((r) => r.name)).toEqual([RUN_QUEUE]);
        } finally {
          await c.end();
        }
      } finally {
        await db.drop();
      }
    }
  });
});
