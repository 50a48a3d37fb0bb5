// Deleting one run whole from a PostgreSQL state: the same records as delete-run.ts deletes from
// SQLite (ledger events, PostgresSaver's checkpoints, blobs and writes, the run's own prompts, the
// registry row, the config fingerprint), plus its rows of the run queue, in one transaction. The
// guard on ll_events (migration 8) lets that transaction's deletes through for the one thread it
// names with set_config(…, true), which lasts until the transaction ends.
import type pg from "pg";
import { LESSONS_NS } from "../memory/lessons.js";
import { nsKey } from "../memory/store-common.js";
import type { RunFootprint } from "./delete-run.js";
import { inTransaction, tableExists } from "./pg-db.js";

type Q = Pick<pg.PoolClient, "query">;

const count = async (db: Q, table: string, sql: string, args: unknown[]): Promise<number> =>
  (await tableExists(db, table)) ? Number((await db.query<{ n: string }>(sql, args)).rows[0]?.n ?? 0) : 0;

/** Prompt refs of the thread's events that no event of another thread shares (a fork's copy shares them). */
async function ownPrompts(db: Q, thread: string): Promise<string[]> {
  if (!(await tableExists(db, "ll_blobs"))) return [];
  const r = await db.query<{ ref: string }>(
    `SELECT payload::jsonb ->> 'promptRef' AS ref FROM ll_events WHERE thread_id = $1 AND payload::jsonb ? 'promptRef'
     EXCEPT
     SELECT payload::jsonb ->> 'promptRef' FROM ll_events WHERE thread_id <> $1 AND payload::jsonb ? 'promptRef'`,
    [thread],
  );
  return r.rows.map((x) => x.ref);
}

/** The footprint, with the refs of the prompts only this run uses (one pass over the ledger for both). */
async function measure(db: Q, thread: string): Promise<{ footprint: RunFootprint; prompts: string[] }> {
  const prompts = (await tableExists(db, "ll_events")) ? await ownPrompts(db, thread) : [];
  const footprint = {
    thread,
    events: await count(db, "ll_events", "SELECT count(*) AS n FROM ll_events WHERE thread_id = $1", [thread]),
    checkpoints: await count(db, "checkpoints", "SELECT count(*) AS n FROM checkpoints WHERE thread_id = $1", [thread]),
    writes: await count(db, "checkpoint_writes", "SELECT count(*) AS n FROM checkpoint_writes WHERE thread_id = $1", [thread]),
    prompts: prompts.length,
    registered: (await count(db, "ll_runs", "SELECT count(*) AS n FROM ll_runs WHERE thread_id = $1", [thread])) > 0,
    lessons: await count(
      db,
      "ll_store",
      `SELECT count(*) AS n FROM ll_store l WHERE l.namespace = $1
         AND EXISTS (SELECT 1 FROM jsonb_array_elements(l.value::jsonb -> 'sources') s WHERE s ->> 'threadId' = $2)`,
      [nsKey(LESSONS_NS), thread],
    ),
  };
  return { footprint, prompts };
}

/** What deleting `thread` would remove from a PostgreSQL state; nothing is written. */
export async function pgRunFootprint(pool: pg.Pool, thread: string): Promise<RunFootprint> {
  return (await measure(pool, thread)).footprint;
}

/**
 * Deletes a run's records from a PostgreSQL state in one transaction (all or none), serialised with
 * the thread's appends by their advisory lock. The caller has checked that no machine runs it. The
 * workspace revisions only it named stay in the replica until `gc --state` sweeps them; lessons stay.
 */
export async function deletePgRunRecords(pool: pg.Pool, thread: string): Promise<RunFootprint> {
  return inTransaction(pool, async (c) => {
    // The same key PgLedger.append locks on: no event of the thread is appended meanwhile.
    await c.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", [thread]);
    const { footprint, prompts } = await measure(c, thread);
    if (await tableExists(c, "ll_events")) {
      await c.query("SELECT set_config('ledgerloop.deleting_thread', $1, true)", [thread]);
      // An attempt's key ends in /start/<action event id> (agent/nodes/act.ts); the greedy prefix takes the last one.
      await c.query(
        `DELETE FROM ll_action_starts WHERE action_id LIKE '%/start/%'
           AND regexp_replace(action_id, '^.*/start/', '') IN (SELECT id FROM ll_events WHERE thread_id = $1 AND type = 'agent_action')`,
        [thread],
      );
      await c.query("DELETE FROM ll_events WHERE thread_id = $1", [thread]);
      await c.query("SELECT set_config('ledgerloop.deleting_thread', '', true)");
      for (const t of ["ll_event_files", "ll_forks"]) await c.query(`DELETE FROM ${t} WHERE thread_id = $1`, [thread]);
      if (prompts.length) await c.query("DELETE FROM ll_blobs WHERE hash = ANY($1)", [prompts]);
    }
    for (const t of ["ll_thread_config", "ll_run_leases", "ll_submissions", "ll_runs", "checkpoint_writes", "checkpoint_blobs", "checkpoints"]) {
      if (await tableExists(c, t)) await c.query(`DELETE FROM ${t} WHERE thread_id = $1`, [thread]);
    }
    await c.query("INSERT INTO ll_deleted_runs (thread_id) VALUES ($1) ON CONFLICT (thread_id) DO UPDATE SET deleted_at = now()", [thread]);
    return footprint;
  });
}
