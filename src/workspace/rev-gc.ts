import fs from "node:fs";
import path from "node:path";
import type { Database } from "../sqlite/driver.js";
import type { BlobStore } from "./rev-blobs.js";
import { collectTrees, type TreeEntry } from "./rev-tree.js";
import type { GcResult, RevisionStoreStats } from "./rev-types.js";

// Garbage collection and sizes of the revision store: jobs over the whole state DB, not one workspace.

/** What gc needs of the store. */
export interface GcInput {
  blobs: BlobStore;
  blobsDir: string;
  loadTree: (hash: string) => TreeEntry[];
  /** Called before the live trees are read and after the dead ones are deleted. */
  clearTreeCache: () => void;
}

/**
 * Deletes every revision that is neither in `liveRevIds` nor some workspace's head, then every tree
 * and blob no remaining revision reaches (blob files included, and stray blob files an interrupted
 * snapshot left over an hour ago).
 */
export function gcRevisions(db: Database, o: GcInput, liveRevIds: Set<string>): GcResult {
  const freedFiles: string[] = [];
  const result = db
    .transaction((): GcResult => {
      const all = new Set((db.prepare("SELECT rev_id FROM ll_rev_revisions").all() as { rev_id: string }[]).map((r) => r.rev_id));
      const heads = new Set((db.prepare("SELECT rev_id FROM ll_rev_heads").all() as { rev_id: string }[]).map((r) => r.rev_id));
      const unknownLive = [...liveRevIds].filter((id) => !all.has(id)).sort();
      const keptHeads = [...heads].filter((id) => !liveRevIds.has(id) && all.has(id)).sort();
      const keep = new Set([...all].filter((id) => liveRevIds.has(id) || heads.has(id)));
      const delRev = db.prepare("DELETE FROM ll_rev_revisions WHERE rev_id = ?");
      let revisionsDeleted = 0;
      for (const id of all) if (!keep.has(id)) revisionsDeleted += delRev.run(id).changes;

      const liveTrees = new Set<string>();
      const liveBlobs = new Set<string>();
      o.clearTreeCache();
      for (const id of keep) collectTrees(o.loadTree, id, liveTrees, liveBlobs);

      let bytesReclaimed = 0;
      let treesDeleted = 0;
      let blobsDeleted = 0;
      const delTree = db.prepare("DELETE FROM ll_rev_trees WHERE hash = ?");
      for (const t of db.prepare("SELECT hash, length(data) AS n FROM ll_rev_trees").all() as { hash: string; n: number }[]) {
        if (liveTrees.has(t.hash)) continue;
        delTree.run(t.hash);
        treesDeleted++;
        bytesReclaimed += t.n;
      }
      const delBlob = db.prepare("DELETE FROM ll_rev_blobs WHERE hash = ?");
      const rows = db.prepare("SELECT hash, stored, in_file FROM ll_rev_blobs").all() as { hash: string; stored: number; in_file: number }[];
      for (const b of rows) {
        if (liveBlobs.has(b.hash)) continue;
        delBlob.run(b.hash);
        blobsDeleted++;
        bytesReclaimed += b.stored;
        if (b.in_file) freedFiles.push(o.blobs.filePath(b.hash));
      }
      return { revisionsDeleted, treesDeleted, blobsDeleted, bytesReclaimed, keptHeads, unknownLive };
    })
    .immediate();
  o.clearTreeCache();
  // A file goes only while, under the write lock, no row names it: a snapshot may have stored the
  // same content again since the rows were deleted. A crash before this leaves strays, swept below.
  if (freedFiles.length > 0) {
    db.transaction(() => {
      for (const f of freedFiles) if (!o.blobs.has(path.basename(f))) fs.rmSync(f, { force: true });
    }).immediate();
  }
  result.bytesReclaimed += sweepStrayBlobFiles(db, o.blobsDir);
  return result;
}

/** Blob files with no row, older than an hour (younger ones may belong to a snapshot in flight). */
function sweepStrayBlobFiles(db: Database, blobsDir: string): number {
  let freed = 0;
  if (!fs.existsSync(blobsDir)) return 0;
  const cutoff = Date.now() - 3600_000;
  const inFile = db.prepare<[string], { one: number }>("SELECT 1 AS one FROM ll_rev_blobs WHERE hash = ? AND in_file = 1");
  for (const sub of fs.readdirSync(blobsDir)) {
    const dir = path.join(blobsDir, sub);
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      const file = path.join(dir, name);
      const st = fs.statSync(file, { throwIfNoEntry: false });
      if (!st || !st.isFile() || st.mtimeMs > cutoff) continue;
      const hash = name.slice(0, 64);
      if (name.length === 64 && inFile.get(hash)) continue;
      fs.rmSync(file, { force: true });
      freed += st.size;
    }
  }
  return freed;
}

/** Counts and sizes of revisions, trees, blobs and stat cache rows in this state DB. */
export function revisionStats(db: Database): RevisionStoreStats {
  const one = <T>(sql: string) => db.prepare(sql).get() as T;
  const trees = one<{ c: number; b: number | null }>("SELECT COUNT(*) AS c, SUM(length(data)) AS b FROM ll_rev_trees");
  const inDb = one<{ c: number; b: number | null; r: number | null }>(
    "SELECT COUNT(*) AS c, SUM(stored) AS b, SUM(size) AS r FROM ll_rev_blobs WHERE in_file = 0",
  );
  const inFiles = one<{ c: number; b: number | null; r: number | null }>(
    "SELECT COUNT(*) AS c, SUM(stored) AS b, SUM(size) AS r FROM ll_rev_blobs WHERE in_file = 1",
  );
  const stat = one<{ w: number; c: number }>("SELECT COUNT(DISTINCT workspace) AS w, COUNT(*) AS c FROM ll_rev_stat");
  return {
    revisions: one<{ c: number }>("SELECT COUNT(*) AS c FROM ll_rev_revisions").c,
    trees: { count: trees.c, bytes: trees.b ?? 0 },
    blobs: {
      count: inDb.c + inFiles.c,
      rawBytes: (inDb.r ?? 0) + (inFiles.r ?? 0),
      storedBytes: (inDb.b ?? 0) + (inFiles.b ?? 0),
      inDb: { count: inDb.c, bytes: inDb.b ?? 0 },
      inFiles: { count: inFiles.c, bytes: inFiles.b ?? 0 },
    },
    statCache: { workspaces: stat.w, rows: stat.c },
  };
}
