import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { RunWorker } from "../../src/runs/worker.js";

afterAll(() => cleanupTemp());

describePg("a worker's stop, asked for more than once", () => {
  const db = useTestDatabase("stop");

  // The CLI's idle check runs every 500 ms and, under load, two checks can both find the worker idle
  // and both stop it. The second stop() returned at once, so the CLI went on to exit (2 s later)
  // while the first was still handing runs back: the worker stayed "running" in the fleet table
  // and was later listed as dead (fleet.test.ts's `workers --json` flake).
  it("every call resolves only once the worker is stopped and recorded as stopped", async () => {
    const w = new RunWorker(db.url, { concurrency: 2, dir: path.join(tempWorkspace(), "w"), leaseMs: 3_000, pollSeconds: 1, log: () => {} });
    await w.start();
    let firstDone = false;
    const first = w.stop().then(() => (firstDone = true));
    await w.stop();
    expect(firstDone, "the second stop() resolved while the first was still stopping the worker").toBe(true);
    const rows = await pgQuery<{ state: string }>(db.url, "SELECT state FROM ll_workers WHERE id = $1", [w.id]);
    expect(rows).toEqual([{ state: "stopped" }]);
    await first;
  });
});
