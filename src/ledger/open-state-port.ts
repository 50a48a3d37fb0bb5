import type { Redactor } from "../secrets.js";
import { sqliteStatePort } from "./sqlite-state-port.js";
import type { OpenedState, StateTarget } from "./state-port.js";

/**
 * Chooses the state's adapter: the shared PostgreSQL state, else one opened on `url` (a wrong URL,
 * a refused password or a newer schema fail here, in one line), else the workspace's SQLite database.
 */
export async function openStatePort(target: StateTarget, redactor: Redactor): Promise<OpenedState> {
  if (target.shared || target.url) {
    const { openRunState, postgresStatePort } = await import("./pg-state-port.js");
    const owned = !target.shared;
    const state = target.shared ?? (await openRunState(target.url!));
    const port = postgresStatePort(state, redactor, { fence: target.fence, owned });
    return { backend: "postgres", attach: () => port, close: () => port.close() };
  }
  return { backend: "sqlite", attach: (db, dbPath) => sqliteStatePort(db, redactor, dbPath), close: async () => {} };
}
