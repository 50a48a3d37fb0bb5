import fs from "node:fs";
import type Database from "better-sqlite3";
import type { PreparedBlob } from "./rev-blobs.js";
import { RevisionCore, realOrResolved } from "./rev-core.js";
import { diffOne, pairRenames, type FileDiffStat } from "./rev-diff.js";
import { RevisionError } from "./rev-errors.js";
import { gcRevisions, revisionStats } from "./rev-gc.js";
import { restoreInto } from "./rev-restore.js";
import { snapshotRetrying } from "./rev-snapshot.js";
import { compareEntries } from "./rev-stat-cache.js";
import { exportObjects, importBlobs, importObjects, importRevision } from "./rev-transfer.js";
import { diffTrees, flattenTree, type FlatEntry } from "./rev-tree.js";
import type {
  CopyResult,
  GcResult,
  RestoreResult,
  RevisionInfo,
  RevisionObjects,
  RevisionStoreOptions,
  RevisionStoreStats,
  SnapshotResult,
  WorkspaceStatus,
} from "./rev-types.js";
import type { WorkspaceTracker } from "./tracker.js";

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
export type { PreparedBlob } from "./rev-blobs.js";
export * from "./rev-types.js";
export { renameWorkspaceRevisions } from "./rev-schema.js";

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
  /** The DB, statements and caches the snapshot, restore and copy modules work on (rev-core.ts). */
  private readonly core: RevisionCore;

  constructor(db: Database.Database, workspace: string, opts: RevisionStoreOptions = {}) {
    this.core = new RevisionCore(db, workspace, opts);
    this.workspace = this.core.workspace;
    this.blobsDir = this.core.blobsDir;
    this.tracker = this.core.tracker;
  }

  // ---------------------------------------------------------------------------------------------
  // Snapshot (rev-snapshot.ts)

  /**
   * Records the workspace as a revision: every non-ignored file and symlink (untracked and shell-made
   * included; .git/ and .ledgerloop/ never). Unchanged files are recognised by their stat and not read;
   * a workspace equal to the previous revision returns that revision's id without writing one.
   * With `reuseWalkAfter` (a {@link WorkspaceTracker.seq}), a walk the tracker kept since then (the
   * walk after a command of this step) is used instead of walking again.
   */
  async snapshot(opts: { label?: string; reuseWalkAfter?: number } = {}): Promise<SnapshotResult> {
    const r = await snapshotRetrying(this.core, opts);
    await this.core.opts.afterSnapshot?.(r);
    return r;
  }

  // ---------------------------------------------------------------------------------------------
  // Status

  /** Edits made to the workspace since its last revision (by anyone: the agent, a shell, the user); reads only. */
  async status(): Promise<WorkspaceStatus> {
    const base = this.core.loadCache();
    const head = this.core.stmts.getHead.get(this.workspace);
    // Always a new walk: status is how edits made outside the run are found.
    const scan = await this.core.scan("hash", await this.tracker.walk());
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
  // Restore (rev-restore.ts)

  /**
   * Makes the workspace that revision: writes what differs (temp file + rename, one file at a time),
   * deletes non-ignored files that are not in it, removes directories that end up empty. Ignored files,
   * .git/ and .ledgerloop/ are never touched, nor large or unreadable files (listed in `skipped`).
   * It overwrites edits made since the last snapshot: check {@link status} first (rewind does).
   * Every blob is read and verified before the first file is changed.
   */
  async restore(revId: string, opts: { dryRun?: boolean } = {}): Promise<RestoreResult> {
    return restoreInto(this.core, this.resolve(revId), opts.dryRun ?? false);
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
    const changes = pairRenames(diffTrees(this.core.loadTree, a, b));
    const read = (hash: string, rel: string) => this.core.blobs.get(hash, rel);
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
    if (opts.into) {
      if (realOrResolved(opts.into.workspace) !== dir) {
        throw new RevisionError("REV_RESTORE_CONFLICT", `copyTo: the target store is over ${opts.into.workspace}, not ${dir}`);
      }
      importRevision(this.core, opts.into.core, id);
    }
    const target = opts.into?.core ?? new RevisionCore(this.core.db, dir, { ...this.core.opts, blobsDir: this.blobsDir });
    const r = await restoreInto(target, id, false);
    const info = this.info(id)!;
    return { revId: id, dir, files: r.created.length, bytes: info.bytes };
  }

  // ---------------------------------------------------------------------------------------------
  // Copying revisions between stores (rev-transfer.ts)

  /**
   * A revision's row, tree objects (verified) and the blobs they name. Trees for which
   * `skipTrees.has` is true are neither returned nor walked into.
   */
  exportObjects(revId: string, skipTrees: { has(hash: string): boolean } = new Set<string>()): RevisionObjects {
    return exportObjects(this.core, revId, skipTrees);
  }

  /** Whether this store has the tree object (and so everything under it). */
  hasTree(hash: string): boolean {
    return this.core.hasTree(hash);
  }

  /** Whether this store has the blob (its row, and its file when kept as one). */
  hasBlob(hash: string): boolean {
    return this.core.blobs.present(hash);
  }

  /** A blob in its stored (possibly compressed) form, verified against its hash, for copying it elsewhere. */
  storedBlob(hash: string): PreparedBlob {
    return this.core.blobs.getStored(hash);
  }

  /**
   * Stores blobs copied from elsewhere, each verified against its size and hash first: a damaged one
   * is a RevisionError naming its hash (`from` says where it came from), and nothing of the batch is stored.
   */
  importBlobs(blobs: PreparedBlob[], from?: string): { count: number; bytes: number } {
    return importBlobs(this.core, blobs, from);
  }

  /**
   * Records a revision copied from elsewhere: its trees (verified) and its row, in one transaction,
   * once every tree and blob it reaches is either in `trees` or already here. A revision whose
   * objects are missing is refused with the hash that is missing, never stored half.
   */
  importObjects(info: RevisionInfo, trees: ReadonlyMap<string, Buffer>, from?: string): void {
    importObjects(this.core, info, trees, from);
  }

  // ---------------------------------------------------------------------------------------------
  // Lookups

  /** The full id of a revision given its id or a unique prefix (at least 6 hex digits). */
  resolve(revIdOrPrefix: string): string {
    return this.core.resolve(revIdOrPrefix);
  }

  /** A stored revision, or null. */
  info(revId: string): RevisionInfo | null {
    return this.core.info(revId);
  }

  /** This workspace's current revision (last snapshot or restore), or null before the first. */
  head(): { revId: string; updatedAt: string } | null {
    const r = this.core.stmts.getHead.get(this.workspace);
    return r ? { revId: r.rev_id, updatedAt: r.updated_at } : null;
  }

  /** The files of a revision by workspace-relative path. */
  files(revId: string): Map<string, FlatEntry> {
    return flattenTree(this.core.loadTree, this.resolve(revId));
  }

  /** Content of one file (or link target) of a revision. */
  readFile(revId: string, rel: string): Buffer {
    const id = this.resolve(revId);
    const e = flattenTree(this.core.loadTree, id).get(rel);
    if (!e) throw new RevisionError("REV_FILE_NOT_FOUND", `revision ${id} has no file ${rel}`);
    if (e.kind === "large") {
      throw new RevisionError("REV_FILE_NOT_FOUND", `${rel} in revision ${id} is a large file recorded by stat only; its content was not stored`);
    }
    return this.core.blobs.get(e.hash, `${rel} in revision ${id}`);
  }

  /** Drops this workspace's head and stat cache (e.g. a deleted fork), so gc no longer keeps its head. */
  forget(): void {
    const core = this.core;
    core.db.transaction(() => {
      core.stmts.clearStat.run(this.workspace);
      core.db.prepare("DELETE FROM ll_rev_heads WHERE workspace = ?").run(this.workspace);
    })();
    core.cache = null;
    core.cacheGen = -1;
  }

  // ---------------------------------------------------------------------------------------------
  // gc and stats (rev-gc.ts)

  /**
   * Deletes every revision that is neither in `liveRevIds` nor some workspace's head, then every tree
   * and blob no remaining revision reaches (blob files included, and stray blob files an interrupted
   * snapshot left over an hour ago).
   */
  gc(liveRevIds: Set<string>): GcResult {
    const core = this.core;
    return gcRevisions(core.db, { blobs: core.blobs, blobsDir: this.blobsDir, loadTree: core.loadTree, clearTreeCache: () => core.treeCache.clear() }, liveRevIds);
  }

  /** Counts and sizes of revisions, trees, blobs and stat cache rows in this state DB. */
  stats(): RevisionStoreStats {
    return revisionStats(this.core.db);
  }
}
