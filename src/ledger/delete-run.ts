// Deleting one run whole from a workspace's SQLite state: its ledger events, checkpoints, registry
// row, config fingerprint, the prompts no other run shares, its run log and its report. The ledger
// stays append-only for everything else: a thread's events can go only all together, inside this
// transaction (the thread is named in ll_deleting for its length; see EVENTS_NO_DELETE), and the
// thread's id is retired in ll_deleted_runs, from which every search index learns to forget it.
import fs from "node:fs";
import path from "node:path";
import type { Database } from "../sqlite/driver.js";
import { LESSONS_NS } from "../memory/lessons.js";
import { nsKey } from "../memory/store-common.js";
import { reportFile, runLogFile } from "../workspace/location.js";
import { deleteThreadCheckpoints } from "./checkpoints.js";
import { DELETED_RUNS_TABLE, DELETING_TABLE, EVENTS_NO_DELETE } from "./sqlite-ledger.js";
import { startOfActions } from "./transfer.js";

/** What a run holds in a state database: what deleting it removes (and the lessons it leaves). */
export interface RunFootprint {
  thread: string;
  events: number;
  checkpoints: number;
  writes: number;
  /** Stored prompts only this run's events point at. */
  prompts: number;
  /** Registered in the run registry (ll_runs). */
  registered: boolean;
  /** Lessons in long-term memory that name this run among their sources: they stay (see deleteRunRecords). */
  lessons: number;
}

const hasTable = (db: Database, name: string) => Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name));

/** Prompt refs of a thread's events that no event of another thread shares (a forked copy of a branch shares them). */
function ownPrompts(db: Database, thread: string): string[] {
  if (!hasTable(db, "ll_blobs")) return [];
  // context_built and model_call events point at prompts. One pass over each side, not a lookup per ref.
  const refs = (where: string) =>
    db
      .prepare(`SELECT DISTINCT json_extract(payload, '$.promptRef') FROM ll_events WHERE ${where} AND json_extract(payload, '$.promptRef') IS NOT NULL`)
      .pluck();
  const shared = new Set(refs("thread_id <> ?").all(thread) as string[]);
  return (refs("thread_id = ?").all(thread) as string[]).filter((r) => !shared.has(r));
}

/** What deleting `thread` would remove; nothing is written. */
export function runFootprint(db: Database, thread: string): RunFootprint {
  return measure(db, thread).footprint;
}

/** The footprint, with the refs of the prompts only this run uses (one pass over the ledger for both). */
function measure(db: Database, thread: string): { footprint: RunFootprint; prompts: string[] } {
  const count = (table: string, sql: string) => (hasTable(db, table) ? ((db.prepare(sql).pluck().get(thread) as number) ?? 0) : 0);
  const lessons = hasTable(db, "ll_store")
    ? (db
        .prepare(
          `SELECT COUNT(*) FROM ll_store l WHERE l.namespace = ?
             AND EXISTS (SELECT 1 FROM json_each(l.value, '$.sources') s WHERE json_extract(s.value, '$.threadId') = ?)`,
        )
        .pluck()
        .get(nsKey(LESSONS_NS), thread) as number)
    : 0;
  const prompts = hasTable(db, "ll_events") ? ownPrompts(db, thread) : [];
  const footprint = {
    thread,
    events: count("ll_events", "SELECT COUNT(*) FROM ll_events WHERE thread_id = ?"),
    checkpoints: count("checkpoints", "SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?"),
    writes: count("writes", "SELECT COUNT(*) FROM writes WHERE thread_id = ?"),
    prompts: prompts.length,
    registered: count("ll_runs", "SELECT COUNT(*) FROM ll_runs WHERE thread_id = ?") > 0,
    lessons,
  };
  return { footprint, prompts };
}

/** True when the state database records anything of the thread. */
export function runExists(f: RunFootprint): boolean {
  return f.events + f.checkpoints + f.writes > 0 || f.registered;
}

/**
 * Deletes a run's records in one transaction: all of them or, on any failure, none. Lessons drawn
 * from it stay in long-term memory (they hold no workspace text beyond the lesson, and other runs
 * may have reached them too; `ledgerloop memory forget` removes one). The workspace revisions only
 * this run named are left to the revision sweep (`gc`), which needs the workspace to itself. The
 * caller holds the thread's lease, so no process is writing the run meanwhile.
 */
export function deleteRunRecords(db: Database, stateDir: string, thread: string): RunFootprint {
  const footprint = db.transaction(() => {
    const { footprint, prompts } = measure(db, thread);
    if (hasTable(db, "ll_events")) {
      // A state written before whole-run deletion has the guard without its way through.
      const guard = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'll_events_no_delete'").pluck().get() as string | undefined;
      db.exec(DELETING_TABLE);
      if (!guard?.includes("ll_deleting")) {
        db.exec("DROP TRIGGER IF EXISTS ll_events_no_delete");
        db.exec(EVENTS_NO_DELETE);
      }
      db.prepare("INSERT OR IGNORE INTO ll_deleting (thread_id) VALUES (?)").run(thread);
      if (hasTable(db, "ll_action_starts")) {
        // An attempt's key ends in /start/<action event id> (agent/nodes/act.ts).
        const ofRun = startOfActions(
          new Set(db.prepare("SELECT id FROM ll_events WHERE thread_id = ? AND type = 'agent_action'").pluck().all(thread) as string[]),
        );
        const del = db.prepare("DELETE FROM ll_action_starts WHERE action_id = ?");
        for (const id of db.prepare("SELECT action_id FROM ll_action_starts").pluck().all() as string[]) if (ofRun({ actionId: id })) del.run(id);
      }
      // Children before parents is not needed: foreign keys are checked at the end of the statement.
      db.prepare("DELETE FROM ll_events WHERE thread_id = ?").run(thread);
      db.prepare("DELETE FROM ll_deleting WHERE thread_id = ?").run(thread);
      for (const t of ["ll_event_files", "ll_forks", "ll_thread_config"]) if (hasTable(db, t)) db.prepare(`DELETE FROM ${t} WHERE thread_id = ?`).run(thread);
      const delBlob = db.prepare("DELETE FROM ll_blobs WHERE hash = ?");
      for (const ref of prompts) delBlob.run(ref);
    }
    deleteThreadCheckpoints(db, thread);
    if (hasTable(db, "ll_runs")) db.prepare("DELETE FROM ll_runs WHERE thread_id = ?").run(thread);
    db.exec(DELETED_RUNS_TABLE);
    db.prepare("INSERT OR REPLACE INTO ll_deleted_runs (thread_id, deleted_at) VALUES (?, ?)").run(thread, new Date().toISOString());
    return footprint;
  })();
  removeRunFiles(stateDir, thread);
  return footprint;
}

/** Removes a run's log and report from a state directory (a PostgreSQL run's, on this machine). */
export function removeRunFiles(stateDir: string, thread: string): void {
  for (const file of [runLogFile(stateDir, thread), reportFile(stateDir, thread)]) {
    // Only files of the state directory: a thread id is the caller's text.
    if (path.resolve(file).startsWith(path.resolve(stateDir) + path.sep)) fs.rmSync(file, { force: true });
  }
}
