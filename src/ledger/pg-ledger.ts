import { createHash } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type pg from "pg";
import { inTransaction } from "./pg-db.js";
import { LedgerError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { defaultRedactor, type Redactor } from "../secrets.js";
import { type EventType, type LedgerEvent } from "../events.js";
import type { ActionStart, AppendEvent, Ledger, ListQuery, ThreadInfo } from "./port.js";
import { checkImport, importConflict, sameRows, startOfActions, type LedgerTransfer, type ThreadExport } from "./transfer.js";
import { assertParentInThread, assertSameKeyUse, checkedPayload, loadEventSchemas, newEventRow, pathsOf, toEvent, type EventRow } from "./event-rows.js";

type Row = EventRow;

export interface PgLedgerOptions {
  redactor?: Redactor;
  now?: () => Date;
  /**
   * A queued run's holding (pg-run-leases.ts): appends to `thread` commit only while
   * `token` still holds its lease, checked in the append's own transaction. A worker that stalled
   * past its lease and was taken over can then record nothing more of the run, so it cannot start
   * another of its actions either (an action is recorded before it runs).
   */
  fence?: { thread: string; token: string };
}

/** The worker's lease on the run was taken over: it must stop writing the run. */
export class RunLeaseLostError extends LedgerError {
  constructor(thread: string) {
    super("LEASE_LOST", `this worker no longer holds run ${thread} (its lease expired and another worker took it over); stopping without writing`);
  }
}

/**
 * The Ledger on PostgreSQL (tables made by pg-db.ts's migrations). Same contract as SqliteLedger:
 * appends of one thread are serialised by a transaction-scoped advisory lock on the thread, so
 * writers on several machines still get one gap-free seq per thread.
 */
export class PgLedger implements Ledger, LedgerTransfer {
  private readonly redactor: Redactor;
  private readonly now: () => Date;

  constructor(
    private readonly pool: pg.Pool,
    opts: PgLedgerOptions = {},
  ) {
    this.redactor = opts.redactor ?? defaultRedactor;
    this.now = opts.now ?? (() => new Date());
    this.fence = opts.fence;
  }

  private readonly fence: PgLedgerOptions["fence"];

  private async rows(sql: string, args: unknown[] = []): Promise<Row[]> {
    return (await this.pool.query<Row>(sql, args)).rows;
  }

  async append<T extends EventType>(event: AppendEvent<T>): Promise<LedgerEvent<T>> {
    await loadEventSchemas();
    const stored = await inTransaction(this.pool, (c) => this.appendIn(c, event));
    failpoint("ledger-append");
    return stored;
  }

  private async appendIn<T extends EventType>(c: pg.PoolClient, event: AppendEvent<T>): Promise<LedgerEvent<T>> {
    await c.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", [event.threadId]);
    if (this.fence && this.fence.thread === event.threadId) {
      // FOR SHARE: a takeover (an UPDATE of the row) waits for this append to commit, or this waits for it.
      const held = await c.query("SELECT 1 FROM ll_run_leases WHERE thread_id = $1 AND token = $2 AND state = 'held' FOR SHARE", [
        this.fence.thread,
        this.fence.token,
      ]);
      if (!held.rowCount) throw new RunLeaseLostError(event.threadId);
    }
    const key = event.idempotencyKey ?? null;
    if (key) {
      const existing = (await c.query<Row>("SELECT * FROM ll_events WHERE thread_id = $1 AND idempotency_key = $2", [event.threadId, key])).rows[0];
      if (existing) {
        assertSameKeyUse(existing, event);
        return toEvent(existing) as LedgerEvent<T>;
      }
    }
    const payload = checkedPayload(this.redactor, event);
    if (event.parentId) {
      const parent = (await c.query<{ thread_id: string }>("SELECT thread_id FROM ll_events WHERE id = $1", [event.parentId])).rows[0];
      assertParentInThread(parent?.thread_id, event);
      if ((await c.query("SELECT 1 FROM ll_events WHERE parent_id = $1 LIMIT 1", [event.parentId])).rowCount) {
        await c.query("INSERT INTO ll_forks (thread_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", [event.threadId, event.parentId]);
      }
    } else if ((await c.query("SELECT 1 FROM ll_events WHERE thread_id = $1 AND parent_id IS NULL LIMIT 1", [event.threadId])).rowCount) {
      await c.query("INSERT INTO ll_forks (thread_id, event_id) VALUES ($1, '') ON CONFLICT DO NOTHING", [event.threadId]);
    }
    const m = (await c.query<{ m: number | null }>("SELECT MAX(seq) AS m FROM ll_events WHERE thread_id = $1", [event.threadId])).rows[0]?.m;
    const row = newEventRow(event, Number(m ?? 0) + 1, this.now(), payload);
    await c.query(
      `INSERT INTO ll_events (id, thread_id, parent_id, seq, type, ts, checkpoint_id, caused_by, idempotency_key, schema_version, payload)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [row.id, row.thread_id, row.parent_id, row.seq, row.type, row.ts, row.checkpoint_id, row.caused_by, row.idempotency_key, row.schema_version, row.payload],
    );
    const paths = pathsOf(event.type, payload);
    if (paths.length) {
      await c.query("INSERT INTO ll_event_files (thread_id, path, event_id) SELECT $1, p, $3 FROM unnest($2::text[]) AS p ON CONFLICT DO NOTHING", [
        event.threadId,
        paths,
        row.id,
      ]);
    }
    return toEvent(row) as LedgerEvent<T>;
  }

  async get(id: string): Promise<LedgerEvent | null> {
    const r = (await this.rows("SELECT * FROM ll_events WHERE id = $1", [id]))[0];
    return r ? toEvent(r) : null;
  }

  async findByKey(threadId: string, idempotencyKey: string): Promise<LedgerEvent | null> {
    const r = (await this.rows("SELECT * FROM ll_events WHERE thread_id = $1 AND idempotency_key = $2", [threadId, idempotencyKey]))[0];
    return r ? toEvent(r) : null;
  }

  async list(threadId: string, q: ListQuery = {}): Promise<LedgerEvent[]> {
    return this.selectLinear(threadId, 2_147_483_647, q);
  }

  private async selectLinear(threadId: string, maxSeq: number, q: ListQuery): Promise<LedgerEvent[]> {
    const args: unknown[] = [threadId, maxSeq];
    const where = ["thread_id = $1", "seq <= $2"];
    if (q.types?.length) {
      args.push(q.types);
      where.push(`type = ANY($${args.length}::text[])`);
    }
    if (q.afterSeq !== undefined) {
      args.push(q.afterSeq);
      where.push(`seq > $${args.length}`);
    }
    let sql = `SELECT * FROM ll_events WHERE ${where.join(" AND ")} ORDER BY seq`;
    if (q.last !== undefined) sql = `SELECT * FROM (${sql} DESC LIMIT ${Math.max(0, Math.floor(q.last))}) t ORDER BY seq`;
    else if (q.limit !== undefined) sql += ` LIMIT ${Math.max(0, Math.floor(q.limit))}`;
    return (await this.rows(sql, args)).map(toEvent);
  }

  async branch(headId: string | null, q: ListQuery = {}): Promise<LedgerEvent[]> {
    if (!headId) return [];
    const head = (await this.rows("SELECT * FROM ll_events WHERE id = $1", [headId]))[0];
    if (!head) throw new LedgerError("LEDGER_NOT_FOUND", `no ledger event ${headId}`);
    if (!(await this.hasForks(head.thread_id))) return this.selectLinear(head.thread_id, head.seq, q);
    const args: unknown[] = [headId];
    const where: string[] = [];
    if (q.types?.length) {
      args.push(q.types);
      where.push(`e.type = ANY($${args.length}::text[])`);
    }
    if (q.afterSeq !== undefined) {
      args.push(q.afterSeq);
      where.push(`e.seq > $${args.length}`);
    }
    const stop = q.afterSeq !== undefined ? ` AND e.seq > ${Math.floor(q.afterSeq)}` : "";
    let sql = `WITH RECURSIVE b(id) AS (
        SELECT id FROM ll_events WHERE id = $1
        UNION ALL SELECT e.parent_id FROM ll_events e JOIN b ON e.id = b.id WHERE e.parent_id IS NOT NULL${stop}
      )
      SELECT e.* FROM b JOIN ll_events e ON e.id = b.id ${where.length ? "WHERE " + where.join(" AND ") : ""} ORDER BY e.seq`;
    if (q.last !== undefined) sql = `SELECT * FROM (${sql} DESC LIMIT ${Math.max(0, Math.floor(q.last))}) t ORDER BY seq`;
    return (await this.rows(sql, args)).map(toEvent);
  }

  private async hasForks(threadId: string): Promise<boolean> {
    return Boolean((await this.pool.query("SELECT 1 FROM ll_forks WHERE thread_id = $1 LIMIT 1", [threadId])).rowCount);
  }

  async onBranch(headId: string, ids: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    const head = (await this.rows("SELECT * FROM ll_events WHERE id = $1", [headId]))[0];
    if (!head || ids.length === 0) return out;
    const rows = (
      await this.pool.query<{ id: string; thread_id: string; seq: number }>("SELECT id, thread_id, seq FROM ll_events WHERE id = ANY($1::text[])", [ids])
    ).rows;
    const candidates = rows.filter((r) => r.thread_id === head.thread_id && r.seq <= head.seq);
    if (!candidates.length) return out;
    if (!(await this.hasForks(head.thread_id))) {
      for (const r of candidates) out.add(r.id);
      return out;
    }
    const minSeq = Math.min(...candidates.map((r) => r.seq));
    const onPath = await this.pool.query<{ id: string }>(
      `WITH RECURSIVE b(id, seq) AS (
         SELECT id, seq FROM ll_events WHERE id = $1
         UNION ALL SELECT e.parent_id, p.seq FROM ll_events e JOIN b ON e.id = b.id JOIN ll_events p ON p.id = e.parent_id WHERE p.seq >= $2
       ) SELECT id FROM b`,
      [headId, minSeq],
    );
    const path = new Set(onPath.rows.map((r) => r.id));
    for (const r of candidates) if (path.has(r.id)) out.add(r.id);
    return out;
  }

  async byFile(threadId: string, path: string): Promise<LedgerEvent[]> {
    const p = path.replace(/\\/g, "/").replace(/^\.\//, "");
    const events = (
      await this.rows(
        `SELECT e.* FROM ll_event_files f JOIN ll_events e ON e.id = f.event_id
         WHERE f.thread_id = $1 AND f.path = $2 ORDER BY e.seq`,
        [threadId, p],
      )
    ).map(toEvent);
    const actionIds = events.filter((e) => e.type === "agent_action").map((e) => e.id);
    const seen = new Set(events.map((e) => e.id));
    for (const e of await this.causedBy(actionIds)) if (!seen.has(e.id)) events.push(e);
    return events.sort((a, b) => a.seq - b.seq);
  }

  async causedBy(eventIds: string[]): Promise<LedgerEvent[]> {
    if (eventIds.length === 0) return [];
    return (await this.rows("SELECT * FROM ll_events WHERE caused_by = ANY($1::text[]) ORDER BY seq", [eventIds])).map(toEvent);
  }

  async causalChain(eventId: string): Promise<LedgerEvent[]> {
    if (!(await this.get(eventId))) throw new LedgerError("LEDGER_NOT_FOUND", `no ledger event ${eventId}`);
    const rows = await this.rows(
      `WITH RECURSIVE up(id, caused_by) AS (
         SELECT id, caused_by FROM ll_events WHERE id = $1
         UNION SELECT e.id, e.caused_by FROM ll_events e JOIN up ON e.id = up.caused_by
       ), down(id) AS (
         SELECT $1::text
         UNION SELECT e.id FROM ll_events e JOIN down ON e.caused_by = down.id
       )
       SELECT * FROM ll_events WHERE id IN (SELECT id FROM up UNION SELECT id FROM down) ORDER BY seq`,
      [eventId],
    );
    return rows.map(toEvent);
  }

  async deletedThreads(): Promise<string[]> {
    try {
      return (await this.pool.query<{ thread_id: string }>("SELECT thread_id FROM ll_deleted_runs ORDER BY thread_id")).rows.map((r) => r.thread_id);
    } catch (err) {
      // A database not migrated to version 8 yet (opened read-only by an inspection) has deleted none.
      if ((err as { code?: string }).code === "42P01") return [];
      throw err;
    }
  }

  async threads(): Promise<ThreadInfo[]> {
    const r = await this.pool.query<{ thread_id: string; n: string; first_ts: string; last_ts: string; goal: string | null; status: string | null }>(
      `SELECT thread_id, COUNT(*) AS n, MIN(ts) AS first_ts, MAX(ts) AS last_ts,
         (SELECT s.payload::jsonb ->> 'goal' FROM ll_events s WHERE s.thread_id = e.thread_id AND s.type = 'task_spec' ORDER BY seq LIMIT 1) AS goal,
         (SELECT s.payload::jsonb ->> 'status' FROM ll_events s WHERE s.thread_id = e.thread_id AND s.type = 'run_status' ORDER BY seq DESC LIMIT 1) AS status
       FROM ll_events e GROUP BY thread_id ORDER BY MAX(ts) DESC`,
    );
    return r.rows.map((x) => ({ threadId: x.thread_id, events: Number(x.n), firstTs: x.first_ts, lastTs: x.last_ts, goal: x.goal, status: x.status }));
  }

  async putBlob(content: string): Promise<string> {
    const text = this.redactor.redactStored(content);
    const hash = createHash("sha256").update(text).digest("hex");
    await this.pool.query("INSERT INTO ll_blobs (hash, size, data) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING", [
      hash,
      Buffer.byteLength(text),
      deflateRawSync(Buffer.from(text)),
    ]);
    return hash;
  }

  async getBlob(ref: string): Promise<string | null> {
    const r = (await this.pool.query<{ data: Buffer }>("SELECT data FROM ll_blobs WHERE hash = $1", [ref])).rows[0];
    return r ? inflateRawSync(r.data).toString("utf8") : null;
  }

  async spend(threadId: string): Promise<{ cost: number; tokens: number }> {
    const r = (
      await this.pool.query<{ cost: string; tokens: string }>(
        `SELECT COALESCE(SUM((payload::jsonb ->> 'costUsd')::float8), 0) AS cost,
                COALESCE(SUM((payload::jsonb -> 'usage' ->> 'inputTokens')::bigint), 0) + COALESCE(SUM((payload::jsonb -> 'usage' ->> 'outputTokens')::bigint), 0) AS tokens
         FROM ll_events WHERE thread_id = $1 AND type = 'model_call'`,
        [threadId],
      )
    ).rows[0];
    return { cost: Number(r?.cost ?? 0), tokens: Number(r?.tokens ?? 0) };
  }

  async markActionStarted(s: Omit<ActionStart, "startedAt">): Promise<void> {
    await this.pool.query(
      `INSERT INTO ll_action_starts (action_id, started_at, pid, pgid, proc_start, guard) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (action_id) DO UPDATE SET pid = excluded.pid, pgid = excluded.pgid,
         proc_start = excluded.proc_start, guard = COALESCE(ll_action_starts.guard, excluded.guard)`,
      [s.actionId, this.now().toISOString(), s.pid, s.pgid, s.procStart, s.guard],
    );
  }

  async actionStart(actionId: string): Promise<ActionStart | null> {
    const r = (await this.pool.query<ActionStartRow>("SELECT * FROM ll_action_starts WHERE action_id = $1", [actionId])).rows[0];
    return r ? toActionStart(r) : null;
  }

  async governingConfig(threadId: string, sha: string): Promise<string> {
    await this.pool.query("INSERT INTO ll_thread_config (thread_id, config_sha) VALUES ($1, $2) ON CONFLICT (thread_id) DO NOTHING", [threadId, sha]);
    return (await this.pool.query<{ config_sha: string }>("SELECT config_sha FROM ll_thread_config WHERE thread_id = $1", [threadId])).rows[0]!.config_sha;
  }

  async acceptGoverningConfig(threadId: string, sha: string): Promise<void> {
    await this.pool.query(
      "INSERT INTO ll_thread_config (thread_id, config_sha) VALUES ($1, $2) ON CONFLICT (thread_id) DO UPDATE SET config_sha = excluded.config_sha, recorded_at = now()",
      [threadId, sha],
    );
  }

  async exportThread(threadId: string): Promise<ThreadExport> {
    const events = await this.rows("SELECT * FROM ll_events WHERE thread_id = $1 ORDER BY seq", [threadId]);
    const actions = new Set(events.filter((e) => e.type === "agent_action").map((e) => e.id));
    const starts = (await this.pool.query<ActionStartRow>("SELECT * FROM ll_action_starts ORDER BY action_id")).rows.map(toActionStart);
    const config = (await this.pool.query<{ config_sha: string }>("SELECT config_sha FROM ll_thread_config WHERE thread_id = $1", [threadId])).rows[0];
    return {
      events: events.map((r) => ({ ...r, seq: Number(r.seq), schema_version: Number(r.schema_version) })),
      actionStarts: starts.filter(startOfActions(actions)),
      configSha: config?.config_sha ?? null,
    };
  }

  async importThread(threadId: string, data: ThreadExport): Promise<"imported" | "identical"> {
    return inTransaction(this.pool, async (c) => {
      // The append lock of the thread: no writer appends while its history is being written.
      await c.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", [threadId]);
      const have = (await c.query<Row>("SELECT * FROM ll_events WHERE thread_id = $1 ORDER BY seq", [threadId])).rows;
      let result: "imported" | "identical" = "identical";
      if (have.length && !sameRows(have, data.events)) throw importConflict(threadId, have.length, data.events.length);
      if (!have.length) {
        const forks = checkImport(threadId, data.events);
        for (const r of data.events) {
          await c.query(
            `INSERT INTO ll_events (id, thread_id, parent_id, seq, type, ts, checkpoint_id, caused_by, idempotency_key, schema_version, payload)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
            [r.id, r.thread_id, r.parent_id, r.seq, r.type, r.ts, r.checkpoint_id, r.caused_by, r.idempotency_key, r.schema_version, r.payload],
          );
          const paths = pathsOf(r.type as EventType, JSON.parse(r.payload));
          if (paths.length) {
            await c.query("INSERT INTO ll_event_files (thread_id, path, event_id) SELECT $1, p, $3 FROM unnest($2::text[]) AS p ON CONFLICT DO NOTHING", [
              threadId,
              paths,
              r.id,
            ]);
          }
        }
        for (const f of forks) await c.query("INSERT INTO ll_forks (thread_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", [threadId, f]);
        result = "imported";
      }
      for (const s of data.actionStarts) {
        await c.query(
          "INSERT INTO ll_action_starts (action_id, started_at, pid, pgid, proc_start, guard) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (action_id) DO NOTHING",
          [s.actionId, s.startedAt, s.pid, s.pgid, s.procStart, s.guard],
        );
      }
      // The config the run started under comes with it (a record already here is kept).
      if (data.configSha)
        await c.query("INSERT INTO ll_thread_config (thread_id, config_sha) VALUES ($1, $2) ON CONFLICT (thread_id) DO NOTHING", [threadId, data.configSha]);
      return result;
    });
  }

  /** Whether a blob is stored (migrate checks the blobs a thread's events refer to). */
  async hasBlob(ref: string): Promise<boolean> {
    return Boolean((await this.pool.query("SELECT 1 FROM ll_blobs WHERE hash = $1", [ref])).rowCount);
  }

  async close(): Promise<void> {
    // The pool belongs to whoever opened it (it is shared with the checkpointer and the store).
  }
}

/** A row of ll_action_starts. */
interface ActionStartRow {
  action_id: string;
  started_at: string;
  pid: number | null;
  pgid: number | null;
  proc_start: string | null;
  guard: string | null;
}

function toActionStart(r: ActionStartRow): ActionStart {
  return { actionId: r.action_id, startedAt: r.started_at, pid: r.pid, pgid: r.pgid, procStart: r.proc_start, guard: r.guard };
}
