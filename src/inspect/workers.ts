import type { WorkerRow } from "../queue/fleet.js";

// The state's client loads on the first call: the package root re-exports listWorkers, and a
// script on SQLite should not pay for pg at import.

export type { WorkerRow };

/** The fleet of a PostgreSQL state: live workers, and those that stopped or died within `recentSeconds`. */
export async function listWorkers(url: string, opts: { recentSeconds?: number } = {}): Promise<WorkerRow[]> {
  const { openStateAdmin } = await import("../state-admin/open-state-admin.js");
  return (await openStateAdmin({ state: url })).workers(opts);
}
