import crypto from "node:crypto";
import type Database from "better-sqlite3";
import { LedgerloopError } from "../errors.js";

/**
 * The configuration a thread runs under. The config file lives in the workspace, so a run must not
 * quietly take on a file that changed since it started (by a command at a level that could not
 * stop it, by a person, by anything): the first step of a thread records the fingerprint of the
 * config it was given, and every later step of that thread — after a resume, a rewind, from Studio
 * or a script — compares it and stops on a difference until someone accepts the new file.
 */
export class GoverningConfigChangedError extends LedgerloopError {
  constructor(message: string) {
    super("CONFIG_CHANGED", message);
  }
}

/** sha256 of the config file's bytes, or "absent". */
export function configFingerprint(content: Buffer | string | null): string {
  if (content === null) return "absent";
  return crypto.createHash("sha256").update(content).digest("hex");
}

function ensureTable(db: Database.Database): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS ll_thread_config (thread_id TEXT PRIMARY KEY, config_sha TEXT NOT NULL, recorded_at TEXT NOT NULL)",
  );
}

/**
 * Records `sha` for a thread seen for the first time; throws GoverningConfigChangedError when the
 * thread was started under another config.
 */
export function checkThreadConfig(db: Database.Database, thread: string, sha: string, file: string): void {
  ensureTable(db);
  db.prepare("INSERT OR IGNORE INTO ll_thread_config (thread_id, config_sha, recorded_at) VALUES (?, ?, ?)").run(thread, sha, new Date().toISOString());
  const row = db.prepare("SELECT config_sha FROM ll_thread_config WHERE thread_id = ?").get(thread) as { config_sha: string };
  if (row.config_sha === sha) return;
  const how = row.config_sha === "absent" ? "was created" : sha === "absent" ? "was removed" : "changed";
  throw new GoverningConfigChangedError(
    `${file} ${how} since run ${thread} started, so the run stops instead of obeying a configuration it was not started with. ` +
      `Review the file; to go on under it, resume with --accept-config.`,
  );
}

/** Makes `sha` the thread's config (the user accepted the file as it is now). */
export function acceptThreadConfig(db: Database.Database, thread: string, sha: string): void {
  ensureTable(db);
  db.prepare(
    "INSERT INTO ll_thread_config (thread_id, config_sha, recorded_at) VALUES (?, ?, ?) ON CONFLICT(thread_id) DO UPDATE SET config_sha = excluded.config_sha, recorded_at = excluded.recorded_at",
  ).run(thread, sha, new Date().toISOString());
}
