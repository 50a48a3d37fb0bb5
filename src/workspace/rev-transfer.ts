import fs from "node:fs";
import { RevisionError } from "./rev-errors.js";
import { decodeTree, sha256, type TreeEntry } from "./rev-tree.js";
import type { RevisionInfo } from "./rev-types.js";

// The checks of copying revisions between stores (copyTo across state DBs, the PostgreSQL replica):
// which objects a revision reaches, and whether a copy brought every one of them. Objects are always
// stored before the trees that name them, so a store that has a tree has everything under it, and a
// copy need not look below a tree the other side has.

/** The tree objects (by hash, raw) and blob hashes revision `revId` reaches, not walking into trees `skip` has. */
export function reachableObjects(
  revId: string,
  treeData: (hash: string) => Buffer,
  loadTree: (hash: string) => TreeEntry[],
  skip: { has(hash: string): boolean },
): { trees: Map<string, Buffer>; blobs: string[] } {
  const trees = new Map<string, Buffer>();
  const blobs = new Set<string>();
  const walk = (hash: string) => {
    if (trees.has(hash) || skip.has(hash)) return;
    trees.set(hash, treeData(hash));
    for (const e of loadTree(hash)) {
      if (e.kind === "tree") walk(e.hash);
      else if (e.kind !== "large") blobs.add(e.hash);
    }
  };
  walk(revId);
  return { trees, blobs: [...blobs].sort() };
}

/** Tree objects copied from elsewhere, each checked against its name and decoded (REV_TREE_CORRUPT otherwise). */
export function decodeCopiedTrees(trees: ReadonlyMap<string, Buffer>, about: string): Map<string, TreeEntry[]> {
  const decoded = new Map<string, TreeEntry[]>();
  for (const [hash, data] of trees) {
    if (sha256(data) !== hash) {
      throw new RevisionError("REV_TREE_CORRUPT", `tree object ${hash}${about} is corrupt: its content does not hash to its name`);
    }
    decoded.set(hash, decodeTree(data, hash));
  }
  return decoded;
}

/** Throws REV_TREE_MISSING / REV_BLOB_MISSING unless every object the revision reaches was copied or is already here. */
export function checkCopyComplete(
  info: RevisionInfo,
  decoded: ReadonlyMap<string, TreeEntry[]>,
  has: { tree(hash: string): boolean; blob(hash: string): boolean },
  about: string,
): void {
  const seen = new Set<string>();
  const check = (hash: string) => {
    if (seen.has(hash)) return;
    seen.add(hash);
    const entries = decoded.get(hash);
    if (!entries) {
      if (has.tree(hash)) return;
      throw new RevisionError("REV_TREE_MISSING", `tree object ${hash} of revision ${info.revId}${about} was not copied; the revision is not stored`);
    }
    for (const e of entries) {
      if (e.kind === "tree") check(e.hash);
      else if (e.kind !== "large" && !has.blob(e.hash)) {
        throw new RevisionError("REV_BLOB_MISSING", `blob ${e.hash} of revision ${info.revId}${about} was not copied; the revision is not stored`);
      }
    }
  };
  check(info.revId);
}

/** Makes sure `newDir` can receive a copy (absent, empty, or holding only .ledgerloop/); returns its real path. */
export function prepareCopyTarget(newDir: string, revId: string): string {
  if (fs.existsSync(newDir)) {
    const present = fs.readdirSync(newDir).filter((n) => n !== ".ledgerloop");
    if (present.length > 0) {
      throw new RevisionError(
        "REV_TARGET_NOT_EMPTY",
        `cannot copy revision ${revId} into ${newDir}: the directory is not empty (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", …" : ""})`,
      );
    }
  } else {
    fs.mkdirSync(newDir, { recursive: true });
  }
  return fs.realpathSync(newDir);
}
