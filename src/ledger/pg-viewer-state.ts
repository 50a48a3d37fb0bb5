import { openPgInspection } from "./open-state.js";
import { asPgStateError, tableExists } from "./pg-db.js";
import { listRunsPg } from "./pg-run-status.js";
import { isStateUnavailable } from "./state-unavailable.js";
import { parseSettings, type ReadOnlyState, type RunInfo, type StateSource } from "./viewer-state.js";

// The viewer's read port on a PostgreSQL state database (`ledgerloop web --state postgres://…`):
// every run of the database, those waiting in the queue included, each with the worker holding it.

/** Connections the viewer keeps: a page asks for a few routes at once, and queues past that. */
const POOL_SIZE = 4;

/**
 * Opens the database once, read-only and without migrating: a database with no ledgerloop tables,
 * a refused login or a newer schema is a one-line error here, before the viewer listens. Requests
 * share its pool (unlike SQLite, opening per request would cost a connection each time).
 */
export async function pgSource(url: string): Promise<StateSource> {
  // Read-only sessions: the server refuses a write, so the viewer cannot change a run by mistake.
  const st = await openPgInspection(url, { max: POOL_SIZE, readOnly: true });
  const q = <R extends Record<string, unknown>>(sql: string, args: unknown[] = []) => st.pool.query<R>(sql, args);
  // Tables that may come later, checked on each request until they are there (then they stay):
  // PostgresSaver's, set up by the first run; the queue's, from schema version 2 on (a database of
  // version 1 is still readable).
  let checkpointTables = false;
  let queue = false;
  const state: Omit<ReadOnlyState, "checkpointer"> = {
    where: st.location,
    ledger: st.ledger,
    listRuns: (thread) => listRunsPg(st.pool, thread === undefined ? {} : { thread }),
    hasThread: async (thread) =>
      Boolean(
        (await st.runs.get(thread)) ||
        (await st.runs.hasCheckpoints(thread)) ||
        (await q("SELECT 1 FROM ll_events WHERE thread_id = $1 LIMIT 1", [thread])).rowCount ||
        (queue && (await q("SELECT 1 FROM ll_submissions WHERE thread_id = $1", [thread])).rowCount),
      ),
    runInfo: async (thread): Promise<RunInfo | null> => {
      const r = await st.runs.get(thread);
      if (r) return { goal: r.goal, createdAt: r.createdAt, settings: r.settings as unknown as Record<string, unknown> };
      // A run no worker has started yet is only its submission: its task, and the settings it was submitted with.
      if (!queue) return null;
      const s = (
        await q<{ task: string; settings: string; submitted_at: string }>("SELECT task, settings, submitted_at FROM ll_submissions WHERE thread_id = $1", [
          thread,
        ])
      ).rows[0];
      return s ? { goal: s.task, createdAt: s.submitted_at, settings: parseSettings(s.settings) } : null;
    },
    seqStats: async (thread) => {
      const r = (await q<{ m: number | null; n: string }>("SELECT MAX(seq) AS m, COUNT(*) AS n FROM ll_events WHERE thread_id = $1", [thread])).rows[0];
      return { maxSeq: r?.m ?? 0, count: Number(r?.n ?? 0) };
    },
    headEvent: async (thread) =>
      (await q<{ id: string }>("SELECT id FROM ll_events WHERE thread_id = $1 ORDER BY seq DESC LIMIT 1", [thread])).rows[0]?.id ?? null,
    forked: async (thread) => Boolean((await q("SELECT 1 FROM ll_forks WHERE thread_id = $1 LIMIT 1", [thread])).rowCount),
    // The pool outlives the request.
    close: () => {},
  };
  return {
    kind: "postgres",
    label: st.location,
    open: async () => {
      if (!checkpointTables) checkpointTables = (await tableExists(st.pool, "checkpoints")) && (await tableExists(st.pool, "checkpoint_writes"));
      if (!queue) queue = await tableExists(st.pool, "ll_submissions");
      return { ...state, checkpointer: checkpointTables ? st.checkpointer : null };
    },
    // A lost server or a failing query: one line naming the database, never its password.
    named: (err) => (isStateUnavailable(err) || isPgError(err) ? asPgStateError(err, url) : err),
    close: () => st.close(),
  };
}

/** An error PostgreSQL itself reported (pg's DatabaseError carries the server's severity). */
function isPgError(err: unknown): boolean {
  return typeof (err as { severity?: unknown } | null)?.severity === "string";
}
