import fs from "node:fs";
import { nameOfBytes, shownName } from "./byte-names.js";

// The descriptor-level steps of the confined reader (confined.ts): /proc/self/fd paths, byte paths,
// and errors that name the workspace path rather than the /proc one.

/** O_PATH (Linux): a descriptor naming an object without opening it; a FIFO never blocks, a device is never opened. */
export const O_PATH = 0o10000000;
export const C = fs.constants;
// Linux gives up at 40 links (ELOOP); so do we.
export const MAX_SYMLINK_HOPS = 40;
export const SLASH = 0x2f;

/** `/proc/self/fd/<fd>[/name]`: `name` looked up in the directory `fd` holds, as openat would. */
export function proc(fd: number, name?: Buffer): Buffer {
  const dir = Buffer.from(`/proc/self/fd/${fd}`);
  return name ? Buffer.concat([dir, Buffer.from("/"), name]) : dir;
}

/** The components of a byte path, without empty ones and ".". */
export function split(p: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= p.length; i++) {
    if (i < p.length && p[i] !== SLASH) continue;
    const part = p.subarray(start, i);
    if (part.length > 0 && !(part.length === 1 && part[0] === 0x2e)) out.push(Buffer.from(part));
    start = i + 1;
  }
  return out;
}

/** The component is "..". */
export const isDotDot = (b: Buffer) => b.length === 2 && b[0] === 0x2e && b[1] === 0x2e;
/** A path as error messages show it. */
export const shown = (p: string | Buffer) => JSON.stringify(shownName(Buffer.isBuffer(p) ? nameOfBytes(p) : p));

/** Closes every descriptor given (nulls skipped). */
export function closeAll(fds: Iterable<number | null>): void {
  for (const fd of fds) if (fd !== null) fs.closeSync(fd);
}

/** A new errno-style error (`code`, message) naming the workspace path. */
export function errno(code: string, message: string, rel: string | Buffer): Error {
  return errnoAt(Object.assign(new Error(`${code}: ${message}`), { code }), rel);
}

/** An errno error naming the workspace path instead of the /proc path it was met through. */
export function errnoAt(err: unknown, rel: string | Buffer): Error {
  const e = err as NodeJS.ErrnoException;
  if (!e?.code) return err as Error;
  const out = new Error(`${e.code}: ${(e.message.split(":")[1] ?? "").split(",")[0]!.trim() || e.code}, ${shown(rel)}`) as NodeJS.ErrnoException;
  out.code = e.code;
  out.errno = e.errno;
  return out;
}

/** fsync of a held directory, so the rename survives a crash; some file systems refuse it (the rename is atomic still). */
export function syncDir(dir: number): void {
  try {
    const fd = fs.openSync(proc(dir), C.O_RDONLY | C.O_DIRECTORY);
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // not supported here
  }
}

/** Removes everything inside the held directory `dir`, each entry through a descriptor of its own directory. */
export function emptyDir(dir: number): void {
  for (const e of fs.readdirSync(proc(dir), { encoding: "buffer" })) {
    let fd: number;
    try {
      fd = fs.openSync(proc(dir, e), O_PATH | C.O_NOFOLLOW);
    } catch {
      continue;
    }
    try {
      if (fs.fstatSync(fd).isDirectory()) {
        emptyDir(fd);
        fs.rmdirSync(proc(dir, e));
      } else fs.unlinkSync(proc(dir, e));
    } finally {
      fs.closeSync(fd);
    }
  }
}

/**
 * The regular file at `p` (a path ledgerloop itself chose, whose last name the agent may control),
 * or null: the last name is not followed when it is a symlink, a FIFO or device is never opened
 * (O_NONBLOCK, then fstat), and a file larger than `maxBytes` is not read. With `follow`, a
 * symlink is followed (for files only read to learn what to hide, never shown).
 */
export function readRegularNoFollow(p: string, maxBytes: number, opts: { follow?: boolean } = {}): Buffer | null {
  let fd: number;
  try {
    fd = fs.openSync(p, C.O_RDONLY | (opts.follow ? 0 : C.O_NOFOLLOW) | C.O_NONBLOCK | C.O_NOCTTY);
  } catch {
    return null;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > maxBytes) return null;
    return fs.readFileSync(fd);
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}
