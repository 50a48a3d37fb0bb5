import type { RevisionCore } from "./rev-core.js";
import { RevisionError } from "./rev-errors.js";
import { compareEntries, sameCache } from "./rev-stat-cache.js";
import { buildTrees, type FlatEntry } from "./rev-tree.js";
import type { SnapshotResult } from "./rev-types.js";

// Taking a revision of a workspace (RevisionStore.snapshot): scan, build the trees, and commit
// trees, revision row, stat cache and head in one transaction.

/** A blob a snapshot relied on was removed (by a concurrent gc) before the revision was committed. */
class BlobVanished extends Error {}

/** Records the workspace as a revision, scanning again when a concurrent gc took a blob it relied on. */
export async function snapshotRetrying(core: RevisionCore, opts: { label?: string; reuseWalkAfter?: number }): Promise<SnapshotResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await snapshotOnce(core, opts);
    } catch (err) {
      // A concurrent gc removed a blob between our check and our commit: scan again, which stores it anew.
      if (err instanceof BlobVanished && attempt < 3) continue;
      if (err instanceof BlobVanished) {
        throw new RevisionError("REV_BLOB_MISSING", `snapshot of ${core.workspace} kept losing blobs to a concurrent gc: ${err.message}`);
      }
      throw err;
    }
  }
}

async function snapshotOnce(core: RevisionCore, opts: { label?: string; reuseWalkAfter?: number }): Promise<SnapshotResult> {
  const started = performance.now();
  // Another store or process moved this workspace's head (a restore): a kept walk may predate it.
  if ((core.stmts.getHead.get(core.workspace)?.gen ?? 0) !== core.cacheGen) core.tracker.invalidate();
  const base = core.loadCache();
  const baseGen = core.cacheGen;
  const baseRev = core.stmts.getHead.get(core.workspace)?.rev_id ?? null;
  const walk = opts.reuseWalkAfter === undefined ? await core.tracker.walk() : await core.tracker.current(opts.reuseWalkAfter);
  const scan = await core.scan("store", walk);
  const files = new Map<string, FlatEntry>();
  let bytes = 0;
  for (const [rel, e] of scan.now) {
    files.set(rel, { kind: e.kind, mode: e.mode, size: e.size, hash: e.hash });
    bytes += e.size;
  }
  const { root, trees } = buildTrees(files);
  const changed = compareEntries(base, scan.now);
  const cacheDirty = !sameCache(base, scan.now);
  let treesWritten = 0;
  let treeBytesWritten = 0;
  let reused = root === baseRev;

  if (root !== baseRev || cacheDirty) {
    core.db.transaction(() => {
      const head = core.stmts.getHead.get(core.workspace);
      const stale = (head?.gen ?? 0) !== baseGen;
      // Blobs this scan found already stored, or hashed from a stale cache, may have been collected
      // meanwhile; every row the new revision needs is checked under the write lock.
      const mustExist = stale ? new Set([...scan.now.values()].map((e) => e.hash)) : scan.fresh;
      for (const e of scan.now.values()) {
        if (e.kind !== "large" && mustExist.has(e.hash) && !core.blobs.present(e.hash)) throw new BlobVanished(e.hash);
      }
      if (root !== head?.rev_id) {
        for (const [hash, buf] of trees) {
          if (core.stmts.putTree.run(hash, buf).changes > 0) {
            treesWritten++;
            treeBytesWritten += buf.length;
          }
        }
        const r = core.stmts.putRev.run(root, new Date().toISOString(), opts.label ?? null, files.size, bytes);
        reused = r.changes === 0;
      }
      core.writeCache(stale ? null : base, scan.now);
      core.stmts.putHead.run(core.workspace, root, new Date().toISOString());
    }).immediate();
    core.cache = scan.now;
    core.cacheGen = core.stmts.getHead.get(core.workspace)!.gen;
  } else {
    reused = true;
  }

  return {
    revId: root,
    reused,
    changed,
    files,
    stats: {
      files: files.size,
      hashed: scan.hashed,
      bytesHashed: scan.bytesHashed,
      blobsWritten: scan.blobsWritten,
      blobBytesWritten: scan.blobBytesWritten,
      treesWritten,
      treeBytesWritten,
      large: scan.large,
      unreadable: scan.unreadable,
      ms: performance.now() - started,
    },
  };
}
