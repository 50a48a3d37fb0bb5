import { tableExists } from "../ledger/pg-db.js";
import { noteText, type Sql } from "../ledger/pg-run-leases.js";

// The fleet: one row per worker process in ll_workers (pg-db.ts, migration 10). A worker inserts
// its row when it starts, renews it every lease/3 (as it renews its runs' leases) and marks it
// stopped when it exits gracefully; a worker that was killed or cut off simply stops renewing, and
// is shown as dead once its row expires. Which runs a worker holds is read from ll_run_leases, so
// the list can never disagree with what the reaper sees.

/** What a worker says about itself. `retiring`: it saw a newer schema and takes no new jobs. */
export type WorkerState = "running" | "retiring" | "stopped";

export interface WorkerIdentity {
  id: string;
  host: string;
  pid: number;
  slots: number;
  version: string;
  schemaVersion: number;
}

/** A worker as `ledgerloop workers` lists it. `status` is derived: a running row past its expiry is dead. */
export interface WorkerRow extends WorkerIdentity {
  status: "live" | "retiring" | "dead" | "stopped";
  note: string | null;
  startedAt: string;
  heartbeatAt: string;
  /** Seconds since its last heartbeat, as the database's clock says. */
  silentSeconds: number;
  /** Runs it holds (ll_run_leases), with whether each lease is still renewed. */
  runs: Array<{ thread: string; leaseExpired: boolean }>;
}

/** Rows of stopped and dead workers are kept this long for `workers`, then removed by the next worker to start. */
const KEEP_GONE_HOURS = 24 * 7;

/** Registers (or re-registers) a worker as running, alive for `ttlMs`. */
export async function registerFleetWorker(db: Sql, w: WorkerIdentity, ttlMs: number): Promise<void> {
  await db.query(`DELETE FROM ll_workers WHERE heartbeat_at < now() - $1 * interval '1 hour' AND (stopped_at IS NOT NULL OR expires_at < now())`, [
    KEEP_GONE_HOURS,
  ]);
  await db.query(
    `INSERT INTO ll_workers (id, host, pid, slots, version, schema_version, state, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'running', now() + $7 * interval '1 millisecond')
     ON CONFLICT (id) DO UPDATE SET state = 'running', heartbeat_at = now(), expires_at = EXCLUDED.expires_at, stopped_at = NULL, note = NULL`,
    [w.id, w.host, w.pid, w.slots, w.version, w.schemaVersion, ttlMs],
  );
}

/**
 * Renews a worker's row and returns the database's schema version, so a running worker learns of a
 * migration by a newer ledgerloop within one heartbeat. A row removed meanwhile is inserted again
 * by the caller's next registration; here it only reports `registered: false`.
 */
export async function heartbeatFleetWorker(
  db: Sql,
  id: string,
  ttlMs: number,
  state: Exclude<WorkerState, "stopped">,
  note: string | null = null,
): Promise<{ schemaVersion: number; registered: boolean }> {
  const r = await db.query<{ v: number | null; n: string }>(
    `WITH up AS (
       UPDATE ll_workers SET heartbeat_at = now(), expires_at = now() + $2 * interval '1 millisecond', state = $3, note = COALESCE($4, note)
       WHERE id = $1 RETURNING 1)
     SELECT (SELECT MAX(version) FROM ll_schema_version) AS v, (SELECT COUNT(*) FROM up) AS n`,
    [id, ttlMs, state, note === null ? null : noteText(note)],
  );
  return { schemaVersion: Number(r.rows[0]?.v ?? 0), registered: Number(r.rows[0]?.n ?? 0) > 0 };
}

/** Marks a worker stopped (a graceful exit): it is listed as gone, not as dead. */
export async function stopFleetWorker(db: Sql, id: string, note: string): Promise<void> {
  await db.query("UPDATE ll_workers SET state = 'stopped', stopped_at = now(), note = $2 WHERE id = $1", [id, noteText(note)]);
}

interface Row {
  id: string;
  host: string;
  pid: number;
  slots: number;
  version: string;
  schema_version: number;
  state: WorkerState;
  note: string | null;
  started_at: Date;
  heartbeat_at: Date;
  expired: boolean;
  silent: number;
}

/**
 * Live workers, and those that stopped or died within `recentSeconds` (default an hour): live
 * first, then by last heartbeat. Empty on a database without the table (no worker of this version ran).
 */
export async function listFleetWorkers(db: Sql, opts: { recentSeconds?: number } = {}): Promise<WorkerRow[]> {
  if (!(await tableExists(db, "ll_workers"))) return [];
  const rows = (
    await db.query<Row>(
      `SELECT *, expires_at < now() AS expired, EXTRACT(EPOCH FROM now() - heartbeat_at)::float8 AS silent FROM ll_workers
       WHERE (stopped_at IS NULL AND expires_at >= now()) OR heartbeat_at >= now() - $1 * interval '1 second'
       ORDER BY (stopped_at IS NULL AND expires_at >= now()) DESC, heartbeat_at DESC`,
      [opts.recentSeconds ?? 3600],
    )
  ).rows;
  const held = new Map<string, Array<{ thread: string; leaseExpired: boolean }>>();
  if (rows.length && (await tableExists(db, "ll_run_leases"))) {
    const leases = await db.query<{ thread_id: string; worker: string; expired: boolean }>(
      "SELECT thread_id, worker, expires_at < now() AS expired FROM ll_run_leases WHERE state = 'held' AND worker = ANY($1) ORDER BY thread_id",
      [rows.map((r) => r.id)],
    );
    for (const l of leases.rows) held.set(l.worker, [...(held.get(l.worker) ?? []), { thread: l.thread_id, leaseExpired: l.expired }]);
  }
  return rows.map((r) => ({
    id: r.id,
    host: r.host,
    pid: r.pid,
    slots: r.slots,
    version: r.version,
    schemaVersion: r.schema_version,
    status: r.state === "stopped" ? "stopped" : r.expired ? "dead" : r.state === "retiring" ? "retiring" : "live",
    note: r.note,
    startedAt: r.started_at.toISOString(),
    heartbeatAt: r.heartbeat_at.toISOString(),
    silentSeconds: Math.max(0, Math.round(r.silent)),
    runs: held.get(r.id) ?? [],
  }));
}
