import os from "node:os";
import type { CancelResult } from "../queue/run-control.js";
import type { RunLeaseState } from "../ledger/pg-run-leases.js";

// `ledgerloop cancel` and `requeue` against a PostgreSQL state: each opens the state and the queue
// for one call (queue/run-control.ts) and closes them again.

/** Who asked, as the run's note says it. */
function asker(): string {
  let user = "unknown";
  try {
    user = os.userInfo().username;
  } catch {
    // No passwd entry (a container): the host still says where it came from.
  }
  return `${user}@${os.hostname()}`;
}

/** The state's pool and queue for one call (queue/queue-state.ts). */
async function withQueue<T>(url: string, fn: (pool: import("pg").Pool, boss: import("pg-boss")) => Promise<T>): Promise<T> {
  const { withQueueState } = await import("../queue/queue-state.js");
  return withQueueState(url, ({ state, boss }) => fn(state.pool, boss));
}

/** Cancels a submitted run (queued or stopped: at once; held: its worker stops it at the next step boundary). */
export async function cancelSubmittedRun(url: string, thread: string): Promise<CancelResult> {
  const { cancelRun } = await import("../queue/run-control.js");
  return withQueue(url, (pool, boss) => cancelRun(pool, boss, thread, asker()));
}

/**
 * Queues a failed, paused, cancelled or rewound run again; a worker continues it from its last
 * checkpoint, or with `from` from that checkpoint of the run (a run that is done, too).
 */
export async function requeueSubmittedRun(
  url: string,
  thread: string,
  opts: { from?: string } = {},
): Promise<{ thread: string; jobId: string; was: RunLeaseState; from?: string }> {
  const [{ requeueStoppedRun }, { getRunLease }, { requeuePoint }] = await Promise.all([
    import("../queue/run-control.js"),
    import("../ledger/pg-run-leases.js"),
    import("./requeue-from.js"),
  ]);
  const r = await withQueue(url, async (pool, boss) => {
    // An unknown run is said as such before its checkpoint is looked for.
    const point = opts.from !== undefined && (await getRunLease(pool, thread)) ? await requeuePoint(pool, thread, opts.from) : undefined;
    return requeueStoppedRun(pool, boss, thread, asker(), point ? { moveTo: point } : {});
  });
  return { thread, jobId: r.jobId, was: r.was.state, ...(opts.from !== undefined ? { from: r.from } : {}) };
}
