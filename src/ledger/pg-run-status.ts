import type pg from "pg";
import { findRunLease, leaseLive, listRunLeases } from "./pg-run-leases.js";
import { tableExists } from "./pg-db.js";
import { runEnded } from "./run-ended.js";
import { PgRunRegistry } from "./pg-runs.js";
import { newestFirst, runSummary, type RunSummary, type ThreadEvents } from "./run-status.js";

/**
 * listRuns of run-status.ts on a PostgreSQL state: the same rows, statuses and order. With `thread`,
 * only that run's row (the viewer's header asks for one run's status without reading every run).
 */
export async function listRunsPg(pool: pg.Pool, opts: { thread?: string } = {}): Promise<RunSummary[]> {
  const only = opts.thread;
  const registry = new PgRunRegistry(pool);
  const records = only === undefined ? await registry.list() : [await registry.get(only)].filter((r) => r !== null);
  const runs = new Map(records.map((r) => [r.threadId, r]));
  // `$1::text IS NULL OR …`: one statement for every run or one.
  const arg = [only ?? null];
  const events = new Map<string, ThreadEvents>();
  const rows = await pool.query<{
    thread_id: string;
    n: string;
    first_ts: string;
    last_ts: string;
    max_seq: number;
    goal: string | null;
    steps: string | null;
  }>(
    `SELECT thread_id, COUNT(*) AS n, MIN(ts) AS first_ts, MAX(ts) AS last_ts, MAX(seq) AS max_seq,
       MAX(CASE WHEN type = 'context_built' THEN (payload::jsonb ->> 'step')::int END) AS steps,
       (SELECT s.payload::jsonb ->> 'goal' FROM ll_events s WHERE s.thread_id = e.thread_id AND s.type = 'task_spec' ORDER BY seq LIMIT 1) AS goal
     FROM ll_events e WHERE $1::text IS NULL OR e.thread_id = $1 GROUP BY thread_id`,
    arg,
  );
  for (const r of rows.rows) {
    events.set(r.thread_id, {
      n: Number(r.n),
      first: r.first_ts,
      last: r.last_ts,
      maxSeq: r.max_seq,
      goal: r.goal,
      steps: r.steps === null ? null : Number(r.steps),
    });
  }
  // PostgresSaver's tables, absent until a run set them up.
  const local = await tableExists(pool, "checkpoints");
  const counts = new Map<string, number>();
  if (local) {
    for (const r of (
      await pool.query<{ thread_id: string; n: string }>(
        "SELECT thread_id, COUNT(*) AS n FROM checkpoints WHERE $1::text IS NULL OR thread_id = $1 GROUP BY thread_id",
        arg,
      )
    ).rows)
      counts.set(r.thread_id, Number(r.n));
  }
  const ids = [...new Set([...runs.keys(), ...events.keys(), ...counts.keys()])];
  const out: RunSummary[] = [];
  for (const id of ids) {
    const r = runs.get(id);
    const e = events.get(id);
    const last = e
      ? ((
          await pool.query<{ type: string; status: string | null; kind: string | null }>(
            "SELECT type, payload::jsonb ->> 'status' AS status, payload::jsonb ->> 'kind' AS kind FROM ll_events WHERE thread_id = $1 AND seq = $2",
            [id, e.maxSeq],
          )
        ).rows[0] ?? null)
      : null;
    // A run paused by interrupt() has a pending __interrupt__ write on its newest checkpoint.
    const paused =
      local &&
      Boolean(
        (
          await pool.query(
            `SELECT 1 FROM checkpoint_writes WHERE thread_id = $1 AND checkpoint_ns = '' AND channel = '__interrupt__'
               AND checkpoint_id = (SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = $1 AND checkpoint_ns = '') LIMIT 1`,
            [id],
          )
        ).rowCount,
      );
    out.push(runSummary(id, r, e, last, paused, counts.get(id) ?? 0));
  }
  // Runs of the queue: the worker that holds each, and those no worker has started yet.
  const leases = only === undefined ? await listRunLeases(pool) : await oneLease(pool, only);
  const byThread = new Map(out.map((s) => [s.thread, s]));
  const now = Date.now();
  for (const l of leases) {
    const queue = { state: l.state, worker: l.worker, takeovers: l.takeovers, heartbeatAt: l.heartbeatAt, expiresAt: l.expiresAt, note: l.note };
    let s = byThread.get(l.thread);
    if (!s) {
      const sub = (await pool.query<{ task: string; submitted_at: string }>("SELECT task, submitted_at FROM ll_submissions WHERE thread_id = $1", [l.thread]))
        .rows[0];
      s = {
        thread: l.thread,
        goal: sub?.task ?? null,
        status: "queued",
        origin: "worker",
        checkpointsIn: "none",
        createdAt: sub?.submitted_at ?? null,
        lastActivity: null,
        events: 0,
        checkpoints: 0,
        steps: null,
      };
      out.push(s);
    }
    s.queue = queue;
    // The lease says more than a runner on another host can: held and renewed means running.
    const live = leaseLive(l, now);
    // A run that ended, or waits for a person, says so even if a job for it is still queued.
    const settled = runEnded(s.status) || s.status === "awaiting_approval";
    if (live) s.status = "running";
    else if (l.state === "queued" && !settled) s.status = "queued";
    else if (l.state === "cancelled") s.status = "cancelled";
  }
  return out.sort(newestFirst);
}

/** The queue's row of one run, if it was submitted (none while the table does not exist). */
async function oneLease(pool: pg.Pool, thread: string) {
  const l = await findRunLease(pool, thread);
  return l ? [l] : [];
}
