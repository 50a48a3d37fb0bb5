import type PgBoss from "pg-boss";
import type pg from "pg";
import { ConfigError } from "../errors.js";
import { noteText, requeueRun, type RunLeaseRow, type RunLeaseState } from "../ledger/pg-run-leases.js";
import { enqueueOn, RUN_QUEUE } from "./run-queue.js";

// Run control from any machine with the state URL: cancel a run (queued: its job cancelled and the
// run marked cancelled in one transaction; held: the holder is asked, and stops the run at its next
// step boundary), and put a stopped run (failed, paused, cancelled) back in the queue.

/** What `cancelRun` did: the run is cancelled now, or its worker was asked to stop it. */
export type CancelResult = { thread: string; state: "cancelled"; was: RunLeaseState } | { thread: string; state: "cancel_requested"; worker: string };

function unknownRun(thread: string): ConfigError {
  return new ConfigError(`no run "${thread}" was submitted to this state's queue; list runs with \`ledgerloop threads --state …\``);
}

/** Cancels a submitted run, or asks the worker holding it to. A run that ended is refused with its state. */
export async function cancelRun(pool: pg.Pool, boss: PgBoss, thread: string, by: string): Promise<CancelResult> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    try {
      const r = await client.query<{ state: RunLeaseState; worker: string | null; job_id: string | null; expires_at: Date | null }>(
        "SELECT state, worker, job_id, expires_at FROM ll_run_leases WHERE thread_id = $1 FOR UPDATE",
        [thread],
      );
      const l = r.rows[0];
      if (!l) throw unknownRun(thread);
      let out: CancelResult;
      if (l.state === "held" && l.expires_at && l.expires_at.getTime() > Date.now()) {
        await client.query("UPDATE ll_run_leases SET cancel_requested = $2, updated_at = now() WHERE thread_id = $1", [thread, noteText(`cancelled by ${by}`)]);
        out = { thread, state: "cancel_requested", worker: l.worker ?? "(unknown)" };
      } else if (l.state === "queued" || l.state === "held" || l.state === "paused" || l.state === "failed") {
        // A held run whose holder is gone (its lease expired) has no one to ask: cancelled here.
        await client.query(
          `UPDATE ll_run_leases SET state = 'cancelled', worker = NULL, token = NULL, heartbeat_at = NULL, expires_at = NULL, cancel_requested = NULL,
             note = $2, updated_at = now() WHERE thread_id = $1`,
          [thread, noteText(`cancelled by ${by} (it was ${l.state})`)],
        );
        // The job goes with the row (same transaction): no worker fetches it afterwards.
        if (l.job_id) await boss.cancel(RUN_QUEUE, l.job_id, { db: { executeSql: (text: string, values: unknown[]) => client.query(text, values) } });
        out = { thread, state: "cancelled", was: l.state };
      } else {
        throw new ConfigError(`run "${thread}" is ${l.state} already; nothing to cancel`);
      }
      await client.query("COMMIT");
      return out;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw err;
    }
  } finally {
    client.release();
  }
}

/**
 * Whether a run that ended was rewound since (`ledgerloop rewind --state`): its newest event is the
 * rewind's, so it has steps left to take.
 */
async function rewoundSinceItEnded(client: pg.PoolClient, thread: string): Promise<boolean> {
  const r = await client.query<{ type: string }>("SELECT type FROM ll_events WHERE thread_id = $1 ORDER BY seq DESC LIMIT 1", [thread]);
  return r.rows[0]?.type === "time_travel";
}

/**
 * Puts a failed, paused, cancelled or rewound run back in the queue; its next worker continues it
 * from its last checkpoint. With `moveTo` (requeue --from), a run that is done may be continued
 * too: `moveTo` moves its head to the chosen checkpoint with the row locked, and a failure there
 * queues nothing.
 */
export async function requeueStoppedRun(
  pool: pg.Pool,
  boss: PgBoss,
  thread: string,
  by: string,
  opts: { moveTo?: { checkpoint: string; move: () => Promise<void> } } = {},
): Promise<{ thread: string; jobId: string; was: RunLeaseRow; from?: string }> {
  const client = await pool.connect();
  try {
    const ended = Boolean(opts.moveTo) || (await rewoundSinceItEnded(client, thread));
    const note = `queued again by ${by}${opts.moveTo ? ` from checkpoint ${opts.moveTo.checkpoint}` : ""}`;
    const r = await requeueRun(client, {
      thread,
      guard: ended ? "ended" : "stopped",
      note,
      prepare: opts.moveTo?.move,
      enqueue: (c, o) => enqueueOn(boss, c, { thread }, o),
    });
    if (r) return { thread, jobId: r.jobId, was: r.previous, ...(opts.moveTo ? { from: opts.moveTo.checkpoint } : {}) };
    const l = (await client.query<{ state: string }>("SELECT state FROM ll_run_leases WHERE thread_id = $1", [thread])).rows[0];
    if (!l) throw unknownRun(thread);
    const hint = l.state === "done" ? "; give --from <checkpoint> to continue it from an earlier one" : "";
    throw new ConfigError(`run "${thread}" is ${l.state}; only a failed, paused, cancelled or rewound run can be queued again${hint}`);
  } finally {
    client.release();
  }
}
