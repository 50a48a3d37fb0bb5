import { randomBytes } from "node:crypto";
import type pg from "pg";
import { CliError } from "../errors.js";
import { tableExists } from "./pg-db.js";
import { defaultRedactor } from "../secrets.js";

// Who holds a queued run. One row per submitted run in ll_run_leases (pg-db.ts, migration 2):
//
//   queued   a job for it is in the queue (job_id); no worker holds it
//   held     worker W runs it; W renews expires_at every ttl/3; past expires_at any worker's reaper
//            hands it over (a new job, state queued again, takeovers + 1)
//   paused   it stopped on its own and waits for a person (approval, budget, model down)
//   done     it ended (finished, failed, max_steps, script_exhausted)
//   cancelled  stopped by `ledgerloop cancel` (queued: its job cancelled; held: its worker stopped
//            it at the next step boundary once it saw cancel_requested); `requeue` continues it
//   failed   no worker could start it (its workspace could not be materialised, MATERIALISE_ATTEMPTS
//            times in a row); note says why. A worker that cannot materialise it releases it back to
//            the queue first (releases + 1), since another machine may reach what this one cannot.
//
// Every change is one UPDATE guarded by the holder's token, so two workers can never both hold a
// run, and a worker that lost its run (it stalled past the expiry) can no longer change its row.
// The ledger is fenced by the same token (PgLedger's `fence`): a stalled worker that wakes up after
// the takeover cannot record, and so cannot start, another action of the run.

export type RunLeaseState = "queued" | "held" | "paused" | "done" | "failed" | "cancelled";

export interface RunLeaseRow {
  thread: string;
  state: RunLeaseState;
  worker: string | null;
  jobId: string | null;
  heartbeatAt: string | null;
  expiresAt: string | null;
  takeovers: number;
  /** Times a worker released it because it could not materialise its workspace. */
  releases: number;
  note: string | null;
  /** Why a cancel was asked of the worker holding it (null: none asked). */
  cancelRequested: string | null;
  /** The priority its jobs are queued with (higher first). */
  priority: number;
}

interface Row {
  thread_id: string;
  state: RunLeaseState;
  worker: string | null;
  job_id: string | null;
  heartbeat_at: Date | null;
  expires_at: Date | null;
  takeovers: number;
  releases: number;
  note: string | null;
  cancel_requested: string | null;
  priority: number;
}

const toLease = (r: Row): RunLeaseRow => ({
  thread: r.thread_id,
  state: r.state,
  worker: r.worker,
  jobId: r.job_id,
  heartbeatAt: r.heartbeat_at?.toISOString() ?? null,
  expiresAt: r.expires_at?.toISOString() ?? null,
  takeovers: r.takeovers,
  releases: r.releases,
  note: r.note,
  cancelRequested: r.cancel_requested ?? null,
  priority: r.priority ?? 0,
});

/**
 * A note as stored: redacted (a reason may quote a clone URL or a command's output, and every
 * reader of the shared database shows it) and bounded.
 */
export function noteText(note: string): string {
  return defaultRedactor.redact(note).slice(0, 2000);
}

/** Whether a worker holds the run right now: held, and renewed within its lease. */
export function leaseLive(l: Pick<RunLeaseRow, "state" | "expiresAt">, now = Date.now()): boolean {
  return l.state === "held" && l.expiresAt !== null && Date.parse(l.expiresAt) > now;
}

/** How many workers in a row may fail to materialise a run's workspace before it ends failed. */
export const MATERIALISE_ATTEMPTS = 3;

/** Anything that runs SQL: a pool, or a client inside a transaction. */
export type Sql = Pick<pg.Pool, "query"> | pg.PoolClient;

export type AcquireResult = { ok: true; token: string; takeover: boolean } | { ok: false; lease: RunLeaseRow | null };

/** A fresh holder's token. */
export function newLeaseToken(): string {
  return randomBytes(12).toString("hex");
}

/**
 * Takes a run for `worker` when it is queued, or held under a lease that expired (its holder died
 * and no reaper has handed it over yet). Fails, with the row, when a live worker holds it or the
 * run has ended. With `token`, a repeat of an acquire whose commit was lost with its connection
 * finds the run held under that token and succeeds again.
 */
export async function acquireRunLease(db: Sql, o: { thread: string; worker: string; jobId: string; ttlMs: number; token?: string }): Promise<AcquireResult> {
  const token = o.token ?? newLeaseToken();
  if (o.token) {
    const mine = await db.query<Row>("SELECT * FROM ll_run_leases WHERE thread_id = $1 AND state = 'held' AND token = $2", [o.thread, token]);
    if (mine.rowCount) return { ok: true, token, takeover: false };
  }
  const r = await db.query<{ was: RunLeaseState }>(
    `WITH old AS (SELECT state AS was FROM ll_run_leases WHERE thread_id = $1 FOR UPDATE)
     UPDATE ll_run_leases l SET state = 'held', worker = $2, token = $3, job_id = $4, heartbeat_at = now(),
       expires_at = now() + $5 * interval '1 millisecond', updated_at = now(),
       takeovers = l.takeovers + CASE WHEN l.state = 'held' THEN 1 ELSE 0 END,
       note = CASE WHEN l.state = 'held' THEN 'took over from ' || l.worker || ' (its lease expired)' ELSE l.note END
     FROM old
     WHERE l.thread_id = $1 AND (l.state = 'queued' OR (l.state = 'held' AND l.expires_at < now()))
     RETURNING old.was`,
    [o.thread, o.worker, token, o.jobId, o.ttlMs],
  );
  if (r.rowCount) return { ok: true, token, takeover: r.rows[0]!.was === "held" };
  return { ok: false, lease: await getRunLease(db, o.thread) };
}

/** Extends a held lease; false when the token no longer holds it (taken over, or handed back). */
export async function renewRunLease(db: Sql, thread: string, token: string, ttlMs: number): Promise<boolean> {
  return (await heartbeatRunLease(db, thread, token, ttlMs)).held;
}

/** Extends a held lease and says whether a cancel was asked of its holder (`ledgerloop cancel`). */
export async function heartbeatRunLease(db: Sql, thread: string, token: string, ttlMs: number): Promise<{ held: boolean; cancel: string | null }> {
  const r = await db.query<{ cancel_requested: string | null }>(
    `UPDATE ll_run_leases SET heartbeat_at = now(), expires_at = now() + $3 * interval '1 millisecond', updated_at = now()
     WHERE thread_id = $1 AND token = $2 AND state = 'held' RETURNING cancel_requested`,
    [thread, token, ttlMs],
  );
  return { held: (r.rowCount ?? 0) > 0, cancel: r.rows[0]?.cancel_requested ?? null };
}

/** Ends a holding: the run stopped on its own (paused), ended (done) or could not start (failed). */
export async function endRunLease(db: Sql, thread: string, token: string, state: "paused" | "done" | "failed" | "cancelled", note: string): Promise<boolean> {
  const r = await db.query(
    `UPDATE ll_run_leases SET state = $3, worker = NULL, token = NULL, heartbeat_at = NULL, expires_at = NULL, note = $4, cancel_requested = NULL, updated_at = now()
     WHERE thread_id = $1 AND token = $2 AND state = 'held'`,
    [thread, token, state, noteText(note)],
  );
  return (r.rowCount ?? 0) > 0;
}

export async function getRunLease(db: Sql, thread: string): Promise<RunLeaseRow | null> {
  const r = await db.query<Row>("SELECT * FROM ll_run_leases WHERE thread_id = $1", [thread]);
  return r.rows[0] ? toLease(r.rows[0]) : null;
}

/** The run's lease row, or null: also on a database without the queue's tables yet (readers of any state). */
export async function findRunLease(db: Sql, thread: string): Promise<RunLeaseRow | null> {
  return (await tableExists(db, "ll_run_leases")) ? getRunLease(db, thread) : null;
}

export async function listRunLeases(db: Sql): Promise<RunLeaseRow[]> {
  if (!(await tableExists(db, "ll_run_leases"))) return [];
  return (await db.query<Row>("SELECT * FROM ll_run_leases ORDER BY thread_id")).rows.map(toLease);
}

/**
 * Puts a run back in the queue inside a transaction, with the job that will carry it: `enqueue`
 * sends that job on the same client, so the row and the job commit together (a crash in between
 * leaves neither). `guard` says from which holding: the holder's token (a worker handing its own
 * run back), or an expired lease (a reaper; no token needed).
 */
export async function requeueRun(
  client: pg.PoolClient,
  o: {
    thread: string;
    /** `stopped`: paused, failed or cancelled; `ended`: those or done (a run continued from an earlier checkpoint). */
    guard: { token: string } | "expired" | "any" | "stopped" | "ended";
    note: string;
    /** Sends the run's next job on `client`, with the run's priority. */
    enqueue: (client: pg.PoolClient, o: { priority: number }) => Promise<string | null>;
    /** The holder could not materialise the run's workspace (counted in `releases`). */
    released?: boolean;
    /** Runs with the row locked, before the job is sent; its failure queues nothing. */
    prepare?: (previous: RunLeaseRow) => Promise<void>;
  },
): Promise<{ jobId: string; previous: RunLeaseRow } | null> {
  await client.query("BEGIN");
  try {
    const cond =
      o.guard === "expired"
        ? "state = 'held' AND expires_at < now()"
        : o.guard === "any"
          ? "state <> 'held' OR expires_at < now()"
          : o.guard === "stopped"
            ? "state IN ('paused', 'failed', 'cancelled')"
            : o.guard === "ended"
              ? "state IN ('paused', 'failed', 'cancelled', 'done')"
              : "state = 'held' AND token = $2";
    const args = typeof o.guard === "object" ? [o.thread, o.guard.token] : [o.thread];
    const cur = await client.query<Row>(`SELECT * FROM ll_run_leases WHERE thread_id = $1 AND (${cond}) FOR UPDATE SKIP LOCKED`, args);
    if (!cur.rowCount) {
      await client.query("ROLLBACK");
      return null;
    }
    await o.prepare?.(toLease(cur.rows[0]!));
    const jobId = await o.enqueue(client, { priority: cur.rows[0]!.priority ?? 0 });
    if (!jobId) throw new Error(`the queue refused a job for run ${o.thread}`);
    const expired = o.guard === "expired";
    await client.query(
      `UPDATE ll_run_leases SET state = 'queued', worker = NULL, token = NULL, heartbeat_at = NULL, expires_at = NULL, job_id = $2, note = $3, cancel_requested = NULL,
         takeovers = takeovers + $4, releases = releases + $5, updated_at = now() WHERE thread_id = $1`,
      [o.thread, jobId, noteText(o.note), expired ? 1 : 0, o.released ? 1 : 0],
    );
    await client.query("COMMIT");
    return { jobId, previous: toLease(cur.rows[0]!) };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  }
}

/** The holder materialised the run's workspace: earlier releases no longer count towards MATERIALISE_ATTEMPTS. */
export async function materialisedRun(db: Sql, thread: string, token: string): Promise<void> {
  await db.query("UPDATE ll_run_leases SET releases = 0 WHERE thread_id = $1 AND token = $2 AND releases > 0", [thread, token]);
}

/** Threads whose holder's lease expired (the reaper's candidates). */
export async function expiredRunLeases(db: Sql, limit = 20): Promise<string[]> {
  const r = await db.query<{ thread_id: string }>(
    "SELECT thread_id FROM ll_run_leases WHERE state = 'held' AND expires_at < now() ORDER BY expires_at LIMIT $1",
    [limit],
  );
  return r.rows.map((x) => x.thread_id);
}

/**
 * A command that writes a run (resume, rewind, fork, delete) must not race a queue worker: refused,
 * in one line naming the worker, while one holds the run or while it waits in the queue for one.
 */
export async function refuseIfQueued(db: Sql, thread: string, command: string): Promise<void> {
  const l = await findRunLease(db, thread);
  if (!l) return;
  if (leaseLive(l)) {
    throw new CliError(
      `run ${thread} is being driven by worker ${l.worker}; stop that worker (SIGTERM hands the run back to the queue) before \`${command}\``,
      75,
      "LEASE_HELD",
    );
  }
  if (l.state === "queued" || l.state === "held") {
    throw new CliError(`run ${thread} is queued for the workers (a worker will take it up); \`${command}\` would race it`, 75, "LEASE_HELD");
  }
}
