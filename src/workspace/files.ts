import { createHash } from "node:crypto";
import { closeSync, readSync } from "node:fs";
import type { Stats } from "node:fs";
import { createRequire } from "node:module";
import { confined } from "./confined.js";
import { statWalk, walkTree, type StatEntry } from "./walk.js";

// The workspace as the agent sees it: regular files and symlinks to files inside the workspace, as the
// one walker (walk.ts) finds them, and the stat-level change detection behind command feedback.

/** Options of {@link walkFiles}; every path is workspace-relative POSIX. */
export interface WalkOptions {
  /** Directory to list (relative to the workspace); results stay workspace-relative. */
  under?: string;
  /**
   * picomatch glob (`dot: true`) on the workspace-relative path. A glob without "/" is matched against
   * the file name alone, at any depth (`*.ts` finds `src/a/b.ts`); one with "/" must match the whole
   * relative path (`src/**\/*.ts`).
   */
  glob?: string;
  /** At most this many files; `truncated` tells whether more matched. */
  limit?: number;
  /** List gitignored files too (.git/ and .ledgerloop/ stay hidden). */
  includeIgnored?: boolean;
}

/** Result of {@link walkFiles}. */
export interface WalkResult {
  /** Workspace-relative POSIX paths, sorted by plain string order. */
  files: string[];
  /** More files matched than `limit` allowed. */
  truncated: boolean;
  /** Gitignored entries met and left out; an ignored directory counts once, its contents are never read. */
  skippedIgnored: number;
}

/** What a snapshot records of one file (symlinks are described by their target). */
export interface FileStat {
  size: number;
  mtimeMs: number;
  mode: number;
  /** Not compared; tells a change made before a command from one the command made (see tracker.ts). */
  ctimeMs?: number;
}

/**
 * Files created, modified and deleted between two snapshots, each list sorted. A different size or
 * mode, or the same size with a different mtime, is a modification; a rewrite that keeps both size and
 * mtime (within the file system's timestamp granularity, a few ms at worst) goes unseen, which is the
 * price of never reading content. Given `hashesBefore` (sha256 as {@link hashFile} computes it), an
 * mtime-only change whose content still hashes the same is not reported.
 */
export interface FileChanges {
  created: string[];
  modified: string[];
  deleted: string[];
}

/** Lists workspace files, sorted, honouring root and nested .gitignore files and .git/info/exclude. */
export async function walkFiles(workspace: string, opts: WalkOptions = {}): Promise<WalkResult> {
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  const matches = compileGlob(opts.glob);
  const files: string[] = [];
  let truncated = false;
  const { skippedIgnored } = await walkTree(workspace, { under: opts.under, includeIgnored: opts.includeIgnored }, (rel, e) => {
    if (e.isSymbolicLink() && !isFileInside(workspace, rel)) return true;
    if (!matches(rel)) return true;
    if (files.length >= limit) {
      truncated = true;
      return false;
    }
    files.push(rel);
    return true;
  });
  return { files, truncated, skippedIgnored };
}

/** Size, mtime and mode of every file {@link walkFiles} lists (gitignore honoured), keyed by relative path. */
export async function statSnapshot(workspace: string): Promise<Map<string, FileStat>> {
  return fileStatsOf(workspace, (await statWalk(workspace)).entries);
}

/**
 * The files of a {@link statWalk} as {@link walkFiles} lists them, with their stat: a symlink counts
 * when it leads to a file inside the workspace, described by that file (so an edit of the target
 * shows on the link too); other links are left out.
 */
export function fileStatsOf(workspace: string, entries: readonly StatEntry[]): Map<string, FileStat> {
  const snapshot = new Map<string, FileStat>();
  for (const { rel, kind, st } of entries) {
    if (kind === "file") {
      snapshot.set(rel, { size: st.size, mtimeMs: st.mtimeMs, mode: st.mode, ctimeMs: st.ctimeMs });
      continue;
    }
    if (!isFileInside(workspace, rel)) continue;
    const target = statOrUndefined(workspace, rel);
    // A file deleted between the walk and its stat is simply not in this snapshot.
    if (target?.isFile()) snapshot.set(rel, { size: target.size, mtimeMs: target.mtimeMs, mode: target.mode, ctimeMs: target.ctimeMs });
  }
  return snapshot;
}

/** Files created, modified (size, mode or mtime differs) and deleted between two snapshots; see {@link FileChanges}. */
export async function diffSnapshots(
  workspace: string,
  before: Map<string, FileStat>,
  after: Map<string, FileStat>,
  hashesBefore?: Map<string, string>,
): Promise<FileChanges> {
  const created: string[] = [];
  const modified: string[] = [];
  const deleted: string[] = [];
  const mtimeOnly: string[] = [];

  for (const [rel, now] of after) {
    const was = before.get(rel);
    if (!was) created.push(rel);
    else if (was.size !== now.size || was.mode !== now.mode) modified.push(rel);
    else if (was.mtimeMs !== now.mtimeMs) mtimeOnly.push(rel);
  }
  for (const rel of before.keys()) if (!after.has(rel)) deleted.push(rel);

  // Formatters and `touch` bump mtimes without changing content; when the caller already holds the old
  // hashes (file history does), hashing just these few files keeps them from showing up as edits.
  for (const rel of mtimeOnly) {
    const old = hashesBefore?.get(rel);
    if (old === undefined) {
      modified.push(rel);
      continue;
    }
    const current = await hashFile(workspace, rel).catch(() => undefined);
    if (current !== old) modified.push(rel);
  }

  return { created: created.sort(), modified: modified.sort(), deleted: deleted.sort() };
}

/** sha256 (hex) of a workspace file's content, the hash {@link diffSnapshots} expects in `hashesBefore`. */
export async function hashFile(workspace: string, rel: string): Promise<string> {
  const hash = createHash("sha256");
  // By descriptor through the confined reader: a link to a host file is never read, even to hash it.
  const fd = confined(workspace).openRead(rel);
  try {
    const buf = Buffer.allocUnsafe(256 * 1024);
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0;) hash.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

// picomatch (a dozen CommonJS files) is loaded by the first glob: most walks (an index refresh, a
// snapshot) have none.
const require = createRequire(import.meta.url);

function compileGlob(glob: string | undefined): (rel: string) => boolean {
  if (glob === undefined || glob === "") return () => true;
  const picomatch = require("picomatch") as typeof import("picomatch");
  return picomatch(glob, { dot: true, basename: !glob.includes("/") });
}

function statOrUndefined(workspace: string, rel: string): Stats | undefined {
  try {
    return confined(workspace).stat(rel);
  } catch {
    // EACCES, ELOOP, ENOTDIR: the file cannot be described, so it is left out like a vanished one.
    return undefined;
  }
}

function isFileInside(workspace: string, rel: string): boolean {
  try {
    // A link to a file outside would be listed, then refused on every read; better not to offer it.
    // The confined stat follows links only while they stay inside, so it answers both at once.
    return confined(workspace).stat(rel).isFile();
  } catch {
    return false;
  }
}
