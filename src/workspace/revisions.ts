import fs from "node:fs";
import path from "node:path";
import type { Database } from "../sqlite/driver.js";
import { ConfigError } from "../errors.js";
import { BlobStore, decodeBlob, type PreparedBlob } from "./rev-blobs.js";
import { diffOne, pairRenames, type FileDiffStat } from "./rev-diff.js";
import { RevisionError } from "./rev-errors.js";
import { dirsOf } from "./rev-fs.js";
import { checkCopyComplete, decodeCopiedTrees, prepareCopyTarget, reachableObjects } from "./rev-transfer.js";
import { TreeObjects } from "./rev-tree-objects.js";
import { applyRestore, checkRestore, planRestore, type RestoreWrite } from "./rev-restore.js";
import { gcRevisions, revisionStats } from "./rev-gc.js";
import { scanWorkspace, type ScanResult } from "./rev-scan.js";
import { cacheFromRows, compareEntries, sameCache, sameEntry, type CacheEntry } from "./rev-stat-cache.js";
import { buildTrees, diffTrees, flattenTree, type FlatEntry, type TreeEntry } from "./rev-tree.js";
import {
  DEFAULT_INLINE_BLOB_BYTES,
  DEFAULT_LARGE_FILE_BYTES,
  type CopyResult,
  type GcResult,
  type RestoreResult,
  type RevisionInfo,
  type RevisionObjects,
  type RevisionStoreOptions,
  type RevisionStoreStats,
  type SnapshotResult,
  type WorkspaceStatus,
} from "./rev-types.js";
import { confined } from "./confined.js";
import { prepareRevisionStatements, SCHEMA, type RevisionStatements } from "./rev-schema.js";
import { WorkspaceTracker } from "./tracker.js";
import type { StatWalk } from "./walk.js";

// Workspace revisions: the files of a workspace at a checkpoint, recorded content-addressed in the
// state DB so that rewind and fork can put them back. The tables, and the order that makes a crash
// harmless, are described in rev-schema.ts.

export { RevisionError, type RevisionErrorCode } from "./rev-errors.js";
export { formatStat, type FileDiffStat } from "./rev-diff.js";
export type { FlatEntry } from "./rev-tree.js";
export type { PreparedBlob } from "./rev-blobs.js";
export * from "./rev-types.js";
export { renameWorkspaceRevisions } from "./rev-schema.js";

/** Restore reads and verifies every blob before touching the workspace; up to this much is kept for the writes. */
const RESTORE_PRELOAD_BYTES = 256 * 1024 * 1024;

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
  /** The newest walk of the workspace, shared with command feedback (one walk per step). */
  readonly tracker: WorkspaceTracker;
  private readonly db: Database;
  private readonly blobs: BlobStore;
  private readonly largeBytes: number;
  private readonly opts: RevisionStoreOptions;
  private readonly stmts: RevisionStatements;
  private readonly trees: TreeObjects;
  private readonly loadTree: (hash: string) => TreeEntry[];
  private cache: Map<string, CacheEntry> | null = null;
  private cacheGen = -1;

  constructor(db: Database, workspace: string, opts: RevisionStoreOptions = {}) {
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
    this.stmts = prepareRevisionStatements(db);
    this.trees = new TreeObjects((hash) => this.stmts.getTree.get(hash));
    this.loadTree = this.trees.load;
    this.tracker = new WorkspaceTracker(this.workspace);
  }

  // ---------------------------------------------------------------------------------------------
  // Snapshot

  /**
   * Records the workspace as a revision: every non-ignored file and symlink (untracked and shell-made
   * included; .git/ and .ledgerloop/ never). Unchanged files are recognised by their stat and not read;
   * a workspace equal to the previous revision returns that revision's id without writing one.
   * With `reuseWalkAfter` (a {@link WorkspaceTracker.seq}), a walk the tracker kept since then (the
   * walk after a command of this step) is used instead of walking again.
   */
  async snapshot(opts: { label?: string; reuseWalkAfter?: number } = {}): Promise<SnapshotResult> {
    const r = await this.snapshotRetrying(opts);
    await this.opts.afterSnapshot?.(r);
    return r;
  }

  private async snapshotRetrying(opts: { label?: string; reuseWalkAfter?: number }): Promise<SnapshotResult> {
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

  private async snapshotOnce(opts: { label?: string; reuseWalkAfter?: number }): Promise<SnapshotResult> {
    const started = performance.now();
    // Another store or process moved this workspace's head (a restore): a kept walk may predate it.
    if ((this.stmts.getHead.get(this.workspace)?.gen ?? 0) !== this.cacheGen) this.tracker.invalidate();
    const base = this.loadCache();
    const baseGen = this.cacheGen;
    const baseRev = this.stmts.getHead.get(this.workspace)?.rev_id ?? null;
    const walk = opts.reuseWalkAfter === undefined ? await this.tracker.walk() : await this.tracker.current(opts.reuseWalkAfter);
    const scan = await this.scan("store", walk);
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
      this.db
        .transaction(() => {
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
        })
        .immediate();
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

  /** Reads a walk against this workspace's stat cache (rev-scan.ts); "store" also stores new contents. */
  private scan(purpose: "store" | "hash", walk: StatWalk): Promise<ScanResult> {
    return scanWorkspace({ workspace: this.workspace, walk, cache: this.loadCache(), largeBytes: this.largeBytes, blobs: this.blobs, purpose });
  }

  // ---------------------------------------------------------------------------------------------
  // Status

  /** Edits made to the workspace since its last revision (by anyone: the agent, a shell, the user); reads only. */
  async status(): Promise<WorkspaceStatus> {
    const base = this.loadCache();
    const head = this.stmts.getHead.get(this.workspace);
    // Always a new walk: status is how edits made outside the run are found.
    const scan = await this.scan("hash", await this.tracker.walk());
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
    const scan = await this.scan("hash", await this.tracker.walk());
    const cur = scan.now;
    const plan = planRestore(target, scan);
    const result = (): RestoreResult => ({
      revId,
      dryRun,
      created: plan.created,
      modified: plan.modified,
      deleted: plan.deleted,
      skipped: plan.skipped,
      ms: performance.now() - started,
    });
    const ws = confined(this.workspace, { links: "never" });
    const blob = (w: RestoreWrite) => this.blobs.get(w.e.hash, `${w.rel} in revision ${revId}`);
    const contents = checkRestore(ws, plan, blob, RESTORE_PRELOAD_BYTES);
    if (dryRun) return result();

    this.tracker.invalidate();
    const written = applyRestore(ws, plan, dirsOf(target.keys()), (w) => contents.get(w.e.hash) ?? blob(w));

    // The stat cache now describes the restored files, so status() is clean and the next snapshot
    // reads only what changes from here.
    const next = new Map<string, CacheEntry>();
    for (const [rel, t] of target) {
      const c = written.get(rel) ?? cur.get(rel);
      if (c && c.hash === t.hash && c.kind === t.kind) next.set(rel, c);
    }
    this.db
      .transaction(() => {
        const head = this.stmts.getHead.get(this.workspace);
        this.writeCache((head?.gen ?? 0) === this.cacheGen && this.cache ? this.cache : null, next);
        this.stmts.putHead.run(this.workspace, revId, new Date().toISOString());
      })
      .immediate();
    this.cache = next;
    this.cacheGen = this.stmts.getHead.get(this.workspace)!.gen;
    return result();
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
    const dir = prepareCopyTarget(newDir, id);
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
    if (from.db === this.db || this.info(revId)) return;
    const objs = from.exportObjects(revId, { has: (h: string) => this.hasTree(h) });
    const missing = objs.blobs.filter((h) => !this.hasBlob(h));
    for (let i = 0; i < missing.length; i += 256) {
      this.importBlobs(missing.slice(i, i + 256).map((h) => from.storedBlob(h)));
    }
    this.importObjects(objs.info, objs.trees);
  }

  // ---------------------------------------------------------------------------------------------
  // Copying revisions between stores: copyTo across state DBs, the PostgreSQL replica (ledger/pg-revisions.ts);
  // the checks are in rev-transfer.ts.

  /**
   * A revision's row, tree objects (verified) and the blobs they name. Trees for which
   * `skipTrees.has` is true are neither returned nor walked into.
   */
  exportObjects(revId: string, skipTrees: { has(hash: string): boolean } = new Set<string>()): RevisionObjects {
    const info = this.info(revId);
    if (!info) throw new RevisionError("REV_NOT_FOUND", `no workspace revision ${revId} in this state database`);
    return { info, ...reachableObjects(revId, this.trees.data, this.loadTree, skipTrees) };
  }

  /** Whether this store has the tree object (and so everything under it). */
  hasTree(hash: string): boolean {
    return this.stmts.hasTree.get(hash) !== undefined;
  }

  /** Whether this store has the blob (its row, and its file when kept as one). */
  hasBlob(hash: string): boolean {
    return this.blobs.present(hash);
  }

  /** A blob in its stored (possibly compressed) form, verified against its hash, for copying it elsewhere. */
  storedBlob(hash: string): PreparedBlob {
    return this.blobs.getStored(hash);
  }

  /**
   * Stores blobs copied from elsewhere, each verified against its size and hash first: a damaged one
   * is a RevisionError naming its hash (`from` says where it came from), and nothing of the batch is stored.
   */
  importBlobs(blobs: PreparedBlob[], from?: string): { count: number; bytes: number } {
    for (const b of blobs) decodeBlob(b, from);
    return this.blobs.putMany(blobs);
  }

  /**
   * Records a revision copied from elsewhere: its trees (verified) and its row, in one transaction,
   * once every tree and blob it reaches is either in `trees` or already here. A revision whose
   * objects are missing is refused with the hash that is missing, never stored half.
   */
  importObjects(info: RevisionInfo, trees: ReadonlyMap<string, Buffer>, from?: string): void {
    const about = from ? ` (${from})` : "";
    const decoded = decodeCopiedTrees(trees, about);
    this.db
      .transaction(() => {
        checkCopyComplete(info, decoded, { tree: (h) => this.hasTree(h), blob: (h) => this.blobs.present(h) }, about);
        for (const [hash, data] of trees) this.stmts.putTree.run(hash, data);
        this.stmts.putRev.run(info.revId, info.createdAt, info.label, info.files, info.bytes);
      })
      .immediate();
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
  // gc and stats (rev-gc.ts)

  /**
   * Deletes every revision that is neither in `liveRevIds` nor some workspace's head, then every tree
   * and blob no remaining revision reaches (blob files included, and stray blob files an interrupted
   * snapshot left over an hour ago).
   */
  gc(liveRevIds: Set<string>): GcResult {
    return gcRevisions(this.db, { blobs: this.blobs, blobsDir: this.blobsDir, loadTree: this.loadTree, clearTreeCache: () => this.trees.clear() }, liveRevIds);
  }

  /** Counts and sizes of revisions, trees, blobs and stat cache rows in this state DB. */
  stats(): RevisionStoreStats {
    return revisionStats(this.db);
  }

  // ---------------------------------------------------------------------------------------------
  // Internals

  /** The stat cache of this workspace, reloaded when another store (or process) moved its head. */
  private loadCache(): Map<string, CacheEntry> {
    const gen = this.stmts.getHead.get(this.workspace)?.gen ?? 0;
    if (this.cache && gen === this.cacheGen) return this.cache;
    this.cache = this.loadCacheRaw();
    this.cacheGen = gen;
    return this.cache;
  }

  private loadCacheRaw(): Map<string, CacheEntry> {
    return cacheFromRows(this.stmts.statRows.all(this.workspace));
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
