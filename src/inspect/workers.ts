import { openPgState } from "../ledger/pg-db.js";
import { listFleetWorkers, type WorkerRow } from "../queue/fleet.js";

export type { WorkerRow };

/** The fleet of a PostgreSQL state: live workers, and those that stopped or died within `recentSeconds`. */
export async function listWorkers(url: string, opts: { recentSeconds?: number } = {}): Promise<WorkerRow[]> {
  // Read-only: listing the fleet never migrates or writes the database it looks at. A newer schema
  // is when an operator most needs the list (which workers are too old), so it is read all the same.
  const st = await openPgState(url, { migrate: false, readOnly: true, allowNewer: true, max: 1 });
  try {
    return await listFleetWorkers(st.pool, opts);
  } finally {
    await st.close();
  }
}
