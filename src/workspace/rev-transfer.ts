import { decodeBlob, type PreparedBlob } from "./rev-blobs.js";
import type { RevisionCore } from "./rev-core.js";
import { RevisionError } from "./rev-errors.js";
import { decodeTree, sha256, type TreeEntry } from "./rev-tree.js";
import type { RevisionInfo, RevisionObjects } from "./rev-types.js";

// Copying revisions between stores: copyTo across state DBs, the PostgreSQL replica (pg-revisions.ts).
// Objects are always stored before the trees that name them, so a store that has a tree has
// everything under it, and a copy need not look below a tree the other side has.

/**
 * A revision's row, tree objects (verified) and the blobs they name. Trees for which
 * `skipTrees.has` is true are neither returned nor walked into.
 */
export function exportObjects(core: RevisionCore, revId: string, skipTrees: { has(hash: string): boolean }): RevisionObjects {
  const info = core.info(revId);
  if (!info) throw new RevisionError("REV_NOT_FOUND", `no workspace revision ${revId} in this state database`);
  const trees = new Map<string, Buffer>();
  const blobs = new Set<string>();
  const walk = (hash: string) => {
    if (trees.has(hash) || skipTrees.has(hash)) return;
    trees.set(hash, core.treeData(hash));
    for (const e of core.loadTree(hash)) {
      if (e.kind === "tree") walk(e.hash);
      else if (e.kind !== "large") blobs.add(e.hash);
    }
  };
  walk(revId);
  return { info, trees, blobs: [...blobs].sort() };
}

/**
 * Stores blobs copied from elsewhere, each verified against its size and hash first: a damaged one
 * is a RevisionError naming its hash (`from` says where it came from), and nothing of the batch is stored.
 */
export function importBlobs(core: RevisionCore, blobs: PreparedBlob[], from?: string): { count: number; bytes: number } {
  for (const b of blobs) decodeBlob(b, from);
  return core.blobs.putMany(blobs);
}

/**
 * Records a revision copied from elsewhere: its trees (verified) and its row, in one transaction,
 * once every tree and blob it reaches is either in `trees` or already here. A revision whose
 * objects are missing is refused with the hash that is missing, never stored half.
 */
export function importObjects(core: RevisionCore, info: RevisionInfo, trees: ReadonlyMap<string, Buffer>, from?: string): void {
  const about = from ? ` (${from})` : "";
  const decoded = new Map<string, TreeEntry[]>();
  for (const [hash, data] of trees) {
    if (sha256(data) !== hash) {
      throw new RevisionError("REV_TREE_CORRUPT", `tree object ${hash}${about} is corrupt: its content does not hash to its name`);
    }
    decoded.set(hash, decodeTree(data, hash));
  }
  core.db.transaction(() => {
    const seen = new Set<string>();
    const check = (hash: string) => {
      if (seen.has(hash)) return;
      seen.add(hash);
      const entries = decoded.get(hash);
      if (!entries) {
        if (core.hasTree(hash)) return;
        throw new RevisionError("REV_TREE_MISSING", `tree object ${hash} of revision ${info.revId}${about} was not copied; the revision is not stored`);
      }
      for (const e of entries) {
        if (e.kind === "tree") check(e.hash);
        else if (e.kind !== "large" && !core.blobs.present(e.hash)) {
          throw new RevisionError("REV_BLOB_MISSING", `blob ${e.hash} of revision ${info.revId}${about} was not copied; the revision is not stored`);
        }
      }
    };
    check(info.revId);
    for (const [hash, data] of trees) core.stmts.putTree.run(hash, data);
    core.stmts.putRev.run(info.revId, info.createdAt, info.label, info.files, info.bytes);
  }).immediate();
}

/** Copies a revision's row, trees and blobs from another store (on another DB) into `to`. */
export function importRevision(from: RevisionCore, to: RevisionCore, revId: string): void {
  if (from.db === to.db || to.info(revId)) return;
  const objs = exportObjects(from, revId, { has: (h: string) => to.hasTree(h) });
  const missing = objs.blobs.filter((h) => !to.blobs.present(h));
  for (let i = 0; i < missing.length; i += 256) {
    importBlobs(to, missing.slice(i, i + 256).map((h) => from.blobs.getStored(h)));
  }
  importObjects(to, objs.info, objs.trees);
}
