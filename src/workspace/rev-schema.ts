import type { Database, Statement } from "../sqlite/driver.js";
import type { StatRow } from "./rev-stat-cache.js";

// The tables of the revision store (revisions.ts), and moving a workspace's rows to a new path.
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

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS ll_rev_trees (
  hash TEXT PRIMARY KEY,
  data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS ll_rev_revisions (
  rev_id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL,
  label TEXT,
  files INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ll_rev_heads (
  workspace TEXT PRIMARY KEY,
  rev_id TEXT NOT NULL,
  gen INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ll_rev_stat (
  workspace TEXT NOT NULL,
  path TEXT NOT NULL,
  kind TEXT NOT NULL,
  mode INTEGER NOT NULL,
  size INTEGER NOT NULL,
  mtime REAL NOT NULL,
  ctime REAL NOT NULL,
  ino INTEGER NOT NULL,
  hash TEXT NOT NULL,
  trusted INTEGER NOT NULL,
  PRIMARY KEY (workspace, path)
) WITHOUT ROWID;
`;

/**
 * Carries a workspace's revision head and stat cache over to the path it now has (it was moved, or
 * is a copy adopted as a workspace of its own), so its files are compared with the revision they
 * were last recorded as. Does nothing when the new path already has a head of its own.
 */
export function renameWorkspaceRevisions(db: Database, from: string, to: string): void {
  if (from === to || !db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'll_rev_heads'").get()) return;
  if (db.prepare("SELECT 1 FROM ll_rev_heads WHERE workspace = ?").get(to)) return;
  db.prepare("UPDATE ll_rev_heads SET workspace = ? WHERE workspace = ?").run(to, from);
  db.prepare("DELETE FROM ll_rev_stat WHERE workspace = ?").run(to);
  // The stat rows keep their inode and ctime: a copied file differs in both, so it is read again.
  db.prepare("UPDATE ll_rev_stat SET workspace = ? WHERE workspace = ?").run(to, from);
}

type Stmt<P extends unknown[] = unknown[], R = unknown> = Statement<P, R>;

/** The prepared statements a revision store runs. */
export interface RevisionStatements {
  getTree: Stmt<[string], { data: Buffer }>;
  hasTree: Stmt<[string], { one: number }>;
  putTree: Stmt;
  getRev: Stmt<[string], { rev_id: string; created_at: string; label: string | null; files: number; bytes: number }>;
  byPrefix: Stmt<[string, string], { rev_id: string }>;
  putRev: Stmt;
  getHead: Stmt<[string], { rev_id: string; gen: number; updated_at: string }>;
  putHead: Stmt;
  statRows: Stmt<[string], StatRow>;
  putStat: Stmt;
  delStat: Stmt;
  clearStat: Stmt;
}

/** The statements of a revision store over `db`. */
export function prepareRevisionStatements(db: Database): RevisionStatements {
  return {
    getTree: db.prepare<[string], { data: Buffer }>("SELECT data FROM ll_rev_trees WHERE hash = ?"),
    hasTree: db.prepare<[string], { one: number }>("SELECT 1 AS one FROM ll_rev_trees WHERE hash = ?"),
    putTree: db.prepare("INSERT OR IGNORE INTO ll_rev_trees (hash, data) VALUES (?, ?)"),
    getRev: db.prepare<[string], { rev_id: string; created_at: string; label: string | null; files: number; bytes: number }>(
      "SELECT rev_id, created_at, label, files, bytes FROM ll_rev_revisions WHERE rev_id = ?",
    ),
    byPrefix: db.prepare<[string, string], { rev_id: string }>("SELECT rev_id FROM ll_rev_revisions WHERE rev_id >= ? AND rev_id < ? ORDER BY rev_id LIMIT 2"),
    putRev: db.prepare("INSERT OR IGNORE INTO ll_rev_revisions (rev_id, created_at, label, files, bytes) VALUES (?, ?, ?, ?, ?)"),
    getHead: db.prepare<[string], { rev_id: string; gen: number; updated_at: string }>("SELECT rev_id, gen, updated_at FROM ll_rev_heads WHERE workspace = ?"),
    putHead: db.prepare(
      `INSERT INTO ll_rev_heads (workspace, rev_id, gen, updated_at) VALUES (?, ?, 1, ?)
       ON CONFLICT(workspace) DO UPDATE SET rev_id = excluded.rev_id, gen = ll_rev_heads.gen + 1, updated_at = excluded.updated_at`,
    ),
    statRows: db.prepare<[string], StatRow>("SELECT path, kind, mode, size, mtime, ctime, ino, hash, trusted FROM ll_rev_stat WHERE workspace = ?"),
    putStat: db.prepare(
      `INSERT INTO ll_rev_stat (workspace, path, kind, mode, size, mtime, ctime, ino, hash, trusted)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(workspace, path) DO UPDATE SET kind = excluded.kind, mode = excluded.mode, size = excluded.size,
         mtime = excluded.mtime, ctime = excluded.ctime, ino = excluded.ino, hash = excluded.hash, trusted = excluded.trusted`,
    ),
    delStat: db.prepare("DELETE FROM ll_rev_stat WHERE workspace = ? AND path = ?"),
    clearStat: db.prepare("DELETE FROM ll_rev_stat WHERE workspace = ?"),
  };
}
