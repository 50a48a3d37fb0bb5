import { createHash } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { Database } from "../sqlite/driver.js";
import { LedgerError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { defaultRedactor, type Redactor } from "../secrets.js";
import type { EventType, LedgerEvent } from "../events.js";
import { SCHEMA_VERSION } from "../event-version.js";
import { assertParentInThread, assertSameKeyUse, checkedPayload, loadEventSchemas, newEventRow, pathsOf, toEvent, type EventRow } from "./event-rows.js";
import type { ActionStart, AppendEvent, Ledger, ListQuery, ThreadInfo } from "./port.js";
import { checkImport, importConflict, sameRows, startOfActions, type LedgerTransfer, type ThreadExport } from "./transfer.js";

/**
 * Threads being deleted whole (ledger/delete-run.ts), inside the deleting transaction only. Events
 * stay append-only otherwise: no event of a thread not named here can be deleted, one by one or all.
 */
export const DELETING_TABLE = "CREATE TABLE IF NOT EXISTS ll_deleting (thread_id TEXT PRIMARY KEY)";
/** Threads deleted whole, kept so that search indexes forget them and their ids are not used again. */
export const DELETED_RUNS_TABLE = "CREATE TABLE IF NOT EXISTS ll_deleted_runs (thread_id TEXT PRIMARY KEY, deleted_at TEXT NOT NULL)";
/** The guard against deleting events, with the one way through: a whole thread named in ll_deleting. */
export const EVENTS_NO_DELETE = `CREATE TRIGGER IF NOT EXISTS ll_events_no_delete BEFORE DELETE ON ll_events
  WHEN NOT EXISTS (SELECT 1 FROM ll_deleting WHERE thread_id = OLD.thread_id)
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: events cannot be deleted'); END;`;

const SCHEMA = `
${DELETING_TABLE};
${DELETED_RUNS_TABLE};
CREATE TABLE IF NOT EXISTS ll_events (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  parent_id TEXT REFERENCES ll_events(id),
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  ts TEXT NOT NULL,
  checkpoint_id TEXT,
  caused_by TEXT,
  idempotency_key TEXT,
  schema_version INTEGER NOT NULL,
  payload TEXT NOT NULL,
  UNIQUE (thread_id, seq),
  UNIQUE (thread_id, idempotency_key)
);
CREATE INDEX IF NOT EXISTS ll_events_type ON ll_events(thread_id, type, seq);
CREATE INDEX IF NOT EXISTS ll_events_parent ON ll_events(parent_id);
CREATE INDEX IF NOT EXISTS ll_events_caused ON ll_events(caused_by);
CREATE TRIGGER IF NOT EXISTS ll_events_no_update BEFORE UPDATE ON ll_events
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: events cannot be updated'); END;
${EVENTS_NO_DELETE}
CREATE TABLE IF NOT EXISTS ll_event_files (
  thread_id TEXT NOT NULL,
  path TEXT NOT NULL,
  event_id TEXT NOT NULL,
  PRIMARY KEY (thread_id, path, event_id)
) WITHOUT ROWID;
-- Events (or '' for the thread root) that have more than one child. A thread without forks is a
-- single chain, and its branch views can be read by seq without walking parent links.
CREATE TABLE IF NOT EXISTS ll_forks (
  thread_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  PRIMARY KEY (thread_id, event_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ll_blobs (
  hash TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS ll_action_starts (
  action_id TEXT PRIMARY KEY,
  started_at TEXT NOT NULL,
  pid INTEGER,
  pgid INTEGER,
  proc_start TEXT,
  guard TEXT
);
CREATE TABLE IF NOT EXISTS ll_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ll_thread_config (thread_id TEXT PRIMARY KEY, config_sha TEXT NOT NULL, recorded_at TEXT NOT NULL);
`;

type Row = EventRow;

/** Kept for callers that imported it from here. */
export { pathsOf };

export interface SqliteLedgerOptions {
  redactor?: Redactor;
  /** Clock, injectable for tests. */
  now?: () => Date;
}

/** The Ledger on SQLite, in the same database file as the checkpoints. */
export class SqliteLedger implements Ledger, LedgerTransfer {
  private readonly db: Database;
  private readonly redactor: Redactor;
  private readonly now: () => Date;
  private readonly stmts: ReturnType<SqliteLedger["prepare"]>;

  constructor(db: Database, opts: SqliteLedgerOptions = {}) {
    this.db = db;
    this.redactor = opts.redactor ?? defaultRedactor;
    this.now = opts.now ?? (() => new Date());
    if (!db.readonly) {
      db.exec(SCHEMA);
      db.prepare("INSERT OR IGNORE INTO ll_meta (key, value) VALUES ('schema_version', ?)").run(String(SCHEMA_VERSION));
    }
    this.stmts = this.prepare();
  }

  private prepare() {
    const db = this.db;
    return {
      byId: db.prepare<[string], Row>("SELECT * FROM ll_events WHERE id = ?"),
      byKey: db.prepare<[string, string], Row>("SELECT * FROM ll_events WHERE thread_id = ? AND idempotency_key = ?"),
      maxSeq: db.prepare<[string], { m: number | null }>("SELECT MAX(seq) AS m FROM ll_events WHERE thread_id = ?"),
      hasChild: db.prepare<[string], { one: number }>("SELECT 1 AS one FROM ll_events WHERE parent_id = ? LIMIT 1"),
      hasRoot: db.prepare<[string], { one: number }>("SELECT 1 AS one FROM ll_events WHERE thread_id = ? AND parent_id IS NULL LIMIT 1"),
      hasForks: db.prepare<[string], { one: number }>("SELECT 1 AS one FROM ll_forks WHERE thread_id = ? LIMIT 1"),
      addFork: db.prepare("INSERT OR IGNORE INTO ll_forks (thread_id, event_id) VALUES (?, ?)"),
      insert: db.prepare(
        `INSERT INTO ll_events (id, thread_id, parent_id, seq, type, ts, checkpoint_id, caused_by, idempotency_key, schema_version, payload)
         VALUES (@id, @thread_id, @parent_id, @seq, @type, @ts, @checkpoint_id, @caused_by, @idempotency_key, @schema_version, @payload)`,
      ),
      addFile: db.prepare("INSERT OR IGNORE INTO ll_event_files (thread_id, path, event_id) VALUES (?, ?, ?)"),
      putBlob: db.prepare("INSERT OR IGNORE INTO ll_blobs (hash, size, data) VALUES (?, ?, ?)"),
      getBlob: db.prepare<[string], { data: Buffer }>("SELECT data FROM ll_blobs WHERE hash = ?"),
      markStart: db.prepare(
        `INSERT INTO ll_action_starts (action_id, started_at, pid, pgid, proc_start, guard) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(action_id) DO UPDATE SET pid = excluded.pid, pgid = excluded.pgid,
           proc_start = excluded.proc_start, guard = COALESCE(ll_action_starts.guard, excluded.guard)`,
      ),
      getStart: db.prepare<
        [string],
        { action_id: string; started_at: string; pid: number | null; pgid: number | null; proc_start: string | null; guard: string | null }
      >("SELECT * FROM ll_action_starts WHERE action_id = ?"),
    };
  }

  async append<T extends EventType>(event: AppendEvent<T>): Promise<LedgerEvent<T>> {
    await loadEventSchemas();
    return this.appendSync(event);
  }

  /** Synchronous append (one SQLite transaction); the event schemas must be loaded (`append` does it, or loadEventSchemas). */
  appendSync<T extends EventType>(event: AppendEvent<T>): LedgerEvent<T> {
    const run = this.db.transaction((): LedgerEvent<T> => {
      const key = event.idempotencyKey ?? null;
      if (key) {
        const existing = this.stmts.byKey.get(event.threadId, key);
        if (existing) {
          assertSameKeyUse(existing, event);
          return toEvent(existing) as LedgerEvent<T>;
        }
      }
      const payload = checkedPayload(this.redactor, event);
      if (event.parentId) {
        assertParentInThread(this.stmts.byId.get(event.parentId)?.thread_id, event);
        if (this.stmts.hasChild.get(event.parentId)) this.stmts.addFork.run(event.threadId, event.parentId);
      } else if (this.stmts.hasRoot.get(event.threadId)) {
        this.stmts.addFork.run(event.threadId, "");
      }
      const row = newEventRow(event, (this.stmts.maxSeq.get(event.threadId)?.m ?? 0) + 1, this.now(), payload);
      this.stmts.insert.run(row);
      for (const p of pathsOf(event.type, payload)) {
        this.stmts.addFile.run(event.threadId, p, row.id);
      }
      return toEvent(row) as LedgerEvent<T>;
    });
    const stored = run.immediate();
    failpoint("ledger-append");
    return stored;
  }

  async get(id: string): Promise<LedgerEvent | null> {
    const r = this.stmts.byId.get(id);
    return r ? toEvent(r) : null;
  }

  async findByKey(threadId: string, idempotencyKey: string): Promise<LedgerEvent | null> {
    const r = this.stmts.byKey.get(threadId, idempotencyKey);
    return r ? toEvent(r) : null;
  }

  async list(threadId: string, q: ListQuery = {}): Promise<LedgerEvent[]> {
    return this.selectLinear(threadId, Number.MAX_SAFE_INTEGER, q);
  }

  private selectLinear(threadId: string, maxSeq: number, q: ListQuery): LedgerEvent[] {
    const where = ["thread_id = ?", "seq <= ?"];
    const args: unknown[] = [threadId, maxSeq];
    if (q.types?.length) {
      where.push(`type IN (${q.types.map(() => "?").join(",")})`);
      args.push(...q.types);
    }
    if (q.afterSeq !== undefined) {
      where.push("seq > ?");
      args.push(q.afterSeq);
    }
    let sql = `SELECT * FROM ll_events WHERE ${where.join(" AND ")} ORDER BY seq`;
    if (q.last !== undefined) sql = `SELECT * FROM (${sql} DESC LIMIT ${Math.max(0, Math.floor(q.last))}) ORDER BY seq`;
    else if (q.limit !== undefined) sql += ` LIMIT ${Math.max(0, Math.floor(q.limit))}`;
    return (this.db.prepare(sql).all(...args) as Row[]).map(toEvent);
  }

  async branch(headId: string | null, q: ListQuery = {}): Promise<LedgerEvent[]> {
    return this.branchSync(headId, q);
  }

  /** Synchronous branch view. */
  branchSync(headId: string | null, q: ListQuery = {}): LedgerEvent[] {
    if (!headId) return [];
    const head = this.stmts.byId.get(headId);
    if (!head) throw new LedgerError("LEDGER_NOT_FOUND", `no ledger event ${headId}`);
    if (!this.stmts.hasForks.get(head.thread_id)) return this.selectLinear(head.thread_id, head.seq, q);
    const where: string[] = [];
    const args: unknown[] = [headId];
    if (q.types?.length) {
      where.push(`e.type IN (${q.types.map(() => "?").join(",")})`);
      args.push(...q.types);
    }
    if (q.afterSeq !== undefined) {
      where.push("e.seq > ?");
      args.push(q.afterSeq);
    }
    // Seq grows along every branch, so a walk can stop as soon as it passes below afterSeq.
    const stop = q.afterSeq !== undefined ? ` WHERE e.seq > ${Math.floor(q.afterSeq)}` : "";
    let sql = `WITH RECURSIVE b(id) AS (
        SELECT id FROM ll_events WHERE id = ?
        UNION ALL SELECT e.parent_id FROM ll_events e JOIN b ON e.id = b.id${stop ? stop + " AND" : " WHERE"} e.parent_id IS NOT NULL
      )
      SELECT e.* FROM b JOIN ll_events e ON e.id = b.id ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY e.seq`;
    if (q.last !== undefined) sql = `SELECT * FROM (${sql} DESC LIMIT ${Math.max(0, Math.floor(q.last))}) ORDER BY seq`;
    return (this.db.prepare(sql).all(...args) as Row[]).map(toEvent);
  }

  async onBranch(headId: string, ids: string[]): Promise<Set<string>> {
    const head = this.stmts.byId.get(headId);
    if (!head || ids.length === 0) return new Set();
    const out = new Set<string>();
    const rows: Array<{ id: string; thread_id: string; seq: number }> = [];
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      rows.push(...(this.db.prepare(`SELECT id, thread_id, seq FROM ll_events WHERE id IN (${chunk.map(() => "?").join(",")})`).all(...chunk) as typeof rows));
    }
    const candidates = rows.filter((r) => r.thread_id === head.thread_id && r.seq <= head.seq);
    if (!candidates.length) return out;
    if (!this.stmts.hasForks.get(head.thread_id)) {
      // A thread without forks is one chain: everything at or before the head is on its branch.
      for (const r of candidates) out.add(r.id);
      return out;
    }
    // Walk the parent links from the head down to the oldest candidate, reading ids only.
    const minSeq = Math.min(...candidates.map((r) => r.seq));
    const onPath = this.db
      .prepare<[string, number], { id: string }>(
        `WITH RECURSIVE b(id, seq) AS (
           SELECT id, seq FROM ll_events WHERE id = ?
           UNION ALL SELECT e.parent_id, p.seq FROM ll_events e JOIN b ON e.id = b.id JOIN ll_events p ON p.id = e.parent_id WHERE p.seq >= ?
         ) SELECT id FROM b`,
      )
      .all(headId, minSeq);
    const path = new Set(onPath.map((r) => r.id));
    for (const r of candidates) if (path.has(r.id)) out.add(r.id);
    return out;
  }

  async byFile(threadId: string, path: string): Promise<LedgerEvent[]> {
    const p = path.replace(/\\/g, "/").replace(/^\.\//, "");
    const rows = this.db
      .prepare<[string, string], Row>(
        `SELECT e.* FROM ll_event_files f JOIN ll_events e ON e.id = f.event_id
         WHERE f.thread_id = ? AND f.path = ? ORDER BY e.seq`,
      )
      .all(threadId, p);
    const events = rows.map(toEvent);
    // Feedback to an action on the file belongs to the file's story too.
    const actionIds = events.filter((e) => e.type === "agent_action").map((e) => e.id);
    const seen = new Set(events.map((e) => e.id));
    for (const e of await this.causedBy(actionIds)) if (!seen.has(e.id)) events.push(e);
    return events.sort((a, b) => a.seq - b.seq);
  }

  async causedBy(eventIds: string[]): Promise<LedgerEvent[]> {
    if (eventIds.length === 0) return [];
    const out: LedgerEvent[] = [];
    for (let i = 0; i < eventIds.length; i += 500) {
      const chunk = eventIds.slice(i, i + 500);
      const rows = this.db.prepare(`SELECT * FROM ll_events WHERE caused_by IN (${chunk.map(() => "?").join(",")}) ORDER BY seq`).all(...chunk) as Row[];
      out.push(...rows.map(toEvent));
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  async causalChain(eventId: string): Promise<LedgerEvent[]> {
    const start = this.stmts.byId.get(eventId);
    if (!start) throw new LedgerError("LEDGER_NOT_FOUND", `no ledger event ${eventId}`);
    const rows = this.db
      .prepare<[string, string], Row>(
        `WITH RECURSIVE up(id, caused_by) AS (
           SELECT id, caused_by FROM ll_events WHERE id = ?
           UNION SELECT e.id, e.caused_by FROM ll_events e JOIN up ON e.id = up.caused_by
         ), down(id) AS (
           SELECT ?
           UNION SELECT e.id FROM ll_events e JOIN down ON e.caused_by = down.id
         )
         SELECT * FROM ll_events WHERE id IN (SELECT id FROM up UNION SELECT id FROM down) ORDER BY seq`,
      )
      .all(eventId, eventId);
    return rows.map(toEvent);
  }

  async deletedThreads(): Promise<string[]> {
    // A state opened read-only from before whole-run deletion has no such table.
    if (!this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'll_deleted_runs'").get()) return [];
    return this.db.prepare("SELECT thread_id FROM ll_deleted_runs ORDER BY thread_id").pluck().all() as string[];
  }

  async threads(): Promise<ThreadInfo[]> {
    const rows = this.db
      .prepare(
        `SELECT thread_id, COUNT(*) AS n, MIN(ts) AS first_ts, MAX(ts) AS last_ts,
           (SELECT json_extract(payload, '$.goal') FROM ll_events s WHERE s.thread_id = e.thread_id AND s.type = 'task_spec' ORDER BY seq LIMIT 1) AS goal,
           (SELECT json_extract(payload, '$.status') FROM ll_events s WHERE s.thread_id = e.thread_id AND s.type = 'run_status' ORDER BY seq DESC LIMIT 1) AS status
         FROM ll_events e GROUP BY thread_id ORDER BY MAX(ts) DESC`,
      )
      .all() as Array<{ thread_id: string; n: number; first_ts: string; last_ts: string; goal: string | null; status: string | null }>;
    return rows.map((r) => ({
      threadId: r.thread_id,
      events: r.n,
      firstTs: r.first_ts,
      lastTs: r.last_ts,
      goal: r.goal,
      status: r.status,
    }));
  }

  async putBlob(content: string): Promise<string> {
    const text = this.redactor.redactStored(content);
    const hash = createHash("sha256").update(text).digest("hex");
    this.stmts.putBlob.run(hash, Buffer.byteLength(text), deflateRawSync(Buffer.from(text)));
    return hash;
  }

  async getBlob(ref: string): Promise<string | null> {
    const r = this.stmts.getBlob.get(ref);
    return r ? inflateRawSync(r.data).toString("utf8") : null;
  }

  async spend(threadId: string): Promise<{ cost: number; tokens: number }> {
    return this.db
      .prepare(
        `SELECT COALESCE(SUM(json_extract(payload, '$.costUsd')), 0) AS cost,
                COALESCE(SUM(json_extract(payload, '$.usage.inputTokens')), 0) + COALESCE(SUM(json_extract(payload, '$.usage.outputTokens')), 0) AS tokens
         FROM ll_events WHERE thread_id = ? AND type = 'model_call'`,
      )
      .get(threadId) as { cost: number; tokens: number };
  }

  async markActionStarted(s: Omit<ActionStart, "startedAt">): Promise<void> {
    this.stmts.markStart.run(s.actionId, this.now().toISOString(), s.pid, s.pgid, s.procStart, s.guard);
  }

  async actionStart(actionId: string): Promise<ActionStart | null> {
    const r = this.stmts.getStart.get(actionId);
    return r ? { actionId: r.action_id, startedAt: r.started_at, pid: r.pid, pgid: r.pgid, procStart: r.proc_start, guard: r.guard } : null;
  }

  async governingConfig(threadId: string, sha: string): Promise<string> {
    this.db
      .prepare("INSERT OR IGNORE INTO ll_thread_config (thread_id, config_sha, recorded_at) VALUES (?, ?, ?)")
      .run(threadId, sha, this.now().toISOString());
    return (this.db.prepare("SELECT config_sha FROM ll_thread_config WHERE thread_id = ?").get(threadId) as { config_sha: string }).config_sha;
  }

  async acceptGoverningConfig(threadId: string, sha: string): Promise<void> {
    this.db
      .prepare(
        "INSERT INTO ll_thread_config (thread_id, config_sha, recorded_at) VALUES (?, ?, ?) ON CONFLICT(thread_id) DO UPDATE SET config_sha = excluded.config_sha, recorded_at = excluded.recorded_at",
      )
      .run(threadId, sha, this.now().toISOString());
  }

  /** The thread's recorded config fingerprint; null when none is (or a read-only older state has no table for it). */
  private recordedConfig(threadId: string): string | null {
    if (!this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'll_thread_config'").get()) return null;
    const r = this.db.prepare("SELECT config_sha FROM ll_thread_config WHERE thread_id = ?").get(threadId) as { config_sha: string } | undefined;
    return r?.config_sha ?? null;
  }

  async exportThread(threadId: string): Promise<ThreadExport> {
    const events = this.db.prepare<[string], Row>("SELECT * FROM ll_events WHERE thread_id = ? ORDER BY seq").all(threadId);
    const actions = new Set(events.filter((e) => e.type === "agent_action").map((e) => e.id));
    const starts = this.db
      .prepare<[], { action_id: string; started_at: string; pid: number | null; pgid: number | null; proc_start: string | null; guard: string | null }>(
        "SELECT * FROM ll_action_starts ORDER BY action_id",
      )
      .all()
      .map((r) => ({ actionId: r.action_id, startedAt: r.started_at, pid: r.pid, pgid: r.pgid, procStart: r.proc_start, guard: r.guard }));
    return { events, actionStarts: starts.filter(startOfActions(actions)), configSha: this.recordedConfig(threadId) };
  }

  async importThread(threadId: string, data: ThreadExport): Promise<"imported" | "identical"> {
    const run = this.db.transaction((): "imported" | "identical" => {
      const have = this.db.prepare<[string], Row>("SELECT * FROM ll_events WHERE thread_id = ? ORDER BY seq").all(threadId);
      let result: "imported" | "identical" = "identical";
      if (have.length && !sameRows(have, data.events)) throw importConflict(threadId, have.length, data.events.length);
      if (!have.length) {
        const forks = checkImport(threadId, data.events);
        for (const r of data.events) {
          this.stmts.insert.run({ ...r, seq: Number(r.seq), schema_version: Number(r.schema_version) });
          for (const p of pathsOf(r.type as EventType, JSON.parse(r.payload))) this.stmts.addFile.run(threadId, p, r.id);
        }
        for (const f of forks) this.stmts.addFork.run(threadId, f);
        result = "imported";
      }
      const put = this.db.prepare("INSERT OR IGNORE INTO ll_action_starts (action_id, started_at, pid, pgid, proc_start, guard) VALUES (?, ?, ?, ?, ?, ?)");
      for (const s of data.actionStarts) put.run(s.actionId, s.startedAt, s.pid, s.pgid, s.procStart, s.guard);
      // The config the run started under comes with it (a record already here is kept).
      if (data.configSha)
        this.db
          .prepare("INSERT OR IGNORE INTO ll_thread_config (thread_id, config_sha, recorded_at) VALUES (?, ?, ?)")
          .run(threadId, data.configSha, this.now().toISOString());
      return result;
    });
    return run.immediate();
  }

  /** Whether a blob is stored (migrate checks the blobs a thread's events refer to). */
  async hasBlob(ref: string): Promise<boolean> {
    return Boolean(this.db.prepare("SELECT 1 FROM ll_blobs WHERE hash = ?").get(ref));
  }

  async close(): Promise<void> {
    // The database belongs to whoever opened it (it is shared with the checkpointer).
  }
}
