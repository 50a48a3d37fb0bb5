import type pg from "pg";
import type { PgRevisionReplica } from "../ledger/pg-revisions.js";
import type { RevisionStore } from "../workspace/revisions.js";
import { MaterialiseError } from "./materialise.js";

/** The parts of a run's runtime a restore touches (declared here so the queue does not import the runtime above it). */
export interface RestoreTarget {
  revisions: RevisionStore;
  revisionReplica?: PgRevisionReplica;
}

/**
 * The workspace revision a queued run continues from: the newest one its ledger names (an action's
 * feedback, a step's snapshot, a time travel, or the revision the task started from). The ledger is
 * written ahead of the checkpoints, so this may be ahead of the last checkpoint's `workspaceRev`:
 * exactly the files a crashed act left, which its re-run continues from (as after a local crash).
 * Null for a run that has not started.
 */
export async function lastRevision(pool: pg.Pool, thread: string): Promise<string | null> {
  const r = await pool.query<{ rev: string }>(
    `SELECT payload::jsonb ->> 'revision' AS rev FROM ll_events
     WHERE thread_id = $1 AND type IN ('environment_feedback', 'workspace_snapshot', 'time_travel', 'task_spec') AND payload::jsonb ->> 'revision' IS NOT NULL
     ORDER BY seq DESC LIMIT 1`,
    [thread],
  );
  return r.rows[0]?.rev ?? null;
}

/**
 * Writes revision `rev` into the runtime's (freshly cloned, empty) workspace from the PostgreSQL
 * revision store, so the run continues on the files its last checkpoint recorded.
 */
export async function restoreRevision(rt: RestoreTarget, rev: string): Promise<void> {
  const replica = rt.revisionReplica;
  if (!replica) throw new MaterialiseError(`run continues from revision ${rev.slice(0, 12)}, but this state keeps no revisions in PostgreSQL`);
  await replica.pull(rt.revisions, rev);
  await rt.revisions.restore(rev);
}
