import { stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import type { StateAdmin } from "./state-admin.js";

/**
 * The state `args` point at (--state / $LEDGERLOOP_STATE_URL, else the workspace's SQLite file), for
 * administration. Each adapter loads on use, so a command on a SQLite state never loads pg.
 */
export async function openStateAdmin(args: WorkspaceArgs): Promise<StateAdmin> {
  const url = stateUrlOf(args);
  if (url) return (await import("./pg-state-admin.js")).pgStateAdmin(url, args);
  return (await import("./sqlite-state-admin.js")).sqliteStateAdmin(args);
}
