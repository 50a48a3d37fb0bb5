import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { PathEscapeError, WorkspaceFileError } from "../errors.js";
import { bytesOfName } from "./byte-names.js";
import { C, closeAll, emptyDir, errno, errnoAt, isDotDot, MAX_SYMLINK_HOPS, O_PATH, proc, shown, SLASH, split, syncDir } from "./confined-fd.js";

// The one way ledgerloop itself reads and writes workspace paths on the host. The workspace is the
// agent's: any name in it may be swapped for a symlink to `/` at any moment, by a process still
// running. So a path is never handed to the kernel whole: it is walked one component at a time,
// each opened relative to the directory already held (`/proc/self/fd/<fd>/<name>` resolves `name`
// in that very directory, as openat would; Node has no openat), with O_NOFOLLOW, and every symlink
// met is read and followed by us, only while it stays beneath the root. Whatever is acted on
// (read, fchmod, renamed into place) is then the object held by a file descriptor, not a path that
// could lead elsewhere a moment later. Names are bytes: a name that is not UTF-8 is kept as it is.

/** A workspace-relative path: bytes, or a string as byte-names.ts makes them (non-UTF-8 bytes escaped). */
export type RelPath = string | Buffer;

/** How symlinks along a path are treated: followed while they stay beneath the root, or refused. */
export type LinkPolicy = "inside" | "never";

interface Walked {
  /** Descriptors of the directories walked, the root first; the last one holds `name`. */
  dirs: number[];
  /** Names of those directories below the root: where `name` really is, symlinks resolved. */
  names: Buffer[];
  /** The last component, or null when the path is the root itself. */
  name: Buffer | null;
  /** O_PATH descriptor of the object reached (not opened in "parent" mode, nor when missing). */
  fd: number | null;
}

/** Options of {@link ConfinedDir.writeFile}. */
export interface WriteOptions {
  /** Mode of the new file; default: the mode of the file replaced, else 0666 less the umask. */
  mode?: number;
  /** Give the new file the replaced file's owner and group (where this process may). */
  keepOwner?: boolean;
  /** Create missing parent directories (real directories; a symlink among them is refused). */
  mkdirs?: boolean;
}

/**
 * Reads and writes beneath one root directory by file descriptor; see the note at the top of this
 * file. Linux only (it needs /proc/self/fd). Escapes throw PathEscapeError; a missing file throws
 * the usual errno error (code ENOENT) naming the workspace path.
 */
export class ConfinedDir {
  private readonly roots: Buffer[];

  constructor(
    readonly root: string,
    readonly opts: { links?: LinkPolicy } = {},
  ) {
    if (process.platform !== "linux") throw new PathEscapeError(`confined workspace access needs Linux's /proc/self/fd; ${process.platform} is not supported`);
    const real = fs.realpathSync(root);
    this.roots = [...new Set([path.resolve(root), real])].map((r) => Buffer.from(r));
  }

  /**
   * Walks `rel` from the root. "follow": the last component's symlinks are followed too; "nofollow":
   * the last component itself is reached; "parent": only its directory is. With `mkdirs`, missing
   * directories along the way are created (and a symlink among them refused whatever the policy).
   */
  private walk(rel: RelPath, mode: "follow" | "nofollow" | "parent" | "resolve", mkdirs?: number): Walked {
    const raw = Buffer.isBuffer(rel) ? rel : bytesOfName(rel);
    if (raw.includes(0)) throw new PathEscapeError(`Path ${shown(rel)} contains a NUL byte.`);
    let pending = split(this.beneath(raw, rel, "is outside"));
    const dirs = [fs.openSync(this.root, O_PATH | C.O_DIRECTORY)];
    const names: Buffer[] = [];
    let hops = 0;
    let made = 0;
    try {
      while (pending.length > 0) {
        const name = pending.shift()!;
        if (isDotDot(name)) {
          if (dirs.length === 1) throw new PathEscapeError(`Path ${shown(rel)} leads above the workspace root through "..".`);
          fs.closeSync(dirs.pop()!);
          names.pop();
          continue;
        }
        const last = pending.length === 0;
        const top = dirs.at(-1)!;
        if (last && mode === "parent") return { dirs, names, name, fd: null };
        let fd: number;
        try {
          fd = fs.openSync(proc(top, name), O_PATH | C.O_NOFOLLOW);
        } catch (err) {
          if (mode === "resolve" && (err as NodeJS.ErrnoException).code === "ENOENT" && !pending.some(isDotDot)) {
            // Nothing exists from here on, so no link either: the rest is where it will be made.
            const rest = [name, ...pending];
            return { dirs, names: [...names, ...rest.slice(0, -1)], name: rest.at(-1)!, fd: null };
          }
          // (`made` bounds a race with something removing each directory as soon as it is made.)
          if ((err as NodeJS.ErrnoException).code !== "ENOENT" || mkdirs === undefined || last || ++made > 256) throw errnoAt(err, rel);
          try {
            fs.mkdirSync(proc(top, name), { mode: mkdirs });
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw errnoAt(e, rel);
          }
          pending.unshift(name);
          continue;
        }
        const st = fs.fstatSync(fd);
        if (st.isSymbolicLink()) {
          if (last && mode === "nofollow") return { dirs, names, name, fd };
          fs.closeSync(fd);
          if (mkdirs !== undefined || this.opts.links === "never") {
            throw new PathEscapeError(`Path ${shown(rel)} goes through a symlink (${shown(name)}), which is not followed here.`);
          }
          if (++hops > MAX_SYMLINK_HOPS) throw new PathEscapeError(`Path ${shown(rel)} cannot be resolved: too many levels of symlinks (a loop?).`);
          let target: Buffer;
          try {
            target = fs.readlinkSync(proc(top, name), { encoding: "buffer" });
          } catch (err) {
            // Swapped for something else since it was opened: look at it again (bounded by the hops).
            const again = (err as NodeJS.ErrnoException).code;
            if (again !== "EINVAL" && again !== "ENOENT") throw errnoAt(err, rel);
            pending.unshift(name);
            continue;
          }
          if (target[0] === SLASH) {
            const inner = this.beneath(target, rel, "goes through a symlink that leads outside the workspace, to");
            closeAll(dirs.splice(1));
            names.splice(0);
            pending = [...split(inner), ...pending];
          } else pending = [...split(target), ...pending];
          continue;
        }
        if (last) return { dirs, names, name, fd };
        if (!st.isDirectory()) {
          fs.closeSync(fd);
          throw errno("ENOTDIR", "not a directory", rel);
        }
        dirs.push(fd);
        names.push(name);
      }
      return { dirs, names, name: null, fd: null };
    } catch (err) {
      closeAll(dirs);
      throw err;
    }
  }

  /** `p` relative to the root (absolute paths must lie beneath it). */
  private beneath(p: Buffer, rel: RelPath, why: string): Buffer {
    if (p[0] !== SLASH) return p;
    for (const r of this.roots) {
      if (p.equals(r)) return Buffer.alloc(0);
      if (p.length > r.length && p[r.length] === SLASH && p.subarray(0, r.length).equals(r)) return p.subarray(r.length + 1);
    }
    throw new PathEscapeError(`Path ${shown(rel)} ${why} ${shown(p)}; only files inside the workspace (${this.root}) can be used.`);
  }

  /** Walks, hands the result to `fn`, and closes every descriptor the walk opened. */
  private with<T>(rel: RelPath, mode: "follow" | "nofollow" | "parent" | "resolve", fn: (w: Walked) => T, mkdirs?: number): T {
    const w = this.walk(rel, mode, mkdirs);
    try {
      return fn(w);
    } finally {
      closeAll([...w.dirs, w.fd]);
    }
  }

  /**
   * Where `rel` really is beneath the root (workspace-relative bytes, "" for the root): every
   * symlink on the way and at the end followed while it stays inside; the last name may not exist yet.
   */
  resolve(rel: RelPath): Buffer {
    return this.with(rel, "resolve", (w) => {
      const parts = w.name ? [...w.names, w.name] : w.names;
      return Buffer.from(parts.map((p) => p.toString("latin1")).join("/"), "latin1");
    });
  }

  /** stat(2) of `rel`, symlinks beneath the root followed. */
  stat(rel: RelPath): fs.Stats {
    return this.with(rel, "follow", (w) => fs.fstatSync(w.fd ?? w.dirs.at(-1)!));
  }

  /** lstat(2) of `rel`: a symlink as the last component is described itself. */
  lstat(rel: RelPath): fs.Stats {
    return this.with(rel, "nofollow", (w) => fs.fstatSync(w.fd ?? w.dirs.at(-1)!));
  }

  /** lstat, or null when nothing is there (ENOENT, ENOTDIR); escapes still throw. */
  lstatOrNull(rel: RelPath): fs.Stats | null {
    try {
      return this.lstat(rel);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw err;
    }
  }

  /** A read-only descriptor of the regular file at `rel` (caller closes it); FIFOs, devices and directories are refused. */
  openRead(rel: RelPath): number {
    return this.with(rel, "follow", (w) => {
      const st = fs.fstatSync(w.fd ?? w.dirs.at(-1)!);
      if (!st.isFile()) throw new WorkspaceFileError("NOT_A_REGULAR_FILE", `${shown(rel)} is not a regular file`);
      // Reopening the O_PATH descriptor opens that very inode, whatever the name points at by now.
      return fs.openSync(proc(w.fd!), C.O_RDONLY | C.O_NOCTTY | C.O_NONBLOCK);
    });
  }

  /** Content of the regular file at `rel`; with `maxBytes`, a larger file is refused (FILE_TOO_LARGE). */
  readFile(rel: RelPath, opts: { maxBytes?: number } = {}): Buffer {
    const fd = this.openRead(rel);
    try {
      const max = opts.maxBytes ?? Number.POSITIVE_INFINITY;
      const size = fs.fstatSync(fd).size;
      const tooLarge = () => new WorkspaceFileError("FILE_TOO_LARGE", `${shown(rel)} is larger than ${max} bytes`);
      if (size > max) throw tooLarge();
      const chunks: Buffer[] = [];
      let total = 0;
      let want = Math.min(size + 1, 1 << 24);
      for (;;) {
        const buf = Buffer.allocUnsafe(want);
        want = 64 * 1024;
        const n = fs.readSync(fd, buf, 0, buf.length, null);
        if (n === 0) break;
        total += n;
        // The file may grow while it is read: the cap holds for what is read, not for what fstat said.
        if (total > max) throw tooLarge();
        chunks.push(buf.subarray(0, n));
      }
      return Buffer.concat(chunks, total);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Names (bytes) in the directory at `rel`, with their types. */
  readdir(rel: RelPath): fs.Dirent<Buffer>[] {
    return this.with(rel, "follow", (w) => {
      const fd = w.fd ?? w.dirs.at(-1)!;
      if (!fs.fstatSync(fd).isDirectory()) throw errno("ENOTDIR", "not a directory", rel);
      return fs.readdirSync(proc(fd), { encoding: "buffer", withFileTypes: true });
    });
  }

  /**
   * Replaces (or creates) the file at `rel` atomically: a temp file in the same held directory,
   * written, fsync'd, then renamed over the name. A symlink at `rel` is replaced, never written
   * through.
   */
  writeFile(rel: RelPath, data: string | Uint8Array, opts: WriteOptions = {}): void {
    this.with(
      rel,
      "parent",
      (w) => {
        if (!w.name) throw errno("EISDIR", "illegal operation on a directory", rel);
        const dir = w.dirs.at(-1)!;
        const old = this.fstatAt(dir, w.name);
        if (old?.isDirectory()) throw errno("EISDIR", "illegal operation on a directory", rel);
        const mode = opts.mode ?? (old?.isFile() ? old.mode & 0o7777 : 0o666 & ~process.umask());
        const tmp = Buffer.concat([Buffer.from("."), w.name.subarray(0, 180), Buffer.from(`.ll-write-${process.pid}-${randomBytes(4).toString("hex")}`)]);
        const fd = fs.openSync(proc(dir, tmp), C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o600);
        try {
          try {
            fs.writeFileSync(fd, data);
            if (opts.keepOwner && old?.isFile()) {
              try {
                fs.fchownSync(fd, old.uid, old.gid);
              } catch {
                // only root may give a file away
              }
            }
            fs.fchmodSync(fd, mode); // after fchown, which clears set-id bits
            fs.fsyncSync(fd);
          } finally {
            fs.closeSync(fd);
          }
          fs.renameSync(proc(dir, tmp), proc(dir, w.name));
          syncDir(dir);
        } catch (err) {
          fs.rmSync(proc(dir, tmp), { force: true });
          throw errnoAt(err, rel);
        }
      },
      opts.mkdirs ? 0o777 : undefined,
    );
  }

  /** Creates `rel` and its missing parents as real directories; a symlink among them is refused. */
  mkdirp(rel: RelPath, mode = 0o777): void {
    this.with(
      rel,
      "parent",
      (w) => {
        if (!w.name) return;
        const dir = w.dirs.at(-1)!;
        try {
          fs.mkdirSync(proc(dir, w.name), { mode });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw errnoAt(err, rel);
          const st = this.fstatAt(dir, w.name);
          if (st?.isSymbolicLink()) throw new PathEscapeError(`Path ${shown(rel)} is a symlink, not a directory; it is not followed here.`);
          if (!st?.isDirectory()) throw errnoAt(err, rel);
        }
      },
      mode,
    );
  }

  /** The target of the symlink at `rel` (the link itself, not followed), as bytes. */
  readlink(rel: RelPath): Buffer {
    return this.with(rel, "parent", (w) => {
      if (!w.name) throw errno("EINVAL", "invalid argument", rel);
      try {
        return fs.readlinkSync(proc(w.dirs.at(-1)!, w.name), { encoding: "buffer" });
      } catch (err) {
        throw errnoAt(err, rel);
      }
    });
  }

  /** Removes the empty directory at `rel` (ENOTEMPTY otherwise; ENOTDIR when it is not a directory). */
  rmdir(rel: RelPath): void {
    this.with(rel, "parent", (w) => {
      if (!w.name) throw new PathEscapeError(`Path ${shown(rel)} is the workspace root, which is never removed.`);
      try {
        fs.rmdirSync(proc(w.dirs.at(-1)!, w.name));
      } catch (err) {
        throw errnoAt(err, rel);
      }
    });
  }

  /** Renames the entry at `rel` (itself, never a symlink's target) to `dest`, an absolute path of ledgerloop's own. */
  moveOut(rel: RelPath, dest: string): void {
    this.with(rel, "parent", (w) => {
      if (!w.name) throw new PathEscapeError(`Path ${shown(rel)} is the workspace root, which is never moved.`);
      try {
        fs.renameSync(proc(w.dirs.at(-1)!, w.name), dest);
      } catch (err) {
        throw errnoAt(err, rel);
      }
    });
  }

  /** Makes a symlink at `rel` holding `target` (as is: the link is the agent's to make, not ours to follow). */
  symlink(target: RelPath, rel: RelPath): void {
    this.with(rel, "parent", (w) => {
      if (!w.name) throw errno("EEXIST", "file already exists", rel);
      try {
        fs.symlinkSync(Buffer.isBuffer(target) ? target : bytesOfName(target), proc(w.dirs.at(-1)!, w.name));
      } catch (err) {
        throw errnoAt(err, rel);
      }
    });
  }

  /**
   * Removes `rel` (a symlink itself, never its target); a directory only with `recursive`, its
   * content removed through descriptors too. Nothing there is not an error with `force`.
   */
  rm(rel: RelPath, opts: { recursive?: boolean; force?: boolean } = {}): void {
    let w: Walked;
    try {
      w = this.walk(rel, "nofollow");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (opts.force && (code === "ENOENT" || code === "ENOTDIR")) return;
      throw err;
    }
    try {
      if (!w.name) throw new PathEscapeError(`Path ${shown(rel)} is the workspace root, which is never removed.`);
      const parent = w.dirs.at(-1)!;
      const st = fs.fstatSync(w.fd!);
      if (st.isDirectory()) {
        if (!opts.recursive) throw errno("EISDIR", "illegal operation on a directory", rel);
        emptyDir(w.fd!);
        fs.rmdirSync(proc(parent, w.name));
      } else fs.unlinkSync(proc(parent, w.name));
    } catch (err) {
      throw errnoAt(err, rel);
    } finally {
      closeAll([...w.dirs, w.fd]);
    }
  }

  /**
   * Changes the mode of the regular file at `rel` (a symlink there is left alone, not followed) by
   * fchmod on a descriptor of it; `decide` sees its stat and returns the new mode, or null to leave
   * it. Returns the stat seen, or null when it was not a regular file.
   */
  fchmod(rel: RelPath, decide: (st: fs.Stats) => number | null): fs.Stats | null {
    return this.with(rel, "nofollow", (w) => {
      if (w.fd === null) return null;
      const st = fs.fstatSync(w.fd);
      if (!st.isFile()) return null;
      const mode = decide(st);
      if (mode === null) return st;
      // fchmod needs an open file, not an O_PATH one; reopening through /proc opens the same inode.
      const fd = fs.openSync(proc(w.fd), C.O_RDONLY | C.O_NOCTTY | C.O_NONBLOCK);
      try {
        fs.fchmodSync(fd, mode);
      } finally {
        fs.closeSync(fd);
      }
      return st;
    });
  }

  /** lstat of `name` in the held directory `dir`, or null when missing. */
  private fstatAt(dir: number, name: Buffer): fs.Stats | null {
    let fd: number;
    try {
      fd = fs.openSync(proc(dir, name), O_PATH | C.O_NOFOLLOW);
    } catch {
      return null;
    }
    try {
      return fs.fstatSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }
}

/** A {@link ConfinedDir} for `root` (the workspace, or any directory whose content is untrusted). */
export function confined(root: string, opts: { links?: LinkPolicy } = {}): ConfinedDir {
  return new ConfinedDir(root, opts);
}
