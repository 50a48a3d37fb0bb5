import fs from "node:fs";
import path from "node:path";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { Database } from "../sqlite/driver.js";
import { errorMessage } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { RevisionError } from "./rev-errors.js";
import { sha256 } from "./rev-tree.js";

// Content-addressed file contents of workspace revisions.
//
// Where: blobs up to `inlineMaxBytes` (1 MiB stored) live in the state DB, bigger ones as files under
// <stateDir>/blobs/<2 hex>/<hash>. Measured on this machine (2-core VM, ext4): 2,000 source-sized blobs
// insert in ~23 ms in one SQLite transaction against ~330 ms as files without fsync and ~3 s with an
// fsync each, and 200 reads take ~0.7 ms against ~6 ms; around 1 MiB the two meet, and a 20 MiB blob
// costs ~220 ms into SQLite (it goes through the WAL and is written twice) against ~70 ms as a
// fsync'd file. Large blobs as files also give their space back to the disk when gc deletes them,
// where SQLite only moves freed pages to its free list.
//
// Compression: raw DEFLATE at level 1. On 900 real TypeScript/JS files (3.8 MB) it keeps 33% of the
// bytes at ~80 us a file; level 6 keeps 31% at ~150 us, brotli q1 36% at ~75 us. Content that does not
// shrink by 10% (images, archives, already-compressed data) is stored raw, judged on a 64 KiB sample
// first so a big archive is not compressed for nothing.

/** Stored form of one blob, ready for {@link BlobStore.putMany}. */
export interface PreparedBlob {
  hash: string;
  /** Raw content bytes. */
  size: number;
  /** 0 raw, 1 raw DEFLATE. */
  codec: 0 | 1;
  data: Buffer;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ll_rev_blobs (
  hash TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  stored INTEGER NOT NULL,
  codec INTEGER NOT NULL,
  in_file INTEGER NOT NULL,
  data BLOB
);
`;

const SAMPLE = 64 * 1024;
const MIN_GAIN = 0.9;
const DEFLATE = { level: 1 };

/** Compresses `raw` when that pays (see the header comment). */
export function prepareBlob(raw: Buffer, hash: string = sha256(raw)): PreparedBlob {
  if (raw.length < 64) return { hash, size: raw.length, codec: 0, data: raw };
  if (raw.length > SAMPLE * 4) {
    const probe = deflateRawSync(raw.subarray(0, SAMPLE), DEFLATE);
    if (probe.length >= SAMPLE * MIN_GAIN) return { hash, size: raw.length, codec: 0, data: raw };
  }
  const packed = deflateRawSync(raw, DEFLATE);
  if (packed.length >= raw.length * MIN_GAIN) return { hash, size: raw.length, codec: 0, data: raw };
  return { hash, size: raw.length, codec: 1, data: packed };
}

interface BlobRow {
  size: number;
  codec: number;
  in_file: number;
  data: Buffer | null;
}

/** The blob half of the revision store (SQLite rows, big blobs as files). */
export class BlobStore {
  readonly dir: string;
  private readonly db: Database;
  private readonly inlineMax: number;
  private readonly stmts: ReturnType<BlobStore["prepare"]>;

  constructor(db: Database, dir: string, inlineMaxBytes: number) {
    this.db = db;
    this.dir = dir;
    this.inlineMax = inlineMaxBytes;
    if (!db.readonly) db.exec(SCHEMA);
    this.stmts = this.prepare();
  }

  private prepare() {
    const db = this.db;
    return {
      has: db.prepare<[string], { one: number }>("SELECT 1 AS one FROM ll_rev_blobs WHERE hash = ?"),
      get: db.prepare<[string], BlobRow>("SELECT size, codec, in_file, data FROM ll_rev_blobs WHERE hash = ?"),
      where: db.prepare<[string], { in_file: number }>("SELECT in_file FROM ll_rev_blobs WHERE hash = ?"),
      put: db.prepare("INSERT OR IGNORE INTO ll_rev_blobs (hash, size, stored, codec, in_file, data) VALUES (?, ?, ?, ?, ?, ?)"),
    };
  }

  /** Whether the blob is recorded (its row exists). */
  has(hash: string): boolean {
    return this.stmts.has.get(hash) !== undefined;
  }

  /** Whether the blob is recorded and, when kept as a file, the file is there (checked at commit). */
  present(hash: string): boolean {
    const row = this.stmts.where.get(hash);
    if (!row) return false;
    return !row.in_file || fs.existsSync(this.filePath(hash));
  }

  /** Path of a blob kept as a file. */
  filePath(hash: string): string {
    return path.join(this.dir, hash.slice(0, 2), hash);
  }

  /**
   * Stores blobs: big ones are first written as files (temp + fsync + rename), then all rows go in
   * one transaction. A crash in between leaves only unreferenced blobs, which gc removes.
   */
  putMany(blobs: PreparedBlob[]): { count: number; bytes: number } {
    if (blobs.length === 0) return { count: 0, bytes: 0 };
    const dirs = new Set<string>();
    for (const b of blobs) {
      // A row whose file is gone (a damaged store) gets its file back.
      if (b.data.length <= this.inlineMax || this.present(b.hash)) continue;
      const file = this.filePath(b.hash);
      dirs.add(path.dirname(file));
      writeFileDurably(file, b.data);
    }
    for (const d of dirs) fsyncDir(d);
    const written = { count: 0, bytes: 0 };
    this.db.transaction(() => {
      for (const b of blobs) {
        const inFile = b.data.length > this.inlineMax;
        const r = this.stmts.put.run(b.hash, b.size, b.data.length, b.codec, inFile ? 1 : 0, inFile ? null : b.data);
        if (r.changes > 0) {
          written.count++;
          written.bytes += b.data.length;
        }
      }
    })();
    failpoint("rev-blobs");
    return written;
  }

  /** Content of a blob, verified against its hash; `what` names the path for the error message. */
  get(hash: string, what?: string): Buffer {
    return decodeBlob(this.readStored(hash, what), what);
  }

  /**
   * A blob in its stored form (compressed or not), for copying it to another store as it is; read
   * and verified like {@link get}, so a damaged blob is never passed on.
   */
  getStored(hash: string, what?: string): PreparedBlob {
    const blob = this.readStored(hash, what);
    decodeBlob(blob, what);
    return blob;
  }

  private readStored(hash: string, what?: string): PreparedBlob {
    const about = what ? ` (${what})` : "";
    const row = this.stmts.get.get(hash);
    if (!row) {
      throw new RevisionError("REV_BLOB_MISSING", `blob ${hash}${about} is missing from the revision store`);
    }
    let stored: Buffer;
    if (row.in_file) {
      try {
        stored = fs.readFileSync(this.filePath(hash));
      } catch (err) {
        throw new RevisionError("REV_BLOB_MISSING", `blob ${hash}${about} is missing: cannot read ${this.filePath(hash)} (${errorMessage(err)})`, {
          cause: err,
        });
      }
    } else {
      stored = row.data ?? Buffer.alloc(0);
    }
    if (row.codec !== 0 && row.codec !== 1) {
      throw new RevisionError("REV_BLOB_CORRUPT", `blob ${hash}${about} is corrupt: unknown codec ${row.codec}`);
    }
    return { hash, size: row.size, codec: row.codec as 0 | 1, data: stored };
  }
}

/**
 * The content of a stored blob, checked against its size and hash: a blob read from a damaged row or
 * file, or received from another store, is an error naming its hash, never wrong content.
 */
export function decodeBlob(blob: PreparedBlob, what?: string): Buffer {
  const about = what ? ` (${what})` : "";
  let raw: Buffer;
  try {
    raw = blob.codec === 1 ? inflateRawSync(blob.data) : blob.data;
  } catch (err) {
    throw new RevisionError("REV_BLOB_CORRUPT", `blob ${blob.hash}${about} is corrupt: ${errorMessage(err)}`, { cause: err });
  }
  if (raw.length !== blob.size || sha256(raw) !== blob.hash) {
    throw new RevisionError("REV_BLOB_CORRUPT", `blob ${blob.hash}${about} is corrupt: its content no longer hashes to its name`);
  }
  return raw;
}

/** Writes `file` so that it either does not exist or is complete: temp file, fsync, rename. */
export function writeFileDurably(file: string, data: Buffer): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const fd = fs.openSync(tmp, "w", 0o644);
  try {
    let off = 0;
    while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, file);
}

function fsyncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, "r");
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // Not every platform lets a directory be fsync'd; the rename is still atomic.
  }
}
