import fs from "node:fs";
import type Database from "better-sqlite3";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { LedgerloopError } from "../errors.js";
import { SqliteLedger } from "../ledger/sqlite-ledger.js";
import { openStateDb } from "../ledger/state-db.js";
import { resolveWorkspace, stateLocation } from "../runtime.js";
import type { EventType, LedgerEvent } from "../state.js";

// The viewer's read-only access to a state database: opening it, and the reads every view shares.

/** An error the viewer answers with its status code and message (never a stack). */
export class HttpError extends LedgerloopError {
  readonly status: number;
  constructor(status: number, message: string) {
    super(status === 404 ? "NOT_FOUND" : status === 400 ? "BAD_REQUEST" : "HTTP_ERROR", message);
    this.status = status;
  }
}

/** Where the viewer reads from. */
export interface ViewerSource {
  workspace: string;
  stateDir?: string;
}

/** A run's state database opened read-only: the viewer never writes, and never waits long for a lock. */
export interface ReadOnlyState {
  workspace: string;
  dbPath: string;
  db: Database.Database;
  ledger: SqliteLedger | null;
  checkpointer: SqliteSaver | null;
  close(): void;
}

/** Resolves the workspace and its state database path once, at start. */
export function locate(src: ViewerSource): { workspace: string; stateDir: string; dbPath: string } {
  const workspace = resolveWorkspace(src.workspace);
  return { workspace, ...stateLocation(workspace, src.stateDir) };
}

/**
 * Opens the state database read-only, or returns null when no run has created it yet. Opened per
 * request: a short-lived reader never holds a WAL snapshot that would keep a running agent's
 * checkpoints from being folded back into the main file.
 */
export function openReadOnly(workspace: string, dbPath: string): ReadOnlyState | null {
  if (!fs.existsSync(dbPath)) return null;
  // The page check reads the whole file: once per version of the files, not once per request.
  const version = fileVersion(dbPath);
  const check = checkedVersions.get(dbPath) !== version;
  // A WAL reader does not wait for writers; the short timeout only covers WAL recovery by another process.
  const db = openStateDb(dbPath, { create: false, readonly: true, busyTimeoutMs: 250, check });
  if (check) checkedVersions.set(dbPath, version);
  try {
    const tables = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name),
    );
    return {
      workspace,
      dbPath,
      db,
      ledger: tables.has("ll_events") && tables.has("ll_blobs") ? new SqliteLedger(db) : null,
      // Its setup() only runs CREATE TABLE IF NOT EXISTS, a no-op on existing tables, so it is safe read-only.
      checkpointer: tables.has("checkpoints") && tables.has("writes") ? new SqliteSaver(db) : null,
      close: () => db.close(),
    };
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Per state database, the version of its files (see fileVersion) that last passed the page check. */
const checkedVersions = new Map<string, string>();

/** Size, mtime and inode of the database and its WAL: changes whenever either is written or replaced. */
function fileVersion(dbPath: string): string {
  return [dbPath, `${dbPath}-wal`]
    .map((f) => {
      try {
        const st = fs.statSync(f, { bigint: true });
        return `${st.ino}:${st.size}:${st.mtimeNs}`;
      } catch {
        return "-";
      }
    })
    .join("/");
}

export function hasTable(db: Database.Database, name: string): boolean {
  return Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name));
}

export interface RunRow {
  thread_id: string;
  created_at: string;
  goal: string;
  settings: string;
}

export function runRows(db: Database.Database): Map<string, RunRow> {
  if (!hasTable(db, "ll_runs")) return new Map();
  return new Map((db.prepare("SELECT * FROM ll_runs").all() as RunRow[]).map((r) => [r.thread_id, r]));
}

/**
 * The events of the thread's current branch: the one its newest event is on. That is where a
 * running step writes (ahead of its checkpoint), and where a rewind continues (its time_travel event).
 */
export async function currentBranch(st: ReadOnlyState, thread: string, types?: EventType[]): Promise<LedgerEvent[]> {
  if (!st.ledger) return [];
  const head = st.db.prepare<[string], { id: string }>("SELECT id FROM ll_events WHERE thread_id = ? ORDER BY seq DESC LIMIT 1").get(thread);
  if (!head) return [];
  return st.ledger.branch(head.id, types ? { types } : {});
}

/** The events of one type, typed. */
export const of = <T extends EventType>(events: LedgerEvent[], type: T) => events.filter((e): e is LedgerEvent<T> => e.type === type);
