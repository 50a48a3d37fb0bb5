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
  | {
      installed: true;
      version: number;
      queued: number;
      active: number;
      /** Jobs that failed: runs that could not start or ended in error. */
      failed: number;
      /** Jobs of holders that died, failed by a reaper when it queued their run again: normal operation, not failures. */
      takeovers: number;
      completed: number;
      /** The fleet (null on a database whose workers predate the fleet table). */
      fleet: { live: number; dead: number; stranded: number } | null;
    };

/** A failed job that a reaper failed for a dead holder (worker-reaper.ts; older workers said only the reason). */
const TAKEOVER_JOB = `(output ? 'takeover' OR output->>'reason' LIKE '%stopped renewing its lease%')`;

/**
 * Whether the queue is installed and, if so, pg-boss's schema version, the jobs of the run queue
 * by state (queued = created or waiting for a retry; takeovers apart from failures) and the fleet:
 * live workers, workers that died in the last hour, and runs held under an expired lease (stranded
 * while no live worker's reaper hands them over). Throws what PostgreSQL says when the tables exist
 * but cannot be read.
 */
export async function queueStatus(pool: pg.Pool | pg.ClientBase, schema = QUEUE_SCHEMA, queue = RUN_QUEUE): Promise<QueueStatus> {
  const has = await pool.query<{ version: string | null; job: string | null; workers: string | null }>(
    "SELECT to_regclass($1) AS version, to_regclass($2) AS job, to_regclass('ll_workers') AS workers",
    [`${schema}.version`, `${schema}.job`],
  );
  if (!has.rows[0]?.version || !has.rows[0]?.job) return { installed: false };
  const version = Number((await pool.query<{ version: number }>(`SELECT version FROM "${schema}".version LIMIT 1`)).rows[0]?.version ?? 0);
  const counts = await pool.query<{ state: string; n: number }>(
    `SELECT CASE WHEN state = 'failed' AND ${TAKEOVER_JOB} THEN 'takeover' ELSE state::text END AS state, count(*)::int AS n FROM "${schema}".job WHERE name = $1 GROUP BY 1`,
    [queue],
  );
  const by = Object.fromEntries(counts.rows.map((r) => [r.state, r.n])) as Record<string, number>;
  let fleet: { live: number; dead: number; stranded: number } | null = null;
  if (has.rows[0]?.workers) {
    const f = await pool.query<{ live: number; dead: number; stranded: number }>(
      `SELECT (SELECT count(*)::int FROM ll_workers WHERE stopped_at IS NULL AND expires_at >= now()) AS live,
              (SELECT count(*)::int FROM ll_workers WHERE stopped_at IS NULL AND expires_at < now() AND heartbeat_at >= now() - interval '1 hour') AS dead,
              (SELECT count(*)::int FROM ll_run_leases WHERE state = 'held' AND expires_at < now()) AS stranded`,
    );
    fleet = f.rows[0] ?? { live: 0, dead: 0, stranded: 0 };
  }
  return {
    installed: true,
    version,
    queued: (by.created ?? 0) + (by.retry ?? 0),
    active: by.active ?? 0,
    failed: by.failed ?? 0,
    takeovers: by.takeover ?? 0,
    completed: by.completed ?? 0,
    fleet,
  };
}

/** Whether work waits that no worker will do: runs queued or stranded, and no live worker. */
export function fleetIdleWithWork(s: QueueStatus): boolean {
  return s.installed && s.fleet !== null && s.fleet.live === 0 && (s.queued > 0 || s.fleet.stranded > 0);
}

/** One line for doctor. */
export function describeQueue(s: QueueStatus, queue = RUN_QUEUE): string {
  if (!s.installed) return "not installed yet (created by the first `ledgerloop worker`)";
  const jobs = `${s.queued} queued, ${s.active} active, ${s.failed} failed, ${s.takeovers} taken over (a dead worker's run continued by another)`;
  const f = s.fleet;
  const fleet = !f
    ? ""
    : `; workers: ${f.live} live, ${f.dead} dead in the last hour` +
      (f.stranded ? `; ${f.stranded} run(s) held under an expired lease${f.live ? " (a live worker's reaper hands them over)" : ""}` : "") +
      (fleetIdleWithWork(s) ? "; no live worker will take this work: start `ledgerloop worker --state …`" : "");
  return `pg-boss schema ${QUEUE_SCHEMA} version ${s.version}; queue ${queue}: ${jobs}${fleet}`;
}
