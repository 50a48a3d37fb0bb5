import type pg from "pg";
import { PgRunRegistry } from "./pg-runs.js";
import { newestFirst, runSummary, type RunSummary, type ThreadEvents } from "./run-status.js";

/** listRuns of run-status.ts on a PostgreSQL state: the same rows, statuses and order. */
export async function listRunsPg(pool: pg.Pool): Promise<RunSummary[]> {
  const runs = new Map((await new PgRunRegistry(pool).list()).map((r) => [r.threadId, r]));
  const events = new Map<string, ThreadEvents>();
  const rows = await pool.query<{ thread_id: string; n: string; first_ts: string; last_ts: string; max_seq: number; goal: string | null; steps: string | null }>(
    `SELECT thread_id, COUNT(*) AS n, MIN(ts) AS first_ts, MAX(ts) AS last_ts, MAX(seq) AS max_seq,
       MAX(CASE WHEN type = 'context_built' THEN (payload::jsonb ->> 'step')::int END) AS steps,
       (SELECT s.payload::jsonb ->> 'goal' FROM ll_events s WHERE s.thread_id = e.thread_id AND s.type = 'task_spec' ORDER BY seq LIMIT 1) AS goal
     FROM ll_events e GROUP BY thread_id`,
  );
  for (const r of rows.rows) {
    events.set(r.thread_id, { n: Number(r.n), first: r.first_ts, last: r.last_ts, maxSeq: r.max_seq, goal: r.goal, steps: r.steps === null ? null : Number(r.steps) });
  }
  // PostgresSaver's tables, absent until a run set them up.
  const local = Boolean((await pool.query("SELECT to_regclass('checkpoints') AS t")).rows[0]?.t);
  const counts = new Map<string, number>();
  if (local) {
    for (const r of (await pool.query<{ thread_id: string; n: string }>("SELECT thread_id, COUNT(*) AS n FROM checkpoints GROUP BY thread_id")).rows) counts.set(r.thread_id, Number(r.n));
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
  return out.sort(newestFirst);
}
