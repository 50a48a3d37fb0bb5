import type pg from "pg";

/**
 * The run queue as doctor sees it (the queue itself: run-queue.ts). The queue is pg-boss's, installed in its own schema by the first
 * `ledgerloop worker`; doctor reads pg-boss's tables with plain SQL instead of loading the worker,
 * so it can report on a queue that does not exist yet, or on one of another ledgerloop version.
 */

/** The PostgreSQL schema pg-boss keeps its tables in (the worker passes it as pg-boss's `schema`). */
export const QUEUE_SCHEMA = "ll_queue";
/** The queue the runs are submitted to. */
export const RUN_QUEUE = "ledgerloop-runs";

export type QueueStatus =
  | { installed: false }
  | { installed: true; version: number; queued: number; active: number; failed: number; completed: number };

/**
 * Whether the queue is installed and, if so, pg-boss's schema version and the jobs of the run queue
 * by state (queued = created or waiting for a retry). Throws what PostgreSQL says when the tables
 * exist but cannot be read.
 */
export async function queueStatus(pool: pg.Pool | pg.ClientBase, schema = QUEUE_SCHEMA, queue = RUN_QUEUE): Promise<QueueStatus> {
  const has = await pool.query<{ version: string | null; job: string | null }>("SELECT to_regclass($1) AS version, to_regclass($2) AS job", [`${schema}.version`, `${schema}.job`]);
  if (!has.rows[0]?.version || !has.rows[0]?.job) return { installed: false };
  const version = Number((await pool.query<{ version: number }>(`SELECT version FROM "${schema}".version LIMIT 1`)).rows[0]?.version ?? 0);
  const counts = await pool.query<{ state: string; n: number }>(`SELECT state::text AS state, count(*)::int AS n FROM "${schema}".job WHERE name = $1 GROUP BY state`, [queue]);
  const by = Object.fromEntries(counts.rows.map((r) => [r.state, r.n])) as Record<string, number>;
  return {
    installed: true,
    version,
    queued: (by.created ?? 0) + (by.retry ?? 0),
    active: by.active ?? 0,
    failed: by.failed ?? 0,
    completed: by.completed ?? 0,
  };
}

/** One line for doctor. */
export function describeQueue(s: QueueStatus, queue = RUN_QUEUE): string {
  if (!s.installed) return "not installed yet (created by the first `ledgerloop worker`)";
  return `pg-boss schema ${QUEUE_SCHEMA} version ${s.version}; queue ${queue}: ${s.queued} queued, ${s.active} active, ${s.failed} failed`;
}
