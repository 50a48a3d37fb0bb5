import type Database from "better-sqlite3";

// The tables of the revision store (see revisions.ts for what each holds and in which order a
// snapshot writes them), and moving a workspace's rows to a new path.

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
export function renameWorkspaceRevisions(db: Database.Database, from: string, to: string): void {
  if (from === to || !db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'll_rev_heads'").get()) return;
  if (db.prepare("SELECT 1 FROM ll_rev_heads WHERE workspace = ?").get(to)) return;
  db.prepare("UPDATE ll_rev_heads SET workspace = ? WHERE workspace = ?").run(to, from);
  db.prepare("DELETE FROM ll_rev_stat WHERE workspace = ?").run(to);
  // The stat rows keep their inode and ctime: a copied file differs in both, so it is read again.
  db.prepare("UPDATE ll_rev_stat SET workspace = ? WHERE workspace = ?").run(to, from);
}
