import os from "node:os";
import type { Database } from "../sqlite/driver.js";
import type { RunSettings } from "../settings.js";
import { isRunning, readProcStart } from "../proc.js";
import { threadHasCheckpoints } from "./checkpoints.js";

/** What started a run: the CLI, a script (createCodingAgent / the package API), the LangGraph server (Studio, SDK), or a queue worker. */
export const RUN_ORIGINS = ["cli", "script", "server", "worker"] as const;
export type RunOrigin = (typeof RUN_ORIGINS)[number];

/** Where a run's checkpoints live: this state database, or a checkpointer the caller brought (the LangGraph server's own). */
export const CHECKPOINT_HOMES = ["state-db", "external"] as const;
export type CheckpointHome = (typeof CHECKPOINT_HOMES)[number];

/** The process that last ran a node of the run, so a reader can tell a running run from a stopped one. */
export interface RunnerInfo {
  pid: number;
  host: string;
  /** Start time of the process (/proc), so a reused pid is not taken for the runner. */
  procStart: string | null;
  at: string;
}

/** One registered run. */
export interface RunRecord {
  threadId: string;
  createdAt: string;
  goal: string;
  settings: RunSettings;
  /** Null for runs registered before origins were recorded (they came from the CLI). */
  origin: RunOrigin | null;
  checkpoints: CheckpointHome | null;
  runner: RunnerInfo | null;
  /** Null until a node of the run ran under telemetry (every run from this version on). */
  trace: RunTrace | null;
}

/** This process as a runner. */
export function currentRunner(): RunnerInfo {
  return { pid: process.pid, host: os.hostname(), procStart: readProcStart(process.pid), at: new Date().toISOString() };
}

/** True/false when the runner can be checked from here (same host), null when it cannot (another host, not recorded). */
export function runnerAlive(r: RunnerInfo | null): boolean | null {
  if (!r) return null;
  if (r.host !== os.hostname()) return null;
  return isRunning(r.pid, r.procStart);
}

const COLUMNS: Array<[string, string]> = [
  ["origin", "TEXT"],
  ["checkpoints", "TEXT"],
  ["runner", "TEXT"],
  ["trace", "TEXT"],
];

/** The run's trace (W3C ids, hex): every process that runs a node of the run logs and exports under it. */
export interface RunTrace {
  traceId: string;
  /** The run's root span: a resuming process parents its spans to it, so a run stays one trace. */
  spanId: string;
}

/** A row of ll_runs, as both backends store it. */
export interface RunRow {
  thread_id: string;
  created_at: string;
  goal: string;
  settings: string;
  origin?: string | null;
  checkpoints?: string | null;
  runner?: string | null;
  trace?: string | null;
}

/**
 * Settings as stored: without the state directory, which is always found from the workspace given
 * on the command line (a stored absolute path made a copied workspace write into the original).
 */
export function portable(settings: RunSettings): RunSettings {
  // The state URL too: it names where the registry itself is, and may carry a password.
  const { stateDir: _dropped, stateUrl: _url, ...rest } = settings;
  return rest;
}

/**
 * The run registry of a state database: every run, whatever started it (the graph's plan node
 * registers it), with the settings it was started with (so `resume` continues with the same model,
 * limits and budgets), its origin, where its checkpoints are, and its last runner. Never holds
 * secrets (API keys come from the environment). Read-only handles tolerate an older or missing table.
 */
export class RunRegistry {
  private readonly present: boolean;

  constructor(private readonly db: Database) {
    if (!db.readonly) {
      db.exec(`CREATE TABLE IF NOT EXISTS ll_runs (
        thread_id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        goal TEXT NOT NULL,
        settings TEXT NOT NULL,
        origin TEXT,
        checkpoints TEXT,
        runner TEXT
      )`);
      // Databases made before origins were recorded get the new columns in place.
      const have = new Set((db.prepare("PRAGMA table_info(ll_runs)").all() as Array<{ name: string }>).map((c) => c.name));
      for (const [name, type] of COLUMNS) if (!have.has(name)) db.exec(`ALTER TABLE ll_runs ADD COLUMN ${name} ${type}`);
    }
    this.present = Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'll_runs'").get());
  }

  /** Registers a run once; a second call (a re-run of the plan, a replan) changes nothing. True when it was new. */
  register(
    threadId: string,
    goal: string,
    settings: RunSettings,
    meta: { origin?: RunOrigin; checkpoints?: CheckpointHome; runner?: RunnerInfo } = {},
  ): boolean {
    const r = this.db
      .prepare("INSERT OR IGNORE INTO ll_runs (thread_id, created_at, goal, settings, origin, checkpoints, runner) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .run(
        threadId,
        new Date().toISOString(),
        goal,
        JSON.stringify(portable(settings)),
        meta.origin ?? null,
        meta.checkpoints ?? null,
        meta.runner ? JSON.stringify(meta.runner) : null,
      );
    return r.changes > 0;
  }

  /** Records the process now running the run's nodes (a resume may be another process than the start). */
  recordRunner(threadId: string, runner: RunnerInfo): boolean {
    return this.db.prepare("UPDATE ll_runs SET runner = ? WHERE thread_id = ?").run(JSON.stringify(runner), threadId).changes > 0;
  }

  /** Records the run's trace ids once; the first writer wins. The stored trace (or null before the run is registered). */
  recordTrace(threadId: string, trace: RunTrace): RunTrace | null {
    this.db.prepare("UPDATE ll_runs SET trace = ? WHERE thread_id = ? AND trace IS NULL").run(JSON.stringify(trace), threadId);
    return this.get(threadId)?.trace ?? null;
  }

  get(threadId: string): RunRecord | null {
    if (!this.present) return null;
    const r = this.db.prepare("SELECT * FROM ll_runs WHERE thread_id = ?").get(threadId) as RunRow | undefined;
    return r ? toRecord(r) : null;
  }

  /** Every registered run, oldest first. */
  list(): RunRecord[] {
    if (!this.present) return [];
    return (this.db.prepare("SELECT * FROM ll_runs ORDER BY created_at").all() as RunRow[]).map(toRecord);
  }

  /** The run's row as stored (ledgerloop migrate copies it unchanged). */
  row(threadId: string): RunRow | null {
    if (!this.present) return null;
    return (this.db.prepare("SELECT * FROM ll_runs WHERE thread_id = ?").get(threadId) as RunRow | undefined) ?? null;
  }

  /** Stores a row read from another state database as it is; false when the thread is already registered. */
  importRow(r: RunRow): boolean {
    const res = this.db
      .prepare("INSERT OR IGNORE INTO ll_runs (thread_id, created_at, goal, settings, origin, checkpoints, runner, trace) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
      .run(r.thread_id, r.created_at, r.goal, r.settings, r.origin ?? null, r.checkpoints ?? null, r.runner ?? null, r.trace ?? null);
    return res.changes > 0;
  }

  /** True when LangGraph has at least one checkpoint for the thread in this database. */
  hasCheckpoints(threadId: string): boolean {
    return threadHasCheckpoints(this.db, threadId);
  }
}

export function toRecord(r: RunRow): RunRecord {
  // Plain lists, not zod: `run` and every inspection command load this module (see startup.test).
  const origin = RUN_ORIGINS.find((o) => o === r.origin) ?? null;
  const home = CHECKPOINT_HOMES.find((h) => h === r.checkpoints) ?? null;
  let runner: RunnerInfo | null = null;
  try {
    runner = r.runner ? (JSON.parse(r.runner) as RunnerInfo) : null;
  } catch {
    runner = null;
  }
  let trace: RunTrace | null = null;
  try {
    trace = r.trace ? (JSON.parse(r.trace) as RunTrace) : null;
  } catch {
    trace = null;
  }
  return {
    threadId: r.thread_id,
    createdAt: r.created_at,
    goal: r.goal,
    // Rows written before stateDir was dropped still carry it: never let it decide where state lives.
    settings: portable(JSON.parse(r.settings) as RunSettings),
    origin,
    checkpoints: home,
    runner,
    trace,
  };
}

/**
 * The run registry as a port, for code that works on either backend (the PostgreSQL adapter is
 * pg-runs.ts). Async because a PostgreSQL round trip is; the SQLite class above stays synchronous
 * for its existing callers.
 */
export interface RunRegistryPort {
  register(
    threadId: string,
    goal: string,
    settings: RunSettings,
    meta?: { origin?: RunOrigin; checkpoints?: CheckpointHome; runner?: RunnerInfo },
  ): Promise<boolean>;
  recordRunner(threadId: string, runner: RunnerInfo): Promise<boolean>;
  get(threadId: string): Promise<RunRecord | null>;
  list(): Promise<RunRecord[]>;
  hasCheckpoints(threadId: string): Promise<boolean>;
  /** Records the run's trace ids once (the first writer wins); the stored trace, or null before the run is registered. */
  recordTrace(threadId: string, trace: RunTrace): Promise<RunTrace | null>;
}

/** The SQLite registry behind the async port. */
export function sqliteRunRegistry(db: Database): RunRegistryPort {
  const r = new RunRegistry(db);
  return {
    register: async (...args) => r.register(...args),
    recordRunner: async (t, runner) => r.recordRunner(t, runner),
    get: async (t) => r.get(t),
    list: async () => r.list(),
    hasCheckpoints: async (t) => r.hasCheckpoints(t),
    recordTrace: async (t, trace) => r.recordTrace(t, trace),
  };
}
