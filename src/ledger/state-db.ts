import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { StateStoreError, errorMessage } from "../errors.js";
import { ensurePrivateDir, ensurePrivateFile, tightenExisting } from "../private-files.js";

/** SQLite `application_id` stamped on every state database ledgerloop creates ("LLOP"). */
export const APPLICATION_ID = 0x4c4c4f50;

/** Tables that LangGraph's SqliteSaver creates in the same file. */
const CHECKPOINTER_TABLES = new Set(["checkpoints", "writes"]);

export interface OpenStateDbOptions {
  /** Create the file (and its directory) when missing. Default true. */
  create?: boolean;
  readonly?: boolean;
  busyTimeoutMs?: number;
}

/**
 * Opens (or creates) the state database shared by the checkpointer and the ledger, refusing a file
 * that is not SQLite or that belongs to another application before anything is written to it.
 */
export function openStateDb(file: string, opts: OpenStateDbOptions = {}): Database.Database {
  const create = opts.create ?? true;
  const exists = fs.existsSync(file);
  if (!exists && !create) {
    throw new StateStoreError("STATE_DB_UNREADABLE", `no state database at ${file}`);
  }
  // Owner-only: the ledger holds whatever redaction did not recognise.
  ensurePrivateDir(path.dirname(file));
  if (exists) tightenExisting(file);
  else ensurePrivateFile(file);
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: opts.readonly ?? false, fileMustExist: exists });
  } catch (err) {
    throw new StateStoreError("STATE_DB_UNREADABLE", `cannot open state database ${file}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
  try {
    db.pragma(`busy_timeout = ${opts.busyTimeoutMs ?? 5000}`);
    const appId = db.pragma("application_id", { simple: true }) as number;
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(
      (r) => r.name,
    );
    if (appId !== APPLICATION_ID) {
      const foreign = tables.filter((t) => !CHECKPOINTER_TABLES.has(t) && !t.startsWith("sqlite_"));
      if (appId !== 0 || foreign.length > 0) {
        throw new StateStoreError(
          "STATE_DB_FOREIGN",
          `${file} is a SQLite database of another application (application_id ${appId}, tables: ${
            foreign.slice(0, 5).join(", ") || "none"
          }); refusing to touch it`,
        );
      }
      if (!opts.readonly) db.pragma(`application_id = ${APPLICATION_ID}`);
    }
    if (!opts.readonly) {
      // WAL lets readers (CLI inspection, the web view) work while a run writes. NORMAL sync in WAL
      // mode survives a killed process (the crash case we promise); only power loss can drop the
      // last transactions.
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
    }
    db.pragma("foreign_keys = ON");
    return db;
  } catch (err) {
    db.close();
    if (err instanceof StateStoreError) throw err;
    throw asStateError(err, file);
  }
}

/** Maps a raw SQLite error to a one-line StateStoreError naming the file. */
export function asStateError(err: unknown, file: string): StateStoreError {
  const code = (err as { code?: string })?.code ?? "";
  const msg = errorMessage(err);
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT" || /not a database|malformed/i.test(msg)) {
    return new StateStoreError("STATE_DB_CORRUPT", `${file} is corrupt or not a SQLite database (${msg})`, {
      cause: err,
    });
  }
  if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
    return new StateStoreError("STATE_DB_LOCKED", `${file} is locked by another process (${msg})`, { cause: err });
  }
  return new StateStoreError("STATE_DB_UNREADABLE", `cannot use state database ${file}: ${msg}`, { cause: err });
}
