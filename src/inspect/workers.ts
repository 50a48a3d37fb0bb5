import type { WorkerRow } from "../queue/fleet.js";

// PostgreSQL's client loads on the first call: the package root re-exports listWorkers, and a
// script on SQLite should not pay for pg at import.

export type { WorkerRow };

/** The fleet of a PostgreSQL state: live workers, and those that stopped or died within `recentSeconds`. */
export async function listWorkers(url: string, opts: { recentSeconds?: number } = {}): Promise<WorkerRow[]> {
  // Read-only: listing the fleet never migrates or writes the database it looks at. A newer schema
  // is when an operator most needs the list (which workers are too old), so it is read all the same.
  const [{ openPgState }, { listFleetWorkers }] = await Promise.all([import("../ledger/pg-db.js"), import("../queue/fleet.js")]);
  const st = await openPgState(url, { migrate: false, readOnly: true, allowNewer: true, max: 1 });
  try {
    return await listFleetWorkers(st.pool, opts);
  } finally {
    await st.close();
  }
}
