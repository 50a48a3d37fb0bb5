import type { FlatEntry } from "./rev-tree.js";

// The shapes the revision store (revisions.ts) takes and returns, in one place for its modules.

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
  /**
   * Awaited after every successful snapshot, a reused revision included; an error it throws fails the
   * snapshot (the revision stays stored locally). The runtime pushes each revision to the PostgreSQL
   * replica here, so a step's revision is there before the step's checkpoint names it.
   */
  afterSnapshot?: (r: SnapshotResult) => Promise<void>;
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

/** A revision's row and objects, for copying it to another store ({@link RevisionStore.exportObjects}). */
export interface RevisionObjects {
  info: RevisionInfo;
  /** Its tree objects by hash, as stored (those under a skipped tree left out). */
  trees: Map<string, Buffer>;
  /** The blobs those trees name, each once, sorted (large entries have none). */
  blobs: string[];
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
