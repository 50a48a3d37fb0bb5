import fs from "node:fs";
import { SqliteCheckpointSaver } from "./sqlite-saver.js";
import { listRuns } from "./run-status.js";
import { SqliteLedger } from "./sqlite-ledger.js";
import { asStateError, isSqliteError, openStateDb } from "./state-db.js";
import { parseSettings, type ReadOnlyState, type StateSource } from "./viewer-state.js";

// The viewer's read port on a workspace's SQLite state database (the default backend).

/**
 * A workspace's state database as the viewer reads it. Opened per request: a short-lived reader
 * never holds a WAL snapshot that would keep a running agent's checkpoints from being folded back
 * into the main file. Until a run creates the file, every request sees no state.
 */
export function sqliteSource(workspace: string, dbPath: string): StateSource {
  return {
    kind: "sqlite",
    label: workspace,
    open: async () => openReadOnly(dbPath),
    // SQLite's own errors do not say which file: name the state database, as the CLI does.
    named: (err) => (isSqliteError(err) ? asStateError(err, dbPath) : err),
    close: async () => {},
  };
}

/** Opens the state database read-only, or returns null when no run has created it yet. */
export function openReadOnly(dbPath: string): ReadOnlyState | null {
  if (!fs.existsSync(dbPath)) return null;
  // The page check reads the whole file: once per version of the files, not once per request.
  const version = fileVersion(dbPath);
  const check = checkedVersions.get(dbPath) !== version;
  // A WAL reader does not wait for writers; the short timeout only covers WAL recovery by another process.
  const db = openStateDb(dbPath, { create: false, readonly: true, busyTimeoutMs: 250, check });
  if (check) checkedVersions.set(dbPath, version);
  try {
    const tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name));
    const ledger = tables.has("ll_events") && tables.has("ll_blobs");
    // Its setup() creates nothing when both tables exist, so it is safe read-only.
    const checkpointer = tables.has("checkpoints") && tables.has("writes") ? new SqliteCheckpointSaver(db) : null;
    const run = (thread: string) => (tables.has("ll_runs") ? db.prepare<[string], RunRow>("SELECT * FROM ll_runs WHERE thread_id = ?").get(thread) : undefined);
    return {
      where: "this workspace",
      ledger: ledger ? new SqliteLedger(db) : null,
      checkpointer,
      listRuns: async (thread) => listRuns(db).filter((r) => thread === undefined || r.thread === thread),
      hasThread: async (thread) =>
        Boolean(
          (ledger && db.prepare("SELECT 1 FROM ll_events WHERE thread_id = ? LIMIT 1").get(thread)) ||
          (checkpointer && db.prepare("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1").get(thread)) ||
          run(thread),
        ),
      runInfo: async (thread) => {
        const r = run(thread);
        return r ? { goal: r.goal, createdAt: r.created_at, settings: parseSettings(r.settings) } : null;
      },
      seqStats: async (thread) => {
        if (!ledger) return { maxSeq: 0, count: 0 };
        const r = db.prepare<[string], { m: number | null; n: number }>("SELECT MAX(seq) AS m, COUNT(*) AS n FROM ll_events WHERE thread_id = ?").get(thread);
        return { maxSeq: r?.m ?? 0, count: r?.n ?? 0 };
      },
      headEvent: async (thread) =>
        ledger
          ? (db.prepare<[string], { id: string }>("SELECT id FROM ll_events WHERE thread_id = ? ORDER BY seq DESC LIMIT 1").get(thread)?.id ?? null)
          : null,
      forked: async (thread) => ledger && Boolean(db.prepare("SELECT 1 FROM ll_forks WHERE thread_id = ? LIMIT 1").get(thread)),
      close: () => db.close(),
    };
  } catch (err) {
    db.close();
    throw err;
  }
}

interface RunRow {
  thread_id: string;
  created_at: string;
  goal: string;
  settings: string;
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
