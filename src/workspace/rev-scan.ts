import { prepareBlob, type BlobStore, type PreparedBlob } from "./rev-blobs.js";
import { readEntry } from "./rev-fs.js";
import { entryOf, isRacy, sameStat, type CacheEntry } from "./rev-stat-cache.js";
import { largeIdentity, sha256 } from "./rev-tree.js";
import { isAlwaysSkipped } from "./ignore-rules.js";
import type { StatWalk } from "./walk.js";

const FLUSH_BLOB_BYTES = 32 * 1024 * 1024;
const YIELD_EVERY_BYTES = 8 * 1024 * 1024;
const YIELD_EVERY_FILES = 128;

/** What one scan found: every entry's content identity, and what it cost. */
export interface ScanResult {
  now: Map<string, CacheEntry>;
  unreadable: string[];
  hashed: number;
  bytesHashed: number;
  blobsWritten: number;
  blobBytesWritten: number;
  /** Blob hashes this scan computed itself (their rows are checked again at commit). */
  fresh: Set<string>;
  large: number;
}

/** What {@link scanWorkspace} works from. */
export interface ScanInput {
  workspace: string;
  /** The walk to read (the tracker's: a kept one, or one made for this scan). */
  walk: StatWalk;
  /** The stat cache of the workspace's head. */
  cache: Map<string, CacheEntry>;
  largeBytes: number;
  blobs: BlobStore;
  /** "store": new contents are stored as blobs; "hash": only hashed. */
  purpose: "store" | "hash";
}

/**
 * Reads a walk of the workspace and works out each entry's content hash: from the stat cache when the stat is
 * unchanged and trusted, else by reading it. With "store", new contents are stored as blobs.
 */
export async function scanWorkspace(o: ScanInput): Promise<ScanResult> {
  // Racy stamps are judged against when the walk began, as if it were made now.
  const t0 = o.walk.takenAt;
  const cache = o.cache;
  // A `.git` file (worktree or submodule pointer) is git's data as much as the directory is.
  const entries = o.walk.entries.filter((e) => !isAlwaysSkipped(e.rel));
  const res: ScanResult = {
    now: new Map(),
    unreadable: [],
    hashed: 0,
    bytesHashed: 0,
    blobsWritten: 0,
    blobBytesWritten: 0,
    fresh: new Set(),
    large: 0,
  };
  const pending = new Map<string, PreparedBlob>();
  let pendingBytes = 0;
  const flush = () => {
    const w = o.blobs.putMany([...pending.values()]);
    res.blobBytesWritten += w.bytes;
    res.blobsWritten += w.count;
    pending.clear();
    pendingBytes = 0;
  };
  let sinceYield = 0;
  let filesSinceYield = 0;

  for (const { rel, kind: walkKind, st } of entries) {
    const kind: CacheEntry["kind"] = walkKind === "symlink" ? "symlink" : st.size > o.largeBytes ? "large" : "file";
    const mode = kind === "symlink" ? 0 : st.mode & 0o777;
    const known = cache.get(rel);
    if (known && known.trusted && known.kind === kind && sameStat(known, st, mode)) {
      res.now.set(rel, known);
      if (kind === "large") res.large++;
      continue;
    }
    if (kind === "large") {
      res.large++;
      res.now.set(rel, entryOf("large", mode, st, largeIdentity(st.size, st.mtimeMs), true));
      continue;
    }
    const read = readEntry(o.workspace, rel, kind, o.largeBytes);
    if (read === "vanished") continue;
    if (read === "unreadable") {
      res.unreadable.push(rel);
      continue;
    }
    if (read.kind === "large") {
      res.large++;
      res.now.set(rel, entryOf("large", read.st.mode & 0o777, read.st, largeIdentity(read.st.size, read.st.mtimeMs), true));
      continue;
    }
    const hash = sha256(read.content);
    res.hashed++;
    res.bytesHashed += read.content.length;
    res.fresh.add(hash);
    const trusted = read.stable && !isRacy(read.st, t0);
    res.now.set(rel, entryOf(read.kind, read.kind === "symlink" ? 0 : read.st.mode & 0o777, read.st, hash, trusted));
    if (o.purpose === "store" && !pending.has(hash) && !o.blobs.has(hash)) {
      const blob = prepareBlob(read.content, hash);
      pending.set(hash, blob);
      pendingBytes += blob.data.length;
      if (pendingBytes >= FLUSH_BLOB_BYTES) flush();
    }
    sinceYield += read.content.length;
    if (++filesSinceYield >= YIELD_EVERY_FILES || sinceYield >= YIELD_EVERY_BYTES) {
      sinceYield = 0;
      filesSinceYield = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  if (pending.size > 0) flush();
  res.unreadable.sort();
  return res;
}
