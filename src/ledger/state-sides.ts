import fs from "node:fs";
import path from "node:path";
import type { BaseCheckpointSaver, BaseStore } from "@langchain/langgraph-checkpoint";
import { MigrationError } from "../errors.js";
import { defaultRedactor } from "../secrets.js";
import { isPostgresUrl, redactUrl } from "./state-url.js";
import type { PgRevisionReplica } from "./pg-revisions.js";
import type { RevisionStore } from "../workspace/revisions.js";
import type { Ledger } from "./port.js";
import type { RunRow } from "./runs.js";
import type { LedgerTransfer } from "./transfer.js";

// One side of `ledgerloop migrate`: a state database (a workspace's SQLite file or a PostgreSQL
// database) seen through the same ports the runtime writes with, plus the raw reads and writes a
// faithful copy needs. A source is opened read-only (SQLite) or without migrations (PostgreSQL),
// so a migration never changes it.

export interface StateSide {
  kind: "sqlite" | "postgres";
  /** The SQLite file, or the URL without its password. */
  location: string;
  ledger: Ledger & LedgerTransfer & { hasBlob(ref: string): Promise<boolean> };
  runRow(threadId: string): Promise<RunRow | null>;
  importRun(row: RunRow): Promise<boolean>;
  /** Every thread with a registered run, ledger events or checkpoints. */
  threads(): Promise<string[]>;
  /** Null for a source that never stored a checkpoint (no checkpoint tables). */
  checkpointer: BaseCheckpointSaver | null;
  /** The lessons store (null for a source without one). */
  store: BaseStore | null;
  /** The workspace revisions (null for a SQLite source that never stored one). */
  revisions: RevisionSide | null;
  close(): Promise<void>;
}

/** A side's workspace revisions: the local store of a SQLite state, or the PostgreSQL replica. */
export type RevisionSide = { kind: "store"; store: RevisionStore } | { kind: "replica"; replica: PgRevisionReplica };

/** Where a --from or --to location's SQLite file is: a state directory (has state.db) or a workspace (has .ledgerloop/). */
export function sqliteStateFile(location: string, opts: { mustExist: boolean }): string {
  const dir = path.resolve(location);
  if (fs.existsSync(path.join(dir, "state.db"))) return path.join(dir, "state.db");
  if (fs.existsSync(path.join(dir, ".ledgerloop", "state.db"))) return path.join(dir, ".ledgerloop", "state.db");
  if (opts.mustExist) {
    throw new MigrationError(
      "MIGRATE_NO_STATE",
      `no ledgerloop state in ${dir} (neither ${path.join(dir, "state.db")} nor ${path.join(dir, ".ledgerloop", "state.db")} exists)`,
    );
  }
  // A workspace whose runs kept their state elsewhere still has its .ledgerloop directory.
  if (fs.existsSync(path.join(dir, ".ledgerloop"))) return path.join(dir, ".ledgerloop", "state.db");
  return path.join(dir, "state.db");
}

/** A key telling whether two locations are the same state (same file, or same server and database). */
export function stateIdentity(location: string): string {
  if (isPostgresUrl(location)) {
    try {
      const u = new URL(location.trim());
      return `pg:${u.hostname}:${u.port || 5432}${u.pathname}`;
    } catch {
      // Not a URL: opening it says so in one line.
      return `pg:${location}`;
    }
  }
  const file = sqliteStateFile(location, { mustExist: false });
  const dir = path.dirname(file);
  return `sqlite:${path.join(fs.existsSync(dir) ? fs.realpathSync(dir) : dir, path.basename(file))}`;
}

/** Opens a location as a migration side: `write` for the target (created and migrated as needed). */
export async function openSide(location: string, opts: { write: boolean }): Promise<StateSide> {
  return isPostgresUrl(location) ? openPgSide(location, opts) : openSqliteSide(location, opts);
}

async function openSqliteSide(location: string, opts: { write: boolean }): Promise<StateSide> {
  const [{ openStateDb }, { SqliteLedger }, { RunRegistry }, { SqliteStore }, { SqliteCheckpointSaver }, { RevisionStore }] = await Promise.all([
    import("./state-db.js"),
    import("./sqlite-ledger.js"),
    import("./runs.js"),
    import("../memory/sqlite-store.js"),
    import("./sqlite-saver.js"),
    import("../workspace/revisions.js"),
  ]);
  const file = sqliteStateFile(location, { mustExist: !opts.write });
  const db = openStateDb(file, opts.write ? {} : { create: false, readonly: true });
  try {
    const tables = () => new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name));
    if (!opts.write && !tables().has("ll_events")) {
      throw new MigrationError("MIGRATE_NO_STATE", `${file} holds no ledgerloop run (table ll_events is missing)`);
    }
    const ledger = new SqliteLedger(db);
    const runs = new RunRegistry(db);
    let checkpointer: BaseCheckpointSaver | null = null;
    if (opts.write) {
      // The runtime's own saver: what is written is redacted exactly as a run on SQLite writes it.
      const { RedactingSqliteSaver } = await import("./sqlite-checkpoints.js");
      checkpointer = new RedactingSqliteSaver(db, defaultRedactor);
    } else if (tables().has("checkpoints") && tables().has("writes")) {
      checkpointer = new SqliteCheckpointSaver(db);
    }
    const store = opts.write || tables().has("ll_store") ? new SqliteStore(db) : null;
    // Only the objects are read or written here, never a workspace's head: the path is the state's own workspace.
    const revStore =
      opts.write || tables().has("ll_rev_revisions")
        ? new RevisionStore(db, path.dirname(path.dirname(file)), { blobsDir: path.join(path.dirname(file), "blobs") })
        : null;
    return {
      kind: "sqlite",
      location: file,
      ledger,
      runRow: async (t) => runs.row(t),
      importRun: async (r) => runs.importRow(r),
      async threads() {
        const have = tables();
        const parts = ["SELECT thread_id FROM ll_events"];
        if (have.has("ll_runs")) parts.push("SELECT thread_id FROM ll_runs");
        if (have.has("checkpoints")) parts.push("SELECT thread_id FROM checkpoints");
        return (db.prepare(`${parts.join(" UNION ")} ORDER BY thread_id`).all() as Array<{ thread_id: string }>).map((r) => r.thread_id);
      },
      checkpointer,
      store,
      revisions: revStore ? { kind: "store", store: revStore } : null,
      close: async () => {
        if (db.open) db.close();
      },
    };
  } catch (err) {
    db.close();
    throw err;
  }
}

async function openPgSide(url: string, opts: { write: boolean }): Promise<StateSide> {
  const [{ openPgState, tableExists }, { PgLedger }, { PgRunRegistry }, { PgStore }, { RedactingPostgresSaver }, { PostgresSaver }, { PgRevisionReplica }] =
    await Promise.all([
      import("./pg-db.js"),
      import("./pg-ledger.js"),
      import("./pg-runs.js"),
      import("./pg-store.js"),
      import("./pg-checkpoints.js"),
      import("@langchain/langgraph-checkpoint-postgres"),
      import("./pg-revisions.js"),
    ]);
  let saver: BaseCheckpointSaver | null = null;
  const st = opts.write
    ? await openPgState(url, {
        max: 3,
        setup: async (pool) => {
          const s = new RedactingPostgresSaver(pool, defaultRedactor);
          await s.setup();
          saver = s;
        },
      })
    : await openPgState(url, { migrate: false, max: 3 });
  try {
    if (!opts.write && st.version === 0) throw new MigrationError("MIGRATE_NO_STATE", `no ledgerloop state in ${st.location} (no ledgerloop tables)`);
    if (!opts.write && (await tableExists(st.pool, "checkpoints"))) saver = new PostgresSaver(st.pool);
    const runs = new PgRunRegistry(st.pool);
    return {
      kind: "postgres",
      location: redactUrl(url),
      ledger: new PgLedger(st.pool),
      runRow: (t) => runs.row(t),
      importRun: (r) => runs.importRow(r),
      async threads() {
        const parts = ["SELECT thread_id FROM ll_events", "SELECT thread_id FROM ll_runs"];
        if (await tableExists(st.pool, "checkpoints")) parts.push("SELECT thread_id FROM checkpoints");
        return (await st.pool.query<{ thread_id: string }>(`${parts.join(" UNION ")} ORDER BY thread_id`)).rows.map((r) => r.thread_id);
      },
      checkpointer: saver,
      store: new PgStore(st.pool),
      revisions: { kind: "replica", replica: new PgRevisionReplica(st.pool) },
      close: () => st.close(),
    };
  } catch (err) {
    await st.close();
    throw err;
  }
}
