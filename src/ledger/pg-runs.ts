import type pg from "pg";
import { tableExists } from "./pg-db.js";
import type { RunSettings } from "../settings.js";
import {
  portable,
  toRecord,
  type CheckpointHome,
  type RunOrigin,
  type RunRecord,
  type RunRegistryPort,
  type RunRow,
  type RunTrace,
  type RunnerInfo,
} from "./runs.js";

/** The run registry on PostgreSQL (table ll_runs of pg-db.ts's migrations; checkpoints are PostgresSaver's). */
export class PgRunRegistry implements RunRegistryPort {
  constructor(private readonly pool: pg.Pool) {}

  async register(
    threadId: string,
    goal: string,
    settings: RunSettings,
    meta: { origin?: RunOrigin; checkpoints?: CheckpointHome; runner?: RunnerInfo } = {},
  ): Promise<boolean> {
    const r = await this.pool.query(
      `INSERT INTO ll_runs (thread_id, created_at, goal, settings, origin, checkpoints, runner) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (thread_id) DO NOTHING`,
      [
        threadId,
        new Date().toISOString(),
        goal,
        JSON.stringify(portable(settings)),
        meta.origin ?? null,
        meta.checkpoints ?? null,
        meta.runner ? JSON.stringify(meta.runner) : null,
      ],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async recordRunner(threadId: string, runner: RunnerInfo): Promise<boolean> {
    const r = await this.pool.query("UPDATE ll_runs SET runner = $1 WHERE thread_id = $2", [JSON.stringify(runner), threadId]);
    return (r.rowCount ?? 0) > 0;
  }

  async get(threadId: string): Promise<RunRecord | null> {
    const r = (await this.pool.query<RunRow>("SELECT * FROM ll_runs WHERE thread_id = $1", [threadId])).rows[0];
    return r ? toRecord(r) : null;
  }

  async list(): Promise<RunRecord[]> {
    return (await this.pool.query<RunRow>("SELECT * FROM ll_runs ORDER BY created_at, thread_id")).rows.map(toRecord);
  }

  /** The run's row as stored (ledgerloop migrate copies it unchanged). */
  async row(threadId: string): Promise<RunRow | null> {
    return (await this.pool.query<RunRow>("SELECT * FROM ll_runs WHERE thread_id = $1", [threadId])).rows[0] ?? null;
  }

  /** Stores a row read from another state database (its trace ids too); false when the thread is already registered. */
  async importRow(r: RunRow): Promise<boolean> {
    const res = await this.pool.query(
      `INSERT INTO ll_runs (thread_id, created_at, goal, settings, origin, checkpoints, runner, trace) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (thread_id) DO NOTHING`,
      [r.thread_id, r.created_at, r.goal, r.settings, r.origin ?? null, r.checkpoints ?? null, r.runner ?? null, r.trace ?? null],
    );
    return (res.rowCount ?? 0) > 0;
  }

  async recordTrace(threadId: string, trace: RunTrace): Promise<RunTrace | null> {
    await this.pool.query("UPDATE ll_runs SET trace = $1 WHERE thread_id = $2 AND trace IS NULL", [JSON.stringify(trace), threadId]);
    return (await this.get(threadId))?.trace ?? null;
  }

  async hasCheckpoints(threadId: string): Promise<boolean> {
    // PostgresSaver's table, in the same schema (search_path); absent until its setup() ran.
    if (!(await tableExists(this.pool, "checkpoints"))) return false;
    return Boolean((await this.pool.query("SELECT 1 FROM checkpoints WHERE thread_id = $1 LIMIT 1", [threadId])).rowCount);
  }
}
