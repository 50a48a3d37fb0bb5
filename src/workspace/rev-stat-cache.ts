import type { Stats } from "node:fs";
import type { FlatEntry } from "./rev-tree.js";
import type { FileChangeLists } from "./rev-types.js";

// The revision store's stat cache (table ll_rev_stat): per workspace path, the stat a file had when
// the head was taken and its content hash, so a file whose stat is unchanged is not read again.
// This is the change detector of revisions: equal trusted stat, same content; else the content is
// hashed and compared.

// "Racy" entries, as git calls them: a file whose timestamp is this close to the moment it was
// stat'ed could be rewritten within the same timestamp tick with the same size, and the stat would
// not show it. Such entries are re-hashed at the next snapshot instead of trusted. Linux stamps files
// from a coarse clock (a tick, <= 10 ms); a whole-second stamp hints at a file system with 1-2 s
// granularity (FAT, HFS+, some network mounts).
const RACY_MS = 100;
const RACY_COARSE_MS = 2000;

/** What the store remembers of one workspace path (a row of ll_rev_stat). */
export interface CacheEntry {
  kind: FlatEntry["kind"];
  mode: number;
  size: number;
  mtime: number;
  ctime: number;
  ino: number;
  hash: string;
  trusted: boolean;
}

/** A row of ll_rev_stat. */
export interface StatRow {
  path: string;
  kind: string;
  mode: number;
  size: number;
  mtime: number;
  ctime: number;
  ino: number;
  hash: string;
  trusted: number;
}

/** The cache entries of rows read from ll_rev_stat. */
export function cacheFromRows(rows: Iterable<StatRow>): Map<string, CacheEntry> {
  const map = new Map<string, CacheEntry>();
  for (const r of rows) {
    map.set(r.path, {
      kind: r.kind as CacheEntry["kind"],
      mode: r.mode,
      size: r.size,
      mtime: r.mtime,
      ctime: r.ctime,
      ino: r.ino,
      hash: r.hash,
      trusted: r.trusted === 1,
    });
  }
  return map;
}

export function entryOf(kind: CacheEntry["kind"], mode: number, st: Stats, hash: string, trusted: boolean): CacheEntry {
  return { kind, mode, size: st.size, mtime: st.mtimeMs, ctime: st.ctimeMs, ino: st.ino, hash, trusted };
}

export function sameStat(c: CacheEntry, st: Stats, mode: number): boolean {
  return c.size === st.size && c.mtime === st.mtimeMs && c.ctime === st.ctimeMs && c.ino === st.ino && c.mode === mode;
}

export function sameEntry(a: CacheEntry, b: CacheEntry): boolean {
  return (
    a.kind === b.kind &&
    a.mode === b.mode &&
    a.size === b.size &&
    a.mtime === b.mtime &&
    a.ctime === b.ctime &&
    a.ino === b.ino &&
    a.hash === b.hash &&
    a.trusted === b.trusted
  );
}

export function sameCache(a: Map<string, CacheEntry>, b: Map<string, CacheEntry>): boolean {
  if (a.size !== b.size) return false;
  for (const [rel, e] of b) {
    const x = a.get(rel);
    if (!x || !sameEntry(x, e)) return false;
  }
  return true;
}

/** Content changes between two path → entry maps (kind, mode or hash). */
export function compareEntries(before: Map<string, CacheEntry>, after: Map<string, CacheEntry>): FileChangeLists {
  const created: string[] = [];
  const modified: string[] = [];
  const deleted: string[] = [];
  for (const [rel, e] of after) {
    const b = before.get(rel);
    if (!b) created.push(rel);
    else if (b.kind !== e.kind || b.hash !== e.hash || b.mode !== e.mode) modified.push(rel);
  }
  for (const rel of before.keys()) if (!after.has(rel)) deleted.push(rel);
  return { created: created.sort(), modified: modified.sort(), deleted: deleted.sort() };
}

/** See RACY_MS: a stamp this close to the scan's start is not trusted at the next one. */
export function isRacy(st: Stats, t0: number): boolean {
  const window = st.mtimeMs % 1000 === 0 ? RACY_COARSE_MS : RACY_MS;
  return Math.max(st.mtimeMs, st.ctimeMs) >= t0 - window;
}
