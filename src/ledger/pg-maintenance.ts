import type pg from "pg";
import { StateStoreError } from "../errors.js";
import { sweepReplica, type ReplicaSweep } from "./pg-revisions.js";
import type { CheckpointLink } from "./checkpoints.js";
import { planCheckpointPrune } from "./maintenance.js";
import { inTransaction, tableExists } from "./pg-db.js";
import { listRunsPg } from "./pg-run-status.js";
import { mayBeRunning } from "./run-status.js";

// gc of a PostgreSQL state (`ledgerloop gc --state URL`): the same promise as the SQLite gc in
// maintenance.ts (branch heads stay resumable, runs replayable, the ledger is never touched), for
// a database that many machines use at once. So:
// - a run that may be running somewhere (running, queued, or a runner this machine cannot check)
//   is left whole, and said so;
// - each thread's checkpoints are pruned in a transaction of their own;
// - the revision replica is swept under its generation row (ledger/pg-revisions.ts), and a
//   revision pushed within the grace period stays: a run pushes a revision just before its ledger
//   names it.

/** Default grace for revisions pushed but not yet named by a ledger event or a checkpoint. */
export const PG_GC_GRACE_MS = 60 * 60 * 1000;
/** Session advisory lock key of gc: one gc of a database at a time ("ll-gc"). */
const GC_LOCK = 0x6c6c6763;

export interface PgGcOptions {
  /** Keep only this many checkpoints on each branch, counted back from its head (default: all). */
  keepLast?: number;
  /** Revisions pushed more recently than this stay even if nothing names them yet (default 1 h). */
  graceMs?: number;
  /** A run of status `unknown` silent for longer than this is pruned like a stopped one (default: never). */
  staleMs?: number;
}

export interface PgGcReport {
  checkpointsDeleted: number;
  checkpointsKept: number;
  heads: number;
  /** Stored channel values (checkpoint_blobs) and pending writes no kept checkpoint needs any more. */
  checkpointBlobsDeleted: number;
  writesDeleted: number;
  /** Runs left whole because they may be running. */
  skipped: Array<{ thread: string; status: string }>;
  replica: ReplicaSweep;
}

/** Prunes a PostgreSQL state's old checkpoints and sweeps its revision replica. */
export async function collectPgGarbage(pool: pg.Pool, opts: PgGcOptions = {}): Promise<PgGcReport> {
  const lock = await pool.connect();
  try {
    const got = (await lock.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1) AS ok", [GC_LOCK])).rows[0]?.ok;
    if (!got) throw new StateStoreError("STATE_DB_LOCKED", "another gc of this PostgreSQL state is running; try again when it ends");
    try {
      return await collect(pool, opts);
    } finally {
      await lock.query("SELECT pg_advisory_unlock($1)", [GC_LOCK]);
    }
  } finally {
    lock.release();
  }
}

async function collect(pool: pg.Pool, opts: PgGcOptions): Promise<PgGcReport> {
  const report: PgGcReport = {
    checkpointsDeleted: 0,
    checkpointsKept: 0,
    heads: 0,
    checkpointBlobsDeleted: 0,
    writesDeleted: 0,
    skipped: [],
    replica: { revisionsKept: 0, revisionsDeleted: 0, treesDeleted: 0, blobsDeleted: 0, bytesFreed: 0 },
  };
  const runs = await listRunsPg(pool);
  const active = new Set<string>();
  const now = Date.now();
  for (const r of runs) {
    if (!mayBeRunning(r, now, opts.staleMs)) continue;
    active.add(r.thread);
    report.skipped.push({ thread: r.thread, status: r.status });
  }
  const checkpoints = await tableExists(pool, "checkpoints");
  if (checkpoints) {
    const rows = (
      await pool.query<CheckpointLink>("SELECT thread_id, checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE checkpoint_ns = ''")
    ).rows.filter((r) => !active.has(r.thread_id));
    const byThread = new Map<string, CheckpointLink[]>();
    for (const r of rows) {
      const links = byThread.get(r.thread_id);
      if (links) links.push(r);
      else byThread.set(r.thread_id, [r]);
    }
    for (const [thread, links] of byThread) {
      const plan = planCheckpointPrune(links, opts.keepLast);
      report.heads += plan.heads;
      report.checkpointsKept += links.length - plan.drop.length;
      if (plan.drop.length === 0) continue;
      const out = await inTransaction(pool, async (c) => {
        for (const r of plan.reparent) {
          await c.query("UPDATE checkpoints SET parent_checkpoint_id = $1 WHERE thread_id = $2 AND checkpoint_ns = '' AND checkpoint_id = $3", [
            r.parent,
            thread,
            r.checkpoint_id,
          ]);
        }
        const ids = plan.drop.map((r) => r.checkpoint_id);
        const writes = await c.query("DELETE FROM checkpoint_writes WHERE thread_id = $1 AND checkpoint_ns = '' AND checkpoint_id = ANY($2)", [thread, ids]);
        await c.query("DELETE FROM checkpoints WHERE thread_id = $1 AND checkpoint_ns = '' AND checkpoint_id = ANY($2)", [thread, ids]);
        // A channel value stays while some checkpoint of its thread and namespace still names its
        // version: the same join PostgresSaver reads them with.
        const blobs = await c.query(
          `DELETE FROM checkpoint_blobs b WHERE b.thread_id = $1 AND b.checkpoint_ns = ''
             AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
                             AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)`,
          [thread],
        );
        return { writes: writes.rowCount ?? 0, blobs: blobs.rowCount ?? 0 };
      });
      report.checkpointsDeleted += plan.drop.length;
      report.writesDeleted += out.writes;
      report.checkpointBlobsDeleted += out.blobs;
    }
  }
  if (await tableExists(pool, "ll_rev_revisions")) {
    report.replica = await sweepReplica(pool, await liveRevisions(pool, active, checkpoints), { graceMs: opts.graceMs ?? PG_GC_GRACE_MS });
  }
  return report;
}

/**
 * The revisions that must stay in the replica: those a stored checkpoint's state names (rewind,
 * diff and resume need them), where each run started and what a forced rewind saved (replay,
 * report), each run's newest named revision (a worker's takeover continues from it) and its newest
 * snapshot (report), and every revision a run that may be running names.
 */
async function liveRevisions(pool: pg.Pool, active: ReadonlySet<string>, checkpoints: boolean): Promise<Set<string>> {
  const live = new Set<string>();
  const add = (v: unknown) => {
    if (typeof v === "string" && /^[0-9a-f]{64}$/.test(v)) live.add(v);
  };
  if (checkpoints) {
    // Channel values are PostgresSaver's serialised blobs; workspaceRev is a string, stored as JSON.
    const rows = await pool.query<{ type: string; blob: Buffer | null }>("SELECT DISTINCT type, blob FROM checkpoint_blobs WHERE channel = 'workspaceRev'");
    for (const r of rows.rows) {
      if (r.type === "null" || r.type === "empty" || r.blob === null) continue;
      if (r.type !== "json") {
        // Better no sweep than a sweep that loses a revision some checkpoint needs.
        throw new StateStoreError(
          "STATE_DB_UNREADABLE",
          `cannot read a checkpoint's workspace revision stored as "${r.type}"; the revision replica was not swept`,
        );
      }
      add(JSON.parse(r.blob.toString("utf8")));
    }
  }
  if (await tableExists(pool, "ll_events")) {
    const named = await pool.query<{ a: string | null; b: string | null }>(
      `SELECT payload::jsonb ->> 'revision' AS a, payload::jsonb ->> 'savedRevision' AS b FROM ll_events WHERE type IN ('task_spec', 'time_travel')`,
    );
    for (const r of named.rows) [r.a, r.b].forEach(add);
    const newest = await pool.query<{ rev: string }>(
      `SELECT DISTINCT ON (thread_id, snap) payload::jsonb ->> 'revision' AS rev
         FROM (SELECT thread_id, seq, payload, type = 'workspace_snapshot' AS snap FROM ll_events
               WHERE type IN ('environment_feedback', 'workspace_snapshot', 'time_travel', 'task_spec') AND payload::jsonb ->> 'revision' IS NOT NULL) e
        ORDER BY thread_id, snap, seq DESC`,
    );
    for (const r of newest.rows) add(r.rev);
    if (active.size > 0) {
      const theirs = await pool.query<{ a: string | null; b: string | null }>(
        "SELECT payload::jsonb ->> 'revision' AS a, payload::jsonb ->> 'savedRevision' AS b FROM ll_events WHERE thread_id = ANY($1)",
        [[...active]],
      );
      for (const r of theirs.rows) [r.a, r.b].forEach(add);
    }
  }
  return live;
}

/** What a PostgreSQL state holds, for `doctor --state` (sizes include indexes and TOAST). */
export interface PgStorage {
  checkpoints: { count: number; bytes: number };
  ledger: { events: number; bytes: number };
  replica: { revisions: number; bytes: number };
}

export async function pgStorage(pool: pg.Pool): Promise<PgStorage> {
  const size = async (tables: string[]) => {
    let n = 0;
    for (const t of tables)
      if (await tableExists(pool, t)) n += Number((await pool.query<{ b: string }>("SELECT pg_total_relation_size($1::regclass) AS b", [t])).rows[0]!.b);
    return n;
  };
  const count = async (table: string) =>
    (await tableExists(pool, table)) ? Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n) : 0;
  return {
    checkpoints: { count: await count("checkpoints"), bytes: await size(["checkpoints", "checkpoint_blobs", "checkpoint_writes"]) },
    ledger: { events: await count("ll_events"), bytes: await size(["ll_events", "ll_event_files", "ll_blobs"]) },
    replica: { revisions: await count("ll_rev_revisions"), bytes: await size(["ll_rev_revisions", "ll_rev_trees", "ll_rev_blobs"]) },
  };
}
