import fs from "node:fs";
import type { Stats } from "node:fs";
import { errorMessage, PathEscapeError, WorkspaceFileError } from "../errors.js";
import { nameOfBytes } from "./byte-names.js";
import { confined, type ConfinedDir } from "./confined.js";
import { RevisionError } from "./rev-errors.js";
import type { FlatEntry } from "./rev-tree.js";

// File system steps of snapshot and restore: reading an entry without following links, and changing
// the workspace one path at a time (temp file + rename), never through anything but real directories.
// Every step goes through the confined reader/writer (confined.ts) with no link followed: the
// workspace is the agent's, and a directory swapped for a symlink must not lead a restore out.

/** What {@link readEntry} found. */
export type ReadResult = { kind: "file" | "symlink"; content: Buffer; st: Stats; stable: boolean } | { kind: "large"; st: Stats } | "vanished" | "unreadable";

/**
 * Reads a file or a link's target, through the confined reader with no symlink followed at all (not
 * the last component, not a directory on the way). `stable` is false when the file changed while it
 * was read; its content is still recorded, but its stat is not trusted next time.
 */
export function readEntry(workspace: string, rel: string, kind: "file" | "symlink", largeBytes: number): ReadResult {
  const ws = confined(workspace, { links: "never" });
  if (kind === "symlink") {
    try {
      const st = ws.lstat(rel);
      if (!st.isSymbolicLink()) return "vanished";
      return { kind: "symlink", content: ws.readlink(rel), st, stable: true };
    } catch (err) {
      return isGone(err) || err instanceof PathEscapeError ? "vanished" : "unreadable";
    }
  }
  let fd: number;
  try {
    fd = ws.openRead(rel);
  } catch (err) {
    // A link (now, or on the way) or no longer a regular file: it will be seen as what it is next time.
    return isGone(err) || err instanceof PathEscapeError || err instanceof WorkspaceFileError ? "vanished" : "unreadable";
  }
  try {
    const before = fs.fstatSync(fd);
    if (!before.isFile()) return "vanished";
    if (before.size > largeBytes) return { kind: "large", st: before };
    const content = Buffer.allocUnsafe(before.size);
    let off = 0;
    while (off < content.length) {
      const n = fs.readSync(fd, content, off, content.length - off, off);
      if (n === 0) break;
      off += n;
    }
    const after = fs.fstatSync(fd);
    const stable = off === before.size && after.size === before.size && after.mtimeMs === before.mtimeMs;
    return { kind: "file", content: off === content.length ? content : content.subarray(0, off), st: after, stable };
  } catch {
    return "unreadable";
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * lstat through the confined writer, or null when nothing is there or the way there is not a real
 * directory (a symlink on the way: nothing of the revision's can be there).
 */
export function lstatHere(ws: ConfinedDir, rel: string): Stats | null {
  try {
    return ws.lstatOrNull(rel);
  } catch (err) {
    if (err instanceof PathEscapeError) return null;
    throw err;
  }
}

/** Removes the file or symlink at `rel` (never what a link points at); nothing there is fine. */
export function unlinkIfPresent(ws: ConfinedDir, rel: string): void {
  try {
    ws.rm(rel, { force: true });
  } catch (err) {
    if (!(err instanceof PathEscapeError)) throw err;
  }
}

export function isGone(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** Every directory implied by a set of file paths ("a/b/c" gives "a" and "a/b"). */
export function dirsOf(paths: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const rel of paths) {
    let i = rel.lastIndexOf("/");
    while (i > 0) {
      const dir = rel.slice(0, i);
      if (out.has(dir)) break;
      out.add(dir);
      i = dir.lastIndexOf("/");
    }
  }
  return out;
}

/** Removes directories left empty by deleting `deleted`, deepest first, except those the revision has. */
export function removeEmptiedDirs(ws: ConfinedDir, deleted: string[], keep: Set<string>): void {
  const candidates = [...dirsOf(deleted)].filter((d) => !keep.has(d));
  candidates.sort((a, b) => b.split("/").length - a.split("/").length);
  for (const dir of candidates) {
    try {
      ws.rmdir(dir);
    } catch {
      // Not empty (ignored files, .git) or gone: leave it.
    }
  }
}

/** First entry under directory `rel` that restore will not delete (not a directory, not in `deleted`), if any. */
export function keptContent(ws: ConfinedDir, rel: string, deleted: Set<string>): string | undefined {
  for (const e of ws.readdir(rel)) {
    const r = `${rel}/${nameOfBytes(e.name)}`;
    if (e.isDirectory()) {
      const found = keptContent(ws, r, deleted);
      if (found !== undefined) return found;
    } else if (!deleted.has(r)) {
      return r;
    }
  }
  return undefined;
}

/** Removes a tree of empty directories, bottom-up; rmdir refuses anything that is not empty. */
export function removeEmptyTree(ws: ConfinedDir, rel: string): void {
  for (const e of ws.readdir(rel)) if (e.isDirectory()) removeEmptyTree(ws, `${rel}/${nameOfBytes(e.name)}`);
  ws.rmdir(rel);
}

/**
 * Replaces `rel` with the entry's content (or symlink): a file atomically (temp file + rename in the
 * held directory), a symlink by removing what is there and making the link. Never through a link.
 */
export function writeEntry(ws: ConfinedDir, rel: string, e: FlatEntry, data: Buffer): void {
  try {
    if (e.kind === "symlink") {
      if (lstatHere(ws, rel)?.isDirectory()) throw Object.assign(new Error("EISDIR"), { code: "EISDIR" });
      ws.rm(rel, { force: true });
      ws.symlink(data, rel);
    } else {
      ws.writeFile(rel, data, { mode: e.mode });
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EISDIR" || code === "ENOTEMPTY" || code === "EEXIST") {
      throw new RevisionError("REV_RESTORE_CONFLICT", `cannot restore ${rel}: a directory is in its place (holding ignored files?); move it away and retry`, {
        cause: err,
      });
    }
    throw new RevisionError("REV_RESTORE_CONFLICT", `cannot restore ${rel}: ${errorMessage(err)}`, { cause: err });
  }
}

/**
 * Throws REV_RESTORE_CONFLICT when a write is blocked by something restore will not remove: a file or
 * symlink (ignored, large, unreadable) where the revision needs a directory, or a directory holding
 * such things where the revision has a file.
 */
export function checkRestoreConflicts(ws: ConfinedDir, writes: Array<{ rel: string; chmodOnly: boolean }>, deleted: Set<string>): void {
  const checked = new Set<string>();
  for (const w of writes) {
    if (w.chmodOnly) continue;
    const parts = w.rel.split("/");
    let dir = "";
    for (let i = 0; i < parts.length - 1; i++) {
      dir = dir === "" ? parts[i]! : `${dir}/${parts[i]}`;
      if (checked.has(dir)) continue;
      checked.add(dir);
      const st = lstatHere(ws, dir);
      if (st && !st.isDirectory() && !deleted.has(dir)) {
        throw new RevisionError(
          "REV_RESTORE_CONFLICT",
          `cannot restore ${w.rel}: ${dir} is a ${st.isSymbolicLink() ? "symlink" : "file"} outside the workspace's revisions ` +
            `(ignored, large or unreadable), where the revision has a directory; move it away and retry. Nothing was changed.`,
        );
      }
    }
    if (lstatHere(ws, w.rel)?.isDirectory()) {
      const kept = keptContent(ws, w.rel, deleted);
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
export function ensureParentDirs(ws: ConfinedDir, rel: string, ensured: Set<string>): void {
  const parts = rel.split("/");
  let dir = "";
  for (let i = 0; i < parts.length - 1; i++) {
    dir = dir === "" ? parts[i]! : `${dir}/${parts[i]}`;
    if (ensured.has(dir)) continue;
    const st = lstatHere(ws, dir);
    if (!st) ws.mkdirp(dir);
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
