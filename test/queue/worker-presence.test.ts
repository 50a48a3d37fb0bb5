import type pg from "pg";
import { expect, it } from "vitest";
import { openPgState } from "../../src/ledger/pg-db.js";
import { listFleetWorkers } from "../../src/queue/fleet.js";
import { StateHealth } from "../../src/runs/state-health.js";
import { WorkerPresence } from "../../src/runs/worker-presence.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";

// A worker's row in the fleet table is renewed by a heartbeat on a timer and marked stopped on a
// graceful exit. A heartbeat still in flight when the worker stopped used to land after the stop and
// list the worker as running (or retiring) again: seen once in a loaded full run (fleet.test.ts).

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describePg("a worker's fleet row", () => {
  const db = useTestDatabase("presence");

  it("a worker stopped while its heartbeat is in flight stays stopped", async () => {
    const state = await openPgState(db.url);
    let inFlight = 0;
    // The real pool, with heartbeats that answer late: the one in flight when stop() is called.
    const slow = {
      query: async (text: string, values?: unknown[]) => {
        if (/SET heartbeat_at/.test(text)) {
          inFlight++;
          await sleep(800);
        }
        return state.pool.query(text, values);
      },
    } as unknown as pg.Pool;
    const presence = new WorkerPresence(() => slow, {
      id: "w-presence",
      slots: 1,
      ttlMs: 600,
      health: new StateHealth(
        async () => {},
        () => {},
      ),
      say: () => {},
      onNewerSchema: () => {},
    });
    try {
      await presence.start();
      while (inFlight === 0) await sleep(20);
      await presence.stop("done");
      // Whatever the timer had started has landed by now.
      await sleep(1200);
      const rows = await listFleetWorkers(state.pool);
      expect(rows.find((r) => r.id === "w-presence")).toMatchObject({ status: "stopped", note: "done" });
    } finally {
      await state.close();
    }
  }, 30_000);
});
