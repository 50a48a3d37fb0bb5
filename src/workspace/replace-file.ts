import { constants as C } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { isRunning } from "../sandbox/proc.js";

// Why tools never write into an existing file in place: a file's inode can have other names (hard
// links) outside the workspace (pnpm's store links every package file into node_modules), and an
// in-place write changes every name at once. Replacing the name instead (temp file in the same
// directory, fsync, rename over it) gives the workspace name a new inode and leaves the others alone.
// It is also all-or-nothing after a crash, which keeps edit_file's retry guard (hashes of the whole
// file before and after) from ever seeing a half-written file.

// Linux gives up at 40 links (ELOOP).
const MAX_SYMLINK_HOPS = 40;

/**
 * Replaces the content of the file at `abs` (created when missing) by renaming a fully written and
 * fsync'd temp file over it, keeping the old file's mode (and owner, where the process may set it).
 * A symlink at `abs` is followed, so its target is replaced and the link stays a link; callers check
 * beforehand that the target is inside the workspace (resolveInWorkspace). Throws the errno error of
 * the step that failed (EISDIR when a directory is in the way, EACCES/EROFS, ...).
 */
export async function replaceFile(abs: string, data: string | Buffer): Promise<void> {
  const target = await followLinks(abs);
  const old = await fs.stat(target).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  if (old?.isDirectory()) throw Object.assign(new Error(`EISDIR: illegal operation on a directory, ${target}`), { code: "EISDIR" });
  const dir = path.dirname(target);
  await fs.mkdir(dir, { recursive: true });
  const mode = old ? old.mode & 0o7777 : 0o666 & ~process.umask();
  await removeStaleTemps(dir, path.basename(target));
  const tmp = path.join(dir, `${tempPrefix(path.basename(target))}${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
  // O_EXCL|O_NOFOLLOW: the temp name is ours alone, never something planted there in the meantime.
  const fh = await fs.open(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | (C.O_NOFOLLOW ?? 0), 0o600);
  try {
    try {
      await fh.writeFile(data);
      if (old) await fh.chown(old.uid, old.gid).catch(() => undefined); // only root may give a file away
      await fh.chmod(mode); // after chown: chown clears set-id bits
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, target);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await syncDir(dir);
}

const tempPrefix = (base: string) => `.${base}.ll-write-`;

/**
 * Removes the temp files an earlier write of this file left when its process died between writing
 * the temp file and renaming it (a kill -9, a worker taken over): the re-run of that write would
 * otherwise leave a stray `.name.ll-write-…` next to the file. Only temps of processes that are
 * gone are touched (one writer per workspace holds the lease, so a live one is this process).
 */
async function removeStaleTemps(dir: string, base: string): Promise<void> {
  const prefix = tempPrefix(base);
  let names: string[];
  try {
    names = (await fs.readdir(dir)).filter((n) => n.startsWith(prefix));
  } catch {
    return;
  }
  for (const n of names) {
    const pid = Number(/^(\d+)-/.exec(n.slice(prefix.length))?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || isRunning(pid)) continue;
    await fs.rm(path.join(dir, n), { force: true }).catch(() => undefined);
  }
}

/** Where writing `abs` lands: every symlink along the last component followed, dangling ones included. */
async function followLinks(abs: string): Promise<string> {
  let at = path.join(await realDir(path.dirname(abs)), path.basename(abs));
  for (let hops = 0; ; hops++) {
    let link: string;
    try {
      link = await fs.readlink(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EINVAL" || code === "ENOENT") return at; // not a link, or nothing there yet
      throw err;
    }
    if (hops >= MAX_SYMLINK_HOPS) throw Object.assign(new Error(`ELOOP: too many symbolic links, ${abs}`), { code: "ELOOP" });
    at = path.resolve(path.dirname(at), link);
    at = path.join(await realDir(path.dirname(at)), path.basename(at));
  }
}

/** realpath of a directory; for one not created yet, the realpath of its deepest existing ancestor plus the rest. */
async function realDir(dir: string): Promise<string> {
  try {
    return await fs.realpath(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" || path.dirname(dir) === dir) throw err;
    return path.join(await realDir(path.dirname(dir)), path.basename(dir));
  }
}

async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await fs.open(dir, "r");
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Some file systems refuse to fsync a directory; the rename is still atomic.
  }
}
