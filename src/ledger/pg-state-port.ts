import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { openPgState, type OpenPgStateOptions, type PgState } from "./pg-db.js";
import { RedactingPostgresSaver } from "./pg-checkpoints.js";
import { PgLedger } from "./pg-ledger.js";
import { PgRunRegistry } from "./pg-runs.js";
import { PgStore } from "./pg-store.js";
import type { Redactor } from "../secrets.js";
import { PgRevisionReplica } from "./pg-revisions.js";
import { refuseIfQueued } from "./pg-run-leases.js";
import type { StatePort } from "./state-port.js";

// The PostgreSQL adapter of the state port: every part on one pool. Loaded on use (state-port.ts), so a
// SQLite run never loads pg.

/**
 * Opens a PostgreSQL state that runs write: ledgerloop's migrations, then LangGraph's checkpoint
 * tables, under the one migration lock (PostgresSaver.setup()'s CREATE TABLE IF NOT EXISTS races
 * when several workers start at once). A worker opens its pool with this once and hands it to each
 * run's runtime.
 */
export function openRunState(url: string, opts: Omit<OpenPgStateOptions, "setup" | "migrate" | "readOnly" | "allowNewer"> = {}): Promise<PgState> {
  return openPgState(url, {
    ...opts,
    setup: (pool) => new PostgresSaver(pool, undefined, { schema: opts.schema ?? "public" }).setup(),
  });
}

/**
 * The ports of one run on an open PostgreSQL state: the official PostgresSaver behind the same
 * redaction as the SQLite saver, the ledger (fenced by a queue worker's holding of the run), the
 * lessons store, the run registry and the replica of the workspace revisions. `owned`: close() ends
 * the pool; a pool shared by a worker's runs is the worker's to end.
 */
export function postgresStatePort(state: PgState, redactor: Redactor, opts: { fence?: { thread: string; token: string }; owned: boolean }): StatePort {
  return {
    backend: "postgres",
    location: state.location,
    pg: state,
    ledger: new PgLedger(state.pool, { redactor, fence: opts.fence }),
    runs: new PgRunRegistry(state.pool),
    checkpointer: new RedactingPostgresSaver(state.pool, redactor, { schema: state.schema }),
    store: new PgStore(state.pool, redactor),
    revisionReplica: new PgRevisionReplica(state.pool),
    reconnects: true,
    answersAgain: (ms, signal) => answersAgain(state, ms, signal),
    refuseIfQueued: (thread, command) => refuseIfQueued(state.pool, thread, command),
    close: async () => {
      if (opts.owned) await state.close();
    },
  };
}

/** True once `SELECT 1` succeeds on the state's pool (tried every second), false after `ms` or a stop. */
async function answersAgain(state: PgState, ms: number, signal?: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (signal?.aborted) return false;
    try {
      await state.pool.query("SELECT 1");
      return true;
    } catch {
      // Still away: refused, terminated or unreachable.
    }
    if (Date.now() + 1000 > deadline) return false;
    await new Promise((r) => setTimeout(r, 1000));
  }
}
