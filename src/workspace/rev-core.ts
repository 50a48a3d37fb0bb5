import fs from "node:fs";
import path from "node:path";
import type Database from "better-sqlite3";
import { ConfigError } from "../errors.js";
import { BlobStore } from "./rev-blobs.js";
import { RevisionError } from "./rev-errors.js";
import { scanWorkspace, type ScanResult } from "./rev-scan.js";
import { SCHEMA } from "./rev-schema.js";
import { cacheFromRows, sameEntry, type CacheEntry, type StatRow } from "./rev-stat-cache.js";
import { decodeTree, sha256, type TreeEntry } from "./rev-tree.js";
import { DEFAULT_INLINE_BLOB_BYTES, DEFAULT_LARGE_FILE_BYTES, type RevisionInfo, type RevisionStoreOptions } from "./rev-types.js";
import { WorkspaceTracker } from "./tracker.js";
import type { StatWalk } from "./walk.js";

// The state one revision store (revisions.ts) works on, shared by its snapshot, restore and copy
// modules: the DB and its prepared statements, the blobs, the decoded-tree cache and the stat cache.

const TREE_CACHE_MAX = 4096;

/** The prepared statements of a revision store. */
export type RevStatements = ReturnType<typeof prepareStatements>;

function prepareStatements(db: Database.Database) {
  return {
    getTree: db.prepare<[string], { data: Buffer }>("SELECT data FROM ll_rev_trees WHERE hash = ?"),
    hasTree: db.prepare<[string], { one: number }>("SELECT 1 AS one FROM ll_rev_trees WHERE hash = ?"),
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

/** One workspace's view of a revision DB: statements, blobs and the caches its operations share. */
export class RevisionCore {
  /** The workspace (realpath'd when it exists). */
  readonly workspace: string;
  /** Where blobs kept as files live. */
  readonly blobsDir: string;
  /** The newest walk of the workspace, shared with command feedback (one walk per step). */
  readonly tracker: WorkspaceTracker;
  readonly db: Database.Database;
  readonly blobs: BlobStore;
  readonly opts: RevisionStoreOptions;
  readonly stmts: RevStatements;
  readonly treeCache = new Map<string, TreeEntry[]>();
  private readonly largeBytes: number;
  /** The stat cache as last loaded or written, and the head generation it belongs to. */
  cache: Map<string, CacheEntry> | null = null;
  cacheGen = -1;

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
    this.stmts = prepareStatements(db);
    this.tracker = new WorkspaceTracker(this.workspace);
  }

  /** Reads a walk against this workspace's stat cache (rev-scan.ts); "store" also stores new contents. */
  scan(purpose: "store" | "hash", walk: StatWalk): Promise<ScanResult> {
    return scanWorkspace({ workspace: this.workspace, walk, cache: this.loadCache(), largeBytes: this.largeBytes, blobs: this.blobs, purpose });
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

  /** Whether this DB has the tree object (and so everything under it). */
  hasTree(hash: string): boolean {
    return this.stmts.hasTree.get(hash) !== undefined;
  }

  /** A tree object as stored, checked against its hash. */
  treeData(hash: string): Buffer {
    const row = this.stmts.getTree.get(hash);
    if (!row) {
      throw new RevisionError("REV_TREE_MISSING", `tree object ${hash} is missing from the revision store (a revision refers to it)`);
    }
    if (sha256(row.data) !== hash) {
      throw new RevisionError("REV_TREE_CORRUPT", `tree object ${hash} is corrupt: its content no longer hashes to its name`);
    }
    return row.data;
  }

  /** Tree objects are immutable, so a decoded one can be cached by hash. */
  readonly loadTree = (hash: string): TreeEntry[] => {
    const hit = this.treeCache.get(hash);
    if (hit) return hit;
    const entries = decodeTree(this.treeData(hash), hash);
    if (this.treeCache.size >= TREE_CACHE_MAX) this.treeCache.clear();
    this.treeCache.set(hash, entries);
    return entries;
  };

  /** The stat cache of this workspace, reloaded when another store (or process) moved its head. */
  loadCache(): Map<string, CacheEntry> {
    const gen = this.stmts.getHead.get(this.workspace)?.gen ?? 0;
    if (this.cache && gen === this.cacheGen) return this.cache;
    this.cache = cacheFromRows(this.stmts.statRows.all(this.workspace));
    this.cacheGen = gen;
    return this.cache;
  }

  /** Writes the rows that differ between `before` (null: unknown, rewrite all) and `after`. */
  writeCache(before: Map<string, CacheEntry> | null, after: Map<string, CacheEntry>): void {
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

/** The realpath of `p`, or its resolved form when it does not exist (yet). */
export function realOrResolved(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}
