import { RevisionError } from "./rev-errors.js";
import { decodeTree, sha256, type TreeEntry } from "./rev-tree.js";

const TREE_CACHE_MAX = 4096;

/**
 * The tree objects of a revision store, read by hash: each checked against its name, decoded, and
 * cached (tree objects are immutable, so a decoded one stays true).
 */
export class TreeObjects {
  private readonly cache = new Map<string, TreeEntry[]>();

  constructor(private readonly row: (hash: string) => { data: Buffer } | undefined) {}

  /** A tree object as stored, checked against its hash. */
  readonly data = (hash: string): Buffer => {
    const row = this.row(hash);
    if (!row) {
      throw new RevisionError("REV_TREE_MISSING", `tree object ${hash} is missing from the revision store (a revision refers to it)`);
    }
    if (sha256(row.data) !== hash) {
      throw new RevisionError("REV_TREE_CORRUPT", `tree object ${hash} is corrupt: its content no longer hashes to its name`);
    }
    return row.data;
  };

  /** A tree's entries, decoded. */
  readonly load = (hash: string): TreeEntry[] => {
    const hit = this.cache.get(hash);
    if (hit) return hit;
    const entries = decodeTree(this.data(hash), hash);
    if (this.cache.size >= TREE_CACHE_MAX) this.cache.clear();
    this.cache.set(hash, entries);
    return entries;
  };

  /** Forgets decoded trees (after gc removed some). */
  clear(): void {
    this.cache.clear();
  }
}
