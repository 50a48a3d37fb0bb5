import fs from "node:fs";
import { Database } from "../sqlite/driver.js";
import { errorMessage, nativeModuleError } from "../errors.js";
import { IndexCorruptError } from "./errors.js";

// index.db's layout and the checks made before opening it: the schema, its version and identity,
// and what to do with a file that cannot be used (it is derived data: moved aside and rebuilt).

/** SQLite `application_id` of index.db ("LLIX"), so a stray file is never mistaken for it. */
export const INDEX_APPLICATION_ID = 0x4c4c4958;
/** Largest part of index.db read through a memory map (address space, not memory: pages stay the OS's). */
export const INDEX_MMAP_BYTES = 256 * 1024 * 1024;
/** Bump when the layout changes: an index of another version is rebuilt, not migrated (it is derived data). */
export const INDEX_SCHEMA_VERSION = 2;

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  hash TEXT NOT NULL,
  size INTEGER NOT NULL,
  mtime_ms REAL NOT NULL,
  lang TEXT,
  lines INTEGER NOT NULL,
  -- content hash whose chunks the vector index holds; NULL or stale = to (re)embed
  vec_hash TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY,
  file_id INTEGER NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  symbols TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id, start_line);
CREATE TABLE IF NOT EXISTS symbols (
  id INTEGER PRIMARY KEY,
  file_id INTEGER NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  container TEXT,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY,
  event_id TEXT NOT NULL UNIQUE,
  thread_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  ts TEXT NOT NULL,
  preview TEXT NOT NULL,
  vec INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_thread ON events(thread_id, seq);
-- Runs deleted whole (ledgerloop delete) whose event vectors the vector store may still hold: named
-- here until the next event sync has deleted them there.
CREATE TABLE IF NOT EXISTS forgotten_threads (thread_id TEXT PRIMARY KEY);
-- Contentless trigram tables: they hold only the index, the text stays in the files (and events.preview).
-- Columns hold the "words" form (identifiers whole and split, space-padded) so that a phrase " pars"
-- matches word prefixes and " userrole " whole identifiers.
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(words, symbols, path, tokenize='trigram', content='', contentless_delete=1);
CREATE VIRTUAL TABLE IF NOT EXISTS paths_fts USING fts5(dirs, base, tokenize='trigram', content='', contentless_delete=1);
CREATE VIRTUAL TABLE IF NOT EXISTS symbols_fts USING fts5(name, tokenize='trigram', content='', contentless_delete=1);
-- History is searched by word (stemmed), not by trigram: event texts share common words ("test",
-- "fail", "error") whose trigram posting lists make a 50k-event search cost hundreds of ms.
CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(words, kind, tokenize='porter unicode61', content='', contentless_delete=1);
`;

/**
 * Opens an existing index file and checks it on that same connection (one open per process, not
 * two): the open handle when it is usable, or why it is not (the handle then closed).
 */
export function openExisting(file: string): { db: Database } | { problem: string } {
  let db: Database | undefined;
  try {
    db = new Database(file, { fileMustExist: true });
    const problem = problemOf(db);
    if (problem === null) return { db };
    db.close();
    return { problem };
  } catch (err) {
    db?.close();
    // Without its compiled module the driver cannot open any file: moving this one aside would lose a good index.
    const native = nativeModuleError(err);
    if (native) throw native;
    return { problem: `it cannot be read (${errorMessage(err)})` };
  }
}

/** Why the open index cannot be used, or null when it can. */
function problemOf(db: Database): string | null {
  const appId = db.pragma("application_id", { simple: true }) as number;
  const tables = db.prepare("SELECT COUNT(*) FROM sqlite_master").pluck().get() as number;
  if (appId !== INDEX_APPLICATION_ID) return tables === 0 ? null : `it is not a ledgerloop index (application_id ${appId})`;
  const schema = db.prepare("SELECT value FROM meta WHERE key = 'schema'").pluck().get() as string | undefined;
  if (schema !== String(INDEX_SCHEMA_VERSION)) return `it has index schema ${schema ?? "none"}, this version uses ${INDEX_SCHEMA_VERSION}`;
  // A process that died with the file open may have left it damaged: check the pages then (it costs
  // a read of the file, so not on every open).
  const wasOpen = db.prepare("SELECT value FROM meta WHERE key = 'open'").pluck().get() === "1";
  if (wasOpen) {
    const result = db.pragma("quick_check", { simple: true }) as string;
    if (result !== "ok") return `integrity check failed: ${result}`;
  }
  db.prepare("SELECT COUNT(*) FROM files").get();
  return null;
}

export function moveAside(file: string): void {
  for (const suffix of ["-wal", "-shm"]) fs.rmSync(file + suffix, { force: true });
  // Kept once for a post-mortem; an older one is replaced.
  fs.renameSync(file, `${file}.corrupt`);
}

export function asIndexError(err: unknown, file: string): Error {
  if (err instanceof IndexCorruptError) return err;
  const code = (err as { code?: string })?.code ?? "";
  const msg = errorMessage(err);
  if (code === "SQLITE_CORRUPT" || code === "SQLITE_NOTADB" || code.startsWith("SQLITE_CORRUPT") || /malformed|not a database/i.test(msg)) {
    return new IndexCorruptError(`search index ${file} is corrupt (${msg})`, { cause: err });
  }
  return err instanceof Error ? err : new Error(msg);
}
