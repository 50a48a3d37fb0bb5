import fs from "node:fs";
import path from "node:path";
import type { Database } from "../sqlite/driver.js";
import type { RevisionStore } from "../workspace/revisions.js";
import { checkpointLinks, checkpointStorage, checkpointWorkspaceRevs, pruneCheckpoints, type CheckpointLink } from "./checkpoints.js";

function hasTable(db: Database, name: string): boolean {
  return Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name));
}

/** Bytes on disk of a file or a directory tree (0 when absent). */
export function diskBytes(p: string): number {
  try {
    const st = fs.statSync(p);
    if (!st.isDirectory()) return st.size;
    return fs.readdirSync(p).reduce((n, f) => n + diskBytes(path.join(p, f)), 0);
  } catch {
    return 0;
  }
}

export interface GcOptions {
  /** Keep only this many checkpoints on each branch, counted back from its head (root checkpoints stay). */
  keepLast?: number;
}

export interface GcReport {
  checkpointsDeleted: number;
  checkpointsKept: number;
  heads: number;
  revisionsDeleted: number;
  blobsDeleted: number;
  bytesBefore: number;
  bytesAfter: number;
}

/** Which root-graph checkpoints a gc removes, and which kept ones get a new parent. */
export interface PrunePlan {
  drop: CheckpointLink[];
  reparent: Array<{ thread_id: string; checkpoint_id: string; parent: string | null }>;
  /** Branch heads (checkpoints no other one names as parent). */
  heads: number;
}

/**
 * The checkpoints to keep: every branch head with its last `keepLast` checkpoints (all of them
 * when undefined) and every thread's first checkpoint; the rest go. History stays a chain: a kept
 * checkpoint whose parent goes points at its nearest kept ancestor. Both state backends use it.
 */
export function planCheckpointPrune(rows: readonly CheckpointLink[], keepLast: number | undefined): PrunePlan {
  const key = (t: string, c: string) => `${t}\u0000${c}`;
  const byKey = new Map(rows.map((r) => [key(r.thread_id, r.checkpoint_id), r]));
  const hasChild = new Set(rows.filter((r) => r.parent_checkpoint_id).map((r) => key(r.thread_id, r.parent_checkpoint_id!)));
  const keep = new Set<string>();
  let heads = 0;
  for (const r of rows) {
    if (!r.parent_checkpoint_id) keep.add(key(r.thread_id, r.checkpoint_id));
    if (hasChild.has(key(r.thread_id, r.checkpoint_id))) continue;
    heads++;
    let cur: CheckpointLink | undefined = r;
    for (let i = 0; cur && (keepLast === undefined || i < keepLast); i++) {
      keep.add(key(cur.thread_id, cur.checkpoint_id));
      cur = cur.parent_checkpoint_id ? byKey.get(key(cur.thread_id, cur.parent_checkpoint_id)) : undefined;
    }
  }
  const parentOf = (r: CheckpointLink) => (r.parent_checkpoint_id ? byKey.get(key(r.thread_id, r.parent_checkpoint_id)) : undefined);
  const nearestKept = (r: CheckpointLink): string | null => {
    let p = parentOf(r);
    while (p && !keep.has(key(p.thread_id, p.checkpoint_id))) p = parentOf(p);
    return p?.checkpoint_id ?? null;
  };
  return {
    drop: rows.filter((r) => !keep.has(key(r.thread_id, r.checkpoint_id))),
    reparent: rows
      .filter((r) => keep.has(key(r.thread_id, r.checkpoint_id)) && r.parent_checkpoint_id && !keep.has(key(r.thread_id, r.parent_checkpoint_id)))
      .map((r) => ({ thread_id: r.thread_id, checkpoint_id: r.checkpoint_id, parent: nearestKept(r) })),
    heads,
  };
}

/**
 * Prunes old checkpoints and unreferenced workspace blobs. Every branch head, its last `keepLast`
 * ancestors and every thread's first checkpoint stay, so each branch can still be resumed,
 * rewound within that window and replayed from its start; the ledger is never pruned, and the
 * revisions it names (run starts, edits saved by a forced rewind) are kept.
 */
export async function collectGarbage(db: Database, revisions: RevisionStore, stateDir: string, opts: GcOptions = {}): Promise<GcReport> {
  const files = [path.join(stateDir, "state.db"), path.join(stateDir, "state.db-wal"), path.join(stateDir, "blobs")];
  const bytesBefore = files.reduce((n, f) => n + diskBytes(f), 0);
  let deleted = 0;
  let kept = 0;
  let heads = 0;
  const live = new Set<string>();
  const rows = checkpointLinks(db);
  if (rows.length > 0) {
    const plan = planCheckpointPrune(rows, opts.keepLast);
    pruneCheckpoints(db, plan.drop, plan.reparent);
    deleted = plan.drop.length;
    kept = rows.length - plan.drop.length;
    heads = plan.heads;
  }
  for (const rev of checkpointWorkspaceRevs(db)) live.add(rev);
  // Revisions the ledger names stay too: where each run started, and edits saved by rewind --force.
  if (hasTable(db, "ll_events")) {
    const named = db
      .prepare(
        `SELECT json_extract(payload, '$.revision') AS a, json_extract(payload, '$.savedRevision') AS b
         FROM ll_events WHERE type IN ('task_spec', 'time_travel')`,
      )
      .all() as Array<{ a: string | null; b: string | null }>;
    for (const r of named) for (const id of [r.a, r.b]) if (id) live.add(id);
  }
  const rev = revisions.gc(live);
  // VACUUM rewrites the database through the WAL; the checkpoint after it gives the space back.
  db.exec("VACUUM");
  db.pragma("wal_checkpoint(TRUNCATE)");
  const bytesAfter = files.reduce((n, f) => n + diskBytes(f), 0);
  return {
    checkpointsDeleted: deleted,
    checkpointsKept: kept,
    heads,
    revisionsDeleted: rev.revisionsDeleted,
    blobsDeleted: rev.blobsDeleted,
    bytesBefore,
    bytesAfter,
  };
}

export interface StorageStats {
  checkpoints: { count: number; bytes: number; writesBytes: number };
  ledger: { events: number; payloadBytes: number; promptBlobs: number; promptBlobBytes: number };
  revisions: { count: number; blobs: number; storedBytes: number; rawBytes: number };
  index: { bytes: number };
  files: { stateDb: number; wal: number; blobsDir: number };
}

/** Sizes of everything a workspace's state holds. */
export function storageStats(db: Database, revisions: RevisionStore, stateDir: string): StorageStats {
  const one = <T>(sql: string, fallback: T): T => {
    try {
      return (db.prepare(sql).get() as T) ?? fallback;
    } catch (err) {
      // A table not created yet counts as empty; any other error is an error, not a zero.
      if (/no such table/.test((err as Error)?.message ?? "")) return fallback;
      throw err;
    }
  };
  const cp = checkpointStorage(db);
  const ev = one<{ n: number; b: number | null }>("SELECT COUNT(*) AS n, SUM(length(payload)) AS b FROM ll_events", { n: 0, b: 0 });
  const bl = one<{ n: number; b: number | null }>("SELECT COUNT(*) AS n, SUM(length(data)) AS b FROM ll_blobs", { n: 0, b: 0 });
  const rs = revisions.stats();
  return {
    checkpoints: cp,
    ledger: { events: ev.n, payloadBytes: ev.b ?? 0, promptBlobs: bl.n, promptBlobBytes: bl.b ?? 0 },
    revisions: { count: rs.revisions, blobs: rs.blobs.count, storedBytes: rs.blobs.storedBytes, rawBytes: rs.blobs.rawBytes },
    index: { bytes: diskBytes(path.join(stateDir, "index.db")) + diskBytes(path.join(stateDir, "chroma")) },
    files: {
      stateDb: diskBytes(path.join(stateDir, "state.db")),
      wal: diskBytes(path.join(stateDir, "state.db-wal")),
      blobsDir: diskBytes(path.join(stateDir, "blobs")),
    },
  };
}
