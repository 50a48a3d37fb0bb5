import fs from "node:fs";
import path from "node:path";
import type { Stats } from "node:fs";
import type Database from "better-sqlite3";
import { ConfigError } from "../errors.js";
import { BlobStore, prepareBlob, type PreparedBlob } from "./rev-blobs.js";
import { diffOne, pairRenames, type FileDiffStat } from "./rev-diff.js";
import { RevisionError } from "./rev-errors.js";
import {
  buildTrees,
  collectTrees,
  decodeTree,
  diffTrees,
  flattenTree,
  largeIdentity,
  sha256,
  type FlatEntry,
  type TreeEntry,
} from "./rev-tree.js";
import { assertNotRuntimeState } from "./paths.js";
import {
  dirsOf,
  keptContent,
  lstatOrUndefined,
  readEntry,
  removeEmptiedDirs,
  removeEmptyTree,
  unlinkIfPresent,
  writeAtomically,
} from "./rev-fs.js";
import { walkRevisionEntries } from "./rev-walk.js";

// Workspace revisions: the files of a workspace at a checkpoint, recorded content-addressed in the
// state DB so that rewind and fork can put them back.
//
//   ll_rev_blobs      file contents by sha256, deduplicated (rev-blobs.ts: small ones inline, big ones
//                     as files under <stateDir>/blobs/)
//   ll_rev_trees      one object per directory (rev-tree.ts); the root tree's hash is the revision id
//   ll_rev_revisions  the revisions (id, time, label, file count, bytes)
//   ll_rev_heads      per workspace: the revision it was last snapshotted as or restored to
//   ll_rev_stat       per workspace and path: the stat of the file when that head was taken, and its
//                     hash, so an unchanged file is not read again
//
// Ordering makes a crash harmless: blobs are committed first (files fsync'd before their rows), the
// trees, the revision row, the stat cache and the head last, in one transaction. A crash in between
// leaves blobs nothing refers to, which gc removes; no revision is ever visible half-written.

export { RevisionError, type RevisionErrorCode } from "./rev-errors.js";
export { formatStat, type FileDiffStat } from "./rev-diff.js";
export type { FlatEntry } from "./rev-tree.js";

/** Files above this size are recorded by stat only (see {@link RevisionStoreOptions.largeFileBytes}). */
export const DEFAULT_LARGE_FILE_BYTES = 50 * 1024 * 1024;
/** Blobs whose stored form is above this size live as files in the blobs directory, not in SQLite. */
export const DEFAULT_INLINE_BLOB_BYTES = 1024 * 1024;

/** Options of {@link RevisionStore}. */
export interface RevisionStoreOptions {
  /** Directory for blobs kept as files. Default: `blobs/` next to the state DB file. */
  blobsDir?: string;
  /**
   * Files strictly larger than this are recorded by size and mtime only (tree kind `large`): a change
   * to them shows in status, snapshots and diffs, but their content is never stored, so restore
   * cannot bring them back and therefore never deletes or overwrites one either (it lists them in
   * `skipped`). Default 50 MiB.
   */
  largeFileBytes?: number;
  /** Stored blobs above this many bytes go to files instead of SQLite rows. Default 1 MiB. */
  inlineBlobBytes?: number;
}

/** Workspace-relative paths that differ, each list sorted. */
export interface FileChangeLists {
  created: string[];
  modified: string[];
  deleted: string[];
}

/** What one {@link RevisionStore.snapshot} did. */
export interface SnapshotStats {
  /** Files (and symlinks) in the revision. */
  files: number;
  /** Files read and hashed: new, changed by stat, or not trusted since their last snapshot (see racy). */
  hashed: number;
  bytesHashed: number;
  /** New blobs stored and their stored (compressed) bytes. */
  blobsWritten: number;
  blobBytesWritten: number;
  /** New tree objects stored and their bytes. */
  treesWritten: number;
  treeBytesWritten: number;
  /** Files over the size limit, recorded by stat only. */
  large: number;
  /** Files that could not be read (permissions): left out of the revision and listed here. */
  unreadable: string[];
  ms: number;
}

/** Result of {@link RevisionStore.snapshot}. */
export interface SnapshotResult {
  /** The revision id: sha256 of the root tree, so equal workspaces give equal ids. */
  revId: string;
  /** The workspace equals an already stored revision (the previous one when nothing changed): nothing was written. */
  reused: boolean;
  /** Changes since this workspace's previous revision (everything is created on the first). */
  changed: FileChangeLists;
  /** The revision's entries by path: what `files(revId)` returns, without reading the trees back. */
  files: ReadonlyMap<string, FlatEntry>;
  stats: SnapshotStats;
}

/** A path restore did not touch, and why. */
export interface SkippedPath {
  path: string;
  reason: "large" | "unreadable";
}

/** Result of {@link RevisionStore.restore}: what changed (or would, with dryRun). */
export interface RestoreResult extends FileChangeLists {
  revId: string;
  dryRun: boolean;
  /** Paths left as they are: large files (content never stored) and unreadable ones. */
  skipped: SkippedPath[];
  ms: number;
}

/** Edits made to the workspace since its last revision (snapshot or restore). */
export interface WorkspaceStatus extends FileChangeLists {
  /** The revision the workspace is compared against; null when it has none yet. */
  baseRevId: string | null;
  clean: boolean;
}

/** A stored revision. */
export interface RevisionInfo {
  revId: string;
  createdAt: string;
  label: string | null;
  files: number;
  /** Total bytes of the files it describes (not what it costs to store). */
  bytes: number;
}

/** Result of {@link RevisionStore.gc}. */
export interface GcResult {
  revisionsDeleted: number;
  treesDeleted: number;
  blobsDeleted: number;
  /** Stored bytes of the deleted trees and blobs (SQLite reuses freed pages; file blobs free disk space). */
  bytesReclaimed: number;
  /** Revisions kept because they are some workspace's head, though not in the live set. */
  keptHeads: string[];
  /** Ids in the live set that name no stored revision. */
  unknownLive: string[];
}

/** Sizes of the revision store ({@link RevisionStore.stats}). */
export interface RevisionStoreStats {
  revisions: number;
  trees: { count: number; bytes: number };
  blobs: {
    count: number;
    /** Bytes of the contents before compression. */
    rawBytes: number;
    /** Bytes at rest, SQLite rows and files together. */
    storedBytes: number;
    inDb: { count: number; bytes: number };
    inFiles: { count: number; bytes: number };
  };
  statCache: { workspaces: number; rows: number };
}

/** Result of {@link RevisionStore.copyTo}. */
export interface CopyResult {
  revId: string;
  dir: string;
  files: number;
  bytes: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ll_rev_trees (
  hash TEXT PRIMARY KEY,
  data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS ll_rev_revisions (
  rev_id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL,
  label TEXT,
  files INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ll_rev_heads (
  workspace TEXT PRIMARY KEY,
  rev_id TEXT NOT NULL,
  gen INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ll_rev_stat (
  workspace TEXT NOT NULL,
  path TEXT NOT NULL,
  kind TEXT NOT NULL,
  mode INTEGER NOT NULL,
  size INTEGER NOT NULL,
  mtime REAL NOT NULL,
  ctime REAL NOT NULL,
  ino INTEGER NOT NULL,
  hash TEXT NOT NULL,
  trusted INTEGER NOT NULL,
  PRIMARY KEY (workspace, path)
) WITHOUT ROWID;
`;

// "Racy" entries, as git calls them: a file whose timestamp is this close to the moment it was
// stat'ed could be rewritten within the same timestamp tick with the same size, and the stat would
// not show it. Such entries are re-hashed at the next snapshot instead of trusted. Linux stamps files
// from a coarse clock (a tick, <= 10 ms); a whole-second stamp hints at a file system with 1-2 s
// granularity (FAT, HFS+, some network mounts).
const RACY_MS = 100;
const RACY_COARSE_MS = 2000;
const FLUSH_BLOB_BYTES = 32 * 1024 * 1024;
const YIELD_EVERY_BYTES = 8 * 1024 * 1024;
const YIELD_EVERY_FILES = 128;
/** Restore reads and verifies every blob before touching the workspace; up to this much is kept for the writes. */
const RESTORE_PRELOAD_BYTES = 256 * 1024 * 1024;
const TREE_CACHE_MAX = 4096;

/** What the store remembers of one workspace path (a row of ll_rev_stat). */
interface CacheEntry {
  kind: FlatEntry["kind"];
  mode: number;
  size: number;
  mtime: number;
  ctime: number;
  ino: number;
  hash: string;
  trusted: boolean;
}

interface StatRow {
  path: string;
  kind: string;
  mode: number;
  size: number;
  mtime: number;
  ctime: number;
  ino: number;
  hash: string;
  trusted: number;
}

interface ScanResult {
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

/** A blob a snapshot relied on was removed (by a concurrent gc) before the revision was committed. */
class BlobVanished extends Error {}

/**
 * Content-addressed revisions of one workspace, stored in the state DB (see the module comment).
 * Several stores (several workspaces) may share one DB and its blobs.
 */
export class RevisionStore {
  /** The workspace (realpath'd when it exists). */
  readonly workspace: string;
  /** Where blobs kept as files live. */
  readonly blobsDir: string;
  private readonly db: Database.Database;
  private readonly blobs: BlobStore;
  private readonly largeBytes: number;
  private readonly opts: RevisionStoreOptions;
  private readonly stmts: ReturnType<RevisionStore["prepare"]>;
  private readonly treeCache = new Map<string, TreeEntry[]>();
  private cache: Map<string, CacheEntry> | null = null;
  private cacheGen = -1;

  constructor(db: Database.Database, workspace: string, opts: RevisionStoreOptions = {}) {
    this.db = db;
    this.opts = opts;
    this.workspace = realOrResolved(workspace);
    if (!opts.blobsDir && (db.memory || db.name === "")) {
      throw new ConfigError("an in-memory state DB needs an explicit blobsDir for its revision store");
    }
    this.blobsDir = opts.blobsDir ?? path.join(path.dirname(db.name), "blobs");
    this.largeBytes = opts.largeFileBytes ?? DEFAULT_LARGE_FILE_BYTES;
    if (!db.readonly) db.exec(SCHEMA);
    this.blobs = new BlobStore(db, this.blobsDir, opts.inlineBlobBytes ?? DEFAULT_INLINE_BLOB_BYTES);
    this.stmts = this.prepare();
  }

  private prepare() {
    const db = this.db;
    return {
      getTree: db.prepare<[string], { data: Buffer }>("SELECT data FROM ll_rev_trees WHERE hash = ?"),
      putTree: db.prepare("INSERT OR IGNORE INTO ll_rev_trees (hash, data) VALUES (?, ?)"),
      getRev: db.prepare<[string], { rev_id: string; created_at: string; label: string | null; files: number; bytes: number }>(
        "SELECT rev_id, created_at, label, files, bytes FROM ll_rev_revisions WHERE rev_id = ?",
      ),
      byPrefix: db.prepare<[string, string], { rev_id: string }>(
        "SELECT rev_id FROM ll_rev_revisions WHERE rev_id >= ? AND rev_id < ? ORDER BY rev_id LIMIT 2",
      ),
      putRev: db.prepare(
        "INSERT OR IGNORE INTO ll_rev_revisions (rev_id, created_at, label, files, bytes) VALUES (?, ?, ?, ?, ?)",
      ),
      getHead: db.prepare<[string], { rev_id: string; gen: number; updated_at: string }>(
        "SELECT rev_id, gen, updated_at FROM ll_rev_heads WHERE workspace = ?",
      ),
      putHead: db.prepare(
        `INSERT INTO ll_rev_heads (workspace, rev_id, gen, updated_at) VALUES (?, ?, 1, ?)
         ON CONFLICT(workspace) DO UPDATE SET rev_id = excluded.rev_id, gen = ll_rev_heads.gen + 1, updated_at = excluded.updated_at`,
      ),
      statRows: db.prepare<[string], StatRow>(
        "SELECT path, kind, mode, size, mtime, ctime, ino, hash, trusted FROM ll_rev_stat WHERE workspace = ?",
      ),
      putStat: db.prepare(
        `INSERT INTO ll_rev_stat (workspace, path, kind, mode, size, mtime, ctime, ino, hash, trusted)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(workspace, path) DO UPDATE SET kind = excluded.kind, mode = excluded.mode, size = excluded.size,
           mtime = excluded.mtime, ctime = excluded.ctime, ino = excluded.ino, hash = excluded.hash, trusted = excluded.trusted`,
      ),
      delStat: db.prepare("DELETE FROM ll_rev_stat WHERE workspace = ? AND path = ?"),
      clearStat: db.prepare("DELETE FROM ll_rev_stat WHERE workspace = ?"),
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Snapshot

  /**
   * Records the workspace as a revision: every non-ignored file and symlink (untracked and shell-made
   * included; .git/ and .ledgerloop/ never). Unchanged files are recognised by their stat and not read;
   * a workspace equal to the previous revision returns that revision's id without writing one.
   */
  async snapshot(opts: { label?: string } = {}): Promise<SnapshotResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.snapshotOnce(opts);
      } catch (err) {
        // A concurrent gc removed a blob between our check and our commit: scan again, which stores it anew.
        if (err instanceof BlobVanished && attempt < 3) continue;
        if (err instanceof BlobVanished) {
          throw new RevisionError("REV_BLOB_MISSING", `snapshot of ${this.workspace} kept losing blobs to a concurrent gc: ${err.message}`);
        }
        throw err;
      }
    }
  }

  private async snapshotOnce(opts: { label?: string }): Promise<SnapshotResult> {
    const started = performance.now();
    const base = this.loadCache();
    const baseGen = this.cacheGen;
    const baseRev = this.stmts.getHead.get(this.workspace)?.rev_id ?? null;
    const scan = await this.scan("store");
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
      this.db.transaction(() => {
        const head = this.stmts.getHead.get(this.workspace);
        const stale = (head?.gen ?? 0) !== baseGen;
        // Blobs this scan found already stored, or hashed from a stale cache, may have been collected
        // meanwhile; every row the new revision needs is checked under the write lock.
        const mustExist = stale ? new Set([...scan.now.values()].map((e) => e.hash)) : scan.fresh;
        for (const e of scan.now.values()) {
          if (e.kind !== "large" && mustExist.has(e.hash) && !this.blobs.present(e.hash)) throw new BlobVanished(e.hash);
        }
        if (root !== head?.rev_id) {
          for (const [hash, buf] of trees) {
            if (this.stmts.putTree.run(hash, buf).changes > 0) {
              treesWritten++;
              treeBytesWritten += buf.length;
            }
          }
          const r = this.stmts.putRev.run(root, new Date().toISOString(), opts.label ?? null, files.size, bytes);
          reused = r.changes === 0;
        }
        this.writeCache(stale ? null : base, scan.now);
        this.stmts.putHead.run(this.workspace, root, new Date().toISOString());
      }).immediate();
      this.cache = scan.now;
      this.cacheGen = this.stmts.getHead.get(this.workspace)!.gen;
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

  /**
   * Walks the workspace and works out each entry's content hash: from the stat cache when the stat is
   * unchanged and trusted, else by reading it. With "store", new contents are stored as blobs.
   */
  private async scan(purpose: "store" | "hash"): Promise<ScanResult> {
    const t0 = Date.now();
    const cache = this.loadCache();
    const entries = await walkRevisionEntries(this.workspace);
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
      const w = this.blobs.putMany([...pending.values()]);
      res.blobBytesWritten += w.bytes;
      res.blobsWritten += w.count;
      pending.clear();
      pendingBytes = 0;
    };
    let sinceYield = 0;
    let filesSinceYield = 0;

    for (const { rel, kind: walkKind, st } of entries) {
      const kind: CacheEntry["kind"] = walkKind === "symlink" ? "symlink" : st.size > this.largeBytes ? "large" : "file";
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
      const read = readEntry(path.join(this.workspace, rel), kind, this.largeBytes);
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
      if (purpose === "store" && !pending.has(hash) && !this.blobs.has(hash)) {
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

  // ---------------------------------------------------------------------------------------------
  // Status

  /** Edits made to the workspace since its last revision (by anyone: the agent, a shell, the user); reads only. */
  async status(): Promise<WorkspaceStatus> {
    const base = this.loadCache();
    const head = this.stmts.getHead.get(this.workspace);
    const scan = await this.scan("hash");
    const changed = compareEntries(base, scan.now);
    // An unreadable file cannot be compared; it counts as an edit so nothing is rewound over it blindly.
    for (const rel of scan.unreadable) {
      if (base.has(rel)) changed.modified.push(rel);
      else changed.created.push(rel);
    }
    changed.modified.sort();
    changed.created.sort();
    const clean = changed.created.length + changed.modified.length + changed.deleted.length === 0;
    return { baseRevId: head?.rev_id ?? null, clean, ...changed };
  }

  // ---------------------------------------------------------------------------------------------
  // Restore

  /**
   * Makes the workspace that revision: writes what differs (temp file + rename, one file at a time),
   * deletes non-ignored files that are not in it, removes directories that end up empty. Ignored files,
   * .git/ and .ledgerloop/ are never touched, nor large or unreadable files (listed in `skipped`).
   * It overwrites edits made since the last snapshot: check {@link status} first (rewind does).
   * Every blob is read and verified before the first file is changed.
   */
  async restore(revId: string, opts: { dryRun?: boolean } = {}): Promise<RestoreResult> {
    return this.restoreInto(this.resolve(revId), opts.dryRun ?? false);
  }

  private async restoreInto(revId: string, dryRun: boolean): Promise<RestoreResult> {
    const started = performance.now();
    const target = flattenTree(this.loadTree, revId);
    const scan = await this.scan("hash");
    const cur = scan.now;
    const created: string[] = [];
    const modified: string[] = [];
    const deleted: string[] = [];
    const skipped: SkippedPath[] = scan.unreadable.map((p) => ({ path: p, reason: "unreadable" as const }));
    const unreadable = new Set(scan.unreadable);
    const writes: Array<{ rel: string; e: FlatEntry; chmodOnly: boolean }> = [];

    for (const [rel, c] of cur) {
      if (target.has(rel)) continue;
      if (c.kind === "large") skipped.push({ path: rel, reason: "large" });
      else deleted.push(rel);
    }
    for (const [rel, t] of target) {
      // Trees come from this store's own walk, which never records these; a damaged DB still must not
      // make restore write into .git/ or .ledgerloop/.
      assertNotRuntimeState(rel);
      if (unreadable.has(rel)) continue;
      const c = cur.get(rel);
      if (t.kind === "large" || c?.kind === "large") {
        if (!(c && c.kind === t.kind && c.hash === t.hash)) skipped.push({ path: rel, reason: "large" });
        continue;
      }
      if (!c) {
        created.push(rel);
        writes.push({ rel, e: t, chmodOnly: false });
      } else if (c.kind !== t.kind || c.hash !== t.hash) {
        modified.push(rel);
        writes.push({ rel, e: t, chmodOnly: false });
      } else if (c.mode !== t.mode) {
        modified.push(rel);
        writes.push({ rel, e: t, chmodOnly: true });
      }
    }
    skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const result = (): RestoreResult => ({
      revId,
      dryRun,
      created: created.sort(),
      modified: modified.sort(),
      deleted: deleted.sort(),
      skipped,
      ms: performance.now() - started,
    });

    // Everything that can fail is checked before the first change: paths blocked by something restore
    // may not remove, then every blob (read and verified).
    const deletedSet = new Set(deleted);
    this.checkConflicts(writes, deletedSet);
    const contents = new Map<string, Buffer>();
    let held = 0;
    for (const w of writes) {
      if (w.chmodOnly || contents.has(w.e.hash)) continue;
      const data = this.blobs.get(w.e.hash, `${w.rel} in revision ${revId}`);
      if (held + data.length <= RESTORE_PRELOAD_BYTES) {
        contents.set(w.e.hash, data);
        held += data.length;
      }
    }
    if (dryRun) return result();

    const targetDirs = dirsOf(target.keys());
    for (const rel of deleted) unlinkIfPresent(path.join(this.workspace, rel));
    removeEmptiedDirs(this.workspace, deleted, targetDirs);
    for (const w of writes) {
      // A file replacing a directory: what is left of the directory is empty subdirectories.
      if (!w.chmodOnly && lstatOrUndefined(path.join(this.workspace, w.rel))?.isDirectory()) {
        removeEmptyTree(path.join(this.workspace, w.rel));
      }
    }

    const tWrite = Date.now();
    const ensured = new Set<string>();
    const written = new Map<string, CacheEntry>();
    for (const w of writes) {
      const abs = path.join(this.workspace, w.rel);
      this.ensureParent(w.rel, ensured);
      if (w.chmodOnly) {
        fs.chmodSync(abs, w.e.mode);
      } else {
        const data = contents.get(w.e.hash) ?? this.blobs.get(w.e.hash, `${w.rel} in revision ${revId}`);
        writeAtomically(abs, w.rel, w.e, data);
      }
      const st = fs.lstatSync(abs);
      written.set(w.rel, entryOf(w.e.kind, w.e.mode, st, w.e.hash, !isRacy(st, tWrite)));
    }

    // The stat cache now describes the restored files, so status() is clean and the next snapshot
    // reads only what changes from here.
    const next = new Map<string, CacheEntry>();
    for (const [rel, t] of target) {
      const c = written.get(rel) ?? cur.get(rel);
      if (c && c.hash === t.hash && c.kind === t.kind) next.set(rel, c);
    }
    this.db.transaction(() => {
      const head = this.stmts.getHead.get(this.workspace);
      this.writeCache((head?.gen ?? 0) === this.cacheGen && this.cache ? this.cache : null, next);
      this.stmts.putHead.run(this.workspace, revId, new Date().toISOString());
    }).immediate();
    this.cache = next;
    this.cacheGen = this.stmts.getHead.get(this.workspace)!.gen;
    return result();
  }

  /**
   * Throws REV_RESTORE_CONFLICT when a write is blocked by something restore will not remove: a file or
   * symlink (ignored, large, unreadable) where the revision needs a directory, or a directory holding
   * such things where the revision has a file.
   */
  private checkConflicts(writes: Array<{ rel: string; chmodOnly: boolean }>, deleted: Set<string>): void {
    const checked = new Set<string>();
    for (const w of writes) {
      if (w.chmodOnly) continue;
      const parts = w.rel.split("/");
      let dir = "";
      for (let i = 0; i < parts.length - 1; i++) {
        dir = dir === "" ? parts[i]! : `${dir}/${parts[i]}`;
        if (checked.has(dir)) continue;
        checked.add(dir);
        const st = lstatOrUndefined(path.join(this.workspace, dir));
        if (st && !st.isDirectory() && !deleted.has(dir)) {
          throw new RevisionError(
            "REV_RESTORE_CONFLICT",
            `cannot restore ${w.rel}: ${dir} is a ${st.isSymbolicLink() ? "symlink" : "file"} outside the workspace's revisions ` +
              `(ignored, large or unreadable), where the revision has a directory; move it away and retry. Nothing was changed.`,
          );
        }
      }
      const abs = path.join(this.workspace, w.rel);
      if (lstatOrUndefined(abs)?.isDirectory()) {
        const kept = keptContent(abs, w.rel, deleted);
        if (kept !== undefined) {
          throw new RevisionError(
            "REV_RESTORE_CONFLICT",
            `cannot restore ${w.rel}: a directory is in its place and holds ${kept}, which is outside the workspace's ` +
              `revisions (ignored?); move it away and retry. Nothing was changed.`,
          );
        }
      }
    }
  }

  /** Creates the parent directories of `rel`, refusing to go through anything but a real directory. */
  private ensureParent(rel: string, ensured: Set<string>): void {
    const parts = rel.split("/");
    let dir = "";
    for (let i = 0; i < parts.length - 1; i++) {
      dir = dir === "" ? parts[i]! : `${dir}/${parts[i]}`;
      if (ensured.has(dir)) continue;
      const abs = path.join(this.workspace, dir);
      const st = lstatOrUndefined(abs);
      if (!st) fs.mkdirSync(abs);
      else if (!st.isDirectory()) {
        throw new RevisionError(
          "REV_RESTORE_CONFLICT",
          `cannot restore ${rel}: ${dir} is a ${st.isSymbolicLink() ? "symlink" : "file"} that is not part of the workspace's ` +
            `revisions (ignored?), so the directory the revision needs there cannot be created; move it away and retry`,
        );
      }
      ensured.add(dir);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Diff, copy, lookups

  /** Unified diff (git style) between two revisions. */
  async diff(revA: string, revB: string, opts?: { stat?: false }): Promise<string>;
  /** Per-file stats between two revisions (lines added/removed; binary and large files flagged). */
  async diff(revA: string, revB: string, opts: { stat: true }): Promise<FileDiffStat[]>;
  async diff(revA: string, revB: string, opts: { stat?: boolean } = {}): Promise<string | FileDiffStat[]> {
    const a = this.resolve(revA);
    const b = this.resolve(revB);
    const changes = pairRenames(diffTrees(this.loadTree, a, b));
    const read = (hash: string, rel: string) => this.blobs.get(hash, rel);
    const parts = changes.map((c) => diffOne(c, read));
    if (opts.stat) return parts.map((p) => p.stat);
    return parts.map((p) => p.text).join("");
  }

  /**
   * Writes revision `revId` into `newDir` (absent, empty, or holding only .ledgerloop/), for
   * `fork --workspace`. With `into` (a store over `newDir`, usually on its own state DB), the revision's
   * trees and blobs are copied there first and `into` records it as newDir's head; without, this
   * store's DB records newDir's head (the fork shares this state DB).
   */
  async copyTo(revId: string, newDir: string, opts: { into?: RevisionStore } = {}): Promise<CopyResult> {
    const id = this.resolve(revId);
    if (fs.existsSync(newDir)) {
      const present = fs.readdirSync(newDir).filter((n) => n !== ".ledgerloop");
      if (present.length > 0) {
        throw new RevisionError(
          "REV_TARGET_NOT_EMPTY",
          `cannot copy revision ${id} into ${newDir}: the directory is not empty (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", …" : ""})`,
        );
      }
    } else {
      fs.mkdirSync(newDir, { recursive: true });
    }
    const dir = fs.realpathSync(newDir);
    let store = opts.into;
    if (store) {
      if (realOrResolved(store.workspace) !== dir) {
        throw new RevisionError("REV_RESTORE_CONFLICT", `copyTo: the target store is over ${store.workspace}, not ${dir}`);
      }
      store.importRevision(this, id);
    } else {
      store = new RevisionStore(this.db, dir, { ...this.opts, blobsDir: this.blobsDir });
    }
    const r = await store.restoreInto(id, false);
    const info = this.info(id)!;
    return { revId: id, dir, files: r.created.length, bytes: info.bytes };
  }

  /** Copies a revision's row, trees and blobs from another store (on another DB) into this one. */
  private importRevision(from: RevisionStore, revId: string): void {
    if (from.db === this.db) return;
    const trees = new Set<string>();
    const blobs = new Set<string>();
    collectTrees(from.loadTree, revId, trees, blobs);
    const missing = [...blobs].filter((h) => !this.blobs.has(h));
    for (let i = 0; i < missing.length; i += 256) {
      const batch = missing.slice(i, i + 256).map((h) => prepareBlob(from.blobs.get(h), h));
      this.blobs.putMany(batch);
    }
    const info = from.info(revId)!;
    this.db.transaction(() => {
      for (const h of trees) this.stmts.putTree.run(h, from.stmts.getTree.get(h)!.data);
      this.stmts.putRev.run(revId, info.createdAt, info.label, info.files, info.bytes);
    })();
  }

  /** The full id of a revision given its id or a unique prefix (at least 6 hex digits). */
  resolve(revIdOrPrefix: string): string {
    const p = revIdOrPrefix.toLowerCase();
    if (/^[0-9a-f]{64}$/.test(p) && this.stmts.getRev.get(p)) return p;
    if (/^[0-9a-f]{6,63}$/.test(p)) {
      const rows = this.stmts.byPrefix.all(p, `${p}g`);
      if (rows.length === 1) return rows[0]!.rev_id;
      if (rows.length > 1) throw new RevisionError("REV_NOT_FOUND", `revision prefix ${revIdOrPrefix} is ambiguous; give more digits`);
    }
    throw new RevisionError("REV_NOT_FOUND", `no workspace revision ${JSON.stringify(revIdOrPrefix)} in this state database`);
  }

  /** A stored revision, or null. */
  info(revId: string): RevisionInfo | null {
    const r = this.stmts.getRev.get(revId);
    return r ? { revId: r.rev_id, createdAt: r.created_at, label: r.label, files: r.files, bytes: r.bytes } : null;
  }

  /** This workspace's current revision (last snapshot or restore), or null before the first. */
  head(): { revId: string; updatedAt: string } | null {
    const r = this.stmts.getHead.get(this.workspace);
    return r ? { revId: r.rev_id, updatedAt: r.updated_at } : null;
  }

  /** The files of a revision by workspace-relative path. */
  files(revId: string): Map<string, FlatEntry> {
    return flattenTree(this.loadTree, this.resolve(revId));
  }

  /** Content of one file (or link target) of a revision. */
  readFile(revId: string, rel: string): Buffer {
    const id = this.resolve(revId);
    const e = flattenTree(this.loadTree, id).get(rel);
    if (!e) throw new RevisionError("REV_FILE_NOT_FOUND", `revision ${id} has no file ${rel}`);
    if (e.kind === "large") {
      throw new RevisionError("REV_FILE_NOT_FOUND", `${rel} in revision ${id} is a large file recorded by stat only; its content was not stored`);
    }
    return this.blobs.get(e.hash, `${rel} in revision ${id}`);
  }

  /** Drops this workspace's head and stat cache (e.g. a deleted fork), so gc no longer keeps its head. */
  forget(): void {
    this.db.transaction(() => {
      this.stmts.clearStat.run(this.workspace);
      this.db.prepare("DELETE FROM ll_rev_heads WHERE workspace = ?").run(this.workspace);
    })();
    this.cache = null;
    this.cacheGen = -1;
  }

  // ---------------------------------------------------------------------------------------------
  // gc and stats

  /**
   * Deletes every revision that is neither in `liveRevIds` nor some workspace's head, then every tree
   * and blob no remaining revision reaches (blob files included, and stray blob files an interrupted
   * snapshot left over an hour ago).
   */
  gc(liveRevIds: Set<string>): GcResult {
    const freedFiles: string[] = [];
    const result = this.db.transaction((): GcResult => {
      const all = new Set((this.db.prepare("SELECT rev_id FROM ll_rev_revisions").all() as { rev_id: string }[]).map((r) => r.rev_id));
      const heads = new Set((this.db.prepare("SELECT rev_id FROM ll_rev_heads").all() as { rev_id: string }[]).map((r) => r.rev_id));
      const unknownLive = [...liveRevIds].filter((id) => !all.has(id)).sort();
      const keptHeads = [...heads].filter((id) => !liveRevIds.has(id) && all.has(id)).sort();
      const keep = new Set([...all].filter((id) => liveRevIds.has(id) || heads.has(id)));
      const delRev = this.db.prepare("DELETE FROM ll_rev_revisions WHERE rev_id = ?");
      let revisionsDeleted = 0;
      for (const id of all) if (!keep.has(id)) revisionsDeleted += delRev.run(id).changes;

      const liveTrees = new Set<string>();
      const liveBlobs = new Set<string>();
      this.treeCache.clear();
      for (const id of keep) collectTrees(this.loadTree, id, liveTrees, liveBlobs);

      let bytesReclaimed = 0;
      let treesDeleted = 0;
      let blobsDeleted = 0;
      const delTree = this.db.prepare("DELETE FROM ll_rev_trees WHERE hash = ?");
      for (const t of this.db.prepare("SELECT hash, length(data) AS n FROM ll_rev_trees").all() as { hash: string; n: number }[]) {
        if (liveTrees.has(t.hash)) continue;
        delTree.run(t.hash);
        treesDeleted++;
        bytesReclaimed += t.n;
      }
      const delBlob = this.db.prepare("DELETE FROM ll_rev_blobs WHERE hash = ?");
      const rows = this.db.prepare("SELECT hash, stored, in_file FROM ll_rev_blobs").all() as { hash: string; stored: number; in_file: number }[];
      for (const b of rows) {
        if (liveBlobs.has(b.hash)) continue;
        delBlob.run(b.hash);
        blobsDeleted++;
        bytesReclaimed += b.stored;
        if (b.in_file) freedFiles.push(this.blobs.filePath(b.hash));
      }
      return { revisionsDeleted, treesDeleted, blobsDeleted, bytesReclaimed, keptHeads, unknownLive };
    }).immediate();
    this.treeCache.clear();
    // A file goes only while, under the write lock, no row names it: a snapshot may have stored the
    // same content again since the rows were deleted. A crash before this leaves strays, swept below.
    if (freedFiles.length > 0) {
      this.db.transaction(() => {
        for (const f of freedFiles) if (!this.blobs.has(path.basename(f))) fs.rmSync(f, { force: true });
      }).immediate();
    }
    result.bytesReclaimed += this.sweepStrayBlobFiles();
    return result;
  }

  /** Blob files with no row, older than an hour (younger ones may belong to a snapshot in flight). */
  private sweepStrayBlobFiles(): number {
    let freed = 0;
    if (!fs.existsSync(this.blobsDir)) return 0;
    const cutoff = Date.now() - 3600_000;
    const inFile = this.db.prepare<[string], { one: number }>("SELECT 1 AS one FROM ll_rev_blobs WHERE hash = ? AND in_file = 1");
    for (const sub of fs.readdirSync(this.blobsDir)) {
      const dir = path.join(this.blobsDir, sub);
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
  stats(): RevisionStoreStats {
    const one = <T>(sql: string) => this.db.prepare(sql).get() as T;
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

  // ---------------------------------------------------------------------------------------------
  // Internals

  /** Tree objects are immutable, so a decoded one can be cached by hash. */
  private readonly loadTree = (hash: string): TreeEntry[] => {
    const hit = this.treeCache.get(hash);
    if (hit) return hit;
    const row = this.stmts.getTree.get(hash);
    if (!row) {
      throw new RevisionError("REV_TREE_MISSING", `tree object ${hash} is missing from the revision store (a revision refers to it)`);
    }
    if (sha256(row.data) !== hash) {
      throw new RevisionError("REV_TREE_CORRUPT", `tree object ${hash} is corrupt: its content no longer hashes to its name`);
    }
    const entries = decodeTree(row.data, hash);
    if (this.treeCache.size >= TREE_CACHE_MAX) this.treeCache.clear();
    this.treeCache.set(hash, entries);
    return entries;
  };

  /** The stat cache of this workspace, reloaded when another store (or process) moved its head. */
  private loadCache(): Map<string, CacheEntry> {
    const gen = this.stmts.getHead.get(this.workspace)?.gen ?? 0;
    if (this.cache && gen === this.cacheGen) return this.cache;
    this.cache = this.loadCacheRaw();
    this.cacheGen = gen;
    return this.cache;
  }

  private loadCacheRaw(): Map<string, CacheEntry> {
    const map = new Map<string, CacheEntry>();
    for (const r of this.stmts.statRows.all(this.workspace)) {
      map.set(r.path, {
        kind: r.kind as CacheEntry["kind"],
        mode: r.mode,
        size: r.size,
        mtime: r.mtime,
        ctime: r.ctime,
        ino: r.ino,
        hash: r.hash,
        trusted: r.trusted === 1,
      });
    }
    return map;
  }

  /** Writes the rows that differ between `before` (null: unknown, rewrite all) and `after`. */
  private writeCache(before: Map<string, CacheEntry> | null, after: Map<string, CacheEntry>): void {
    if (!before) {
      this.stmts.clearStat.run(this.workspace);
      before = new Map();
    }
    for (const [rel, e] of after) {
      const b = before.get(rel);
      if (b && sameEntry(b, e)) continue;
      this.stmts.putStat.run(this.workspace, rel, e.kind, e.mode, e.size, e.mtime, e.ctime, e.ino, e.hash, e.trusted ? 1 : 0);
    }
    for (const rel of before.keys()) if (!after.has(rel)) this.stmts.delStat.run(this.workspace, rel);
  }
}

// -----------------------------------------------------------------------------------------------
// Helpers

function realOrResolved(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

function entryOf(kind: CacheEntry["kind"], mode: number, st: Stats, hash: string, trusted: boolean): CacheEntry {
  return { kind, mode, size: st.size, mtime: st.mtimeMs, ctime: st.ctimeMs, ino: st.ino, hash, trusted };
}

function sameStat(c: CacheEntry, st: Stats, mode: number): boolean {
  return c.size === st.size && c.mtime === st.mtimeMs && c.ctime === st.ctimeMs && c.ino === st.ino && c.mode === mode;
}

function sameEntry(a: CacheEntry, b: CacheEntry): boolean {
  return (
    a.kind === b.kind &&
    a.mode === b.mode &&
    a.size === b.size &&
    a.mtime === b.mtime &&
    a.ctime === b.ctime &&
    a.ino === b.ino &&
    a.hash === b.hash &&
    a.trusted === b.trusted
  );
}

function sameCache(a: Map<string, CacheEntry>, b: Map<string, CacheEntry>): boolean {
  if (a.size !== b.size) return false;
  for (const [rel, e] of b) {
    const x = a.get(rel);
    if (!x || !sameEntry(x, e)) return false;
  }
  return true;
}

/** Content changes between two path → entry maps (kind, mode or hash). */
function compareEntries(before: Map<string, CacheEntry>, after: Map<string, CacheEntry>): FileChangeLists {
  const created: string[] = [];
  const modified: string[] = [];
  const deleted: string[] = [];
  for (const [rel, e] of after) {
    const b = before.get(rel);
    if (!b) created.push(rel);
    else if (b.kind !== e.kind || b.hash !== e.hash || b.mode !== e.mode) modified.push(rel);
  }
  for (const rel of before.keys()) if (!after.has(rel)) deleted.push(rel);
  return { created: created.sort(), modified: modified.sort(), deleted: deleted.sort() };
}

/** See RACY_MS: a stamp this close to the scan's start is not trusted at the next one. */
function isRacy(st: Stats, t0: number): boolean {
  const window = st.mtimeMs % 1000 === 0 ? RACY_COARSE_MS : RACY_MS;
  return Math.max(st.mtimeMs, st.ctimeMs) >= t0 - window;
}

/**
 * Carries a workspace's revision head and stat cache over to the path it now has (it was moved, or
 * is a copy adopted as a workspace of its own), so its files are compared with the revision they
 * were last recorded as. Does nothing when the new path already has a head of its own.
 */
export function renameWorkspaceRevisions(db: Database.Database, from: string, to: string): void {
  if (from === to || !db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'll_rev_heads'").get()) return;
  if (db.prepare("SELECT 1 FROM ll_rev_heads WHERE workspace = ?").get(to)) return;
  db.prepare("UPDATE ll_rev_heads SET workspace = ? WHERE workspace = ?").run(to, from);
  db.prepare("DELETE FROM ll_rev_stat WHERE workspace = ?").run(to);
  // The stat rows keep their inode and ctime: a copied file differs in both, so it is read again.
  db.prepare("UPDATE ll_rev_stat SET workspace = ? WHERE workspace = ?").run(to, from);
}
