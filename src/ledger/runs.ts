import type Database from "better-sqlite3";
import type { RunSettings } from "../settings.js";

/**
 * Settings as stored: without the state directory, which is always found from the workspace given
 * on the command line (a stored absolute path made a copied workspace write into the original).
 */
function portable(settings: RunSettings): RunSettings {
  const { stateDir: _dropped, ...rest } = settings;
  return rest;
}

/**
 * The settings each run was started with, so `resume` continues with the same model, limits and
 * budgets without the user repeating them. Stored beside the ledger; never holds secrets (API keys
 * come from the environment).
 */
export class RunRegistry {
  constructor(private readonly db: Database.Database) {
    if (!db.readonly) {
      db.exec(`CREATE TABLE IF NOT EXISTS ll_runs (
        thread_id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        goal TEXT NOT NULL,
        settings TEXT NOT NULL
      )`);
    }
  }

  register(threadId: string, goal: string, settings: RunSettings): void {
    this.db
      .prepare("INSERT INTO ll_runs (thread_id, created_at, goal, settings) VALUES (?, ?, ?, ?)")
      .run(threadId, new Date().toISOString(), goal, JSON.stringify(portable(settings)));
  }

  get(threadId: string): { threadId: string; createdAt: string; goal: string; settings: RunSettings } | null {
    const r = this.db.prepare("SELECT * FROM ll_runs WHERE thread_id = ?").get(threadId) as
      | { thread_id: string; created_at: string; goal: string; settings: string }
      | undefined;
    // Rows written before stateDir was dropped still carry it: never let it decide where state lives.
    return r ? { threadId: r.thread_id, createdAt: r.created_at, goal: r.goal, settings: portable(JSON.parse(r.settings)) } : null;
  }

  list(): Array<{ threadId: string; createdAt: string; goal: string }> {
    return (this.db.prepare("SELECT thread_id, created_at, goal FROM ll_runs ORDER BY created_at").all() as Array<{
      thread_id: string;
      created_at: string;
      goal: string;
    }>).map((r) => ({ threadId: r.thread_id, createdAt: r.created_at, goal: r.goal }));
  }

  /** True when LangGraph has at least one checkpoint for the thread. */
  hasCheckpoints(threadId: string): boolean {
    const exists = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'").get();
    if (!exists) return false;
    return Boolean(this.db.prepare("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1").get(threadId));
  }
}
