import pg from "pg";
import { StateStoreError, errorMessage } from "../errors.js";
import { isStateUnavailable } from "./state-unavailable.js";
import { redactUrl } from "./state-url.js";

/**
 * PostgreSQL as the state database (`--state postgres://…`): one database holds the ledger, the
 * run registry, the lessons store, a replica of the workspace revisions and LangGraph's checkpoints
 * (PostgresSaver's own tables), for any number of processes on any number of machines.
 */

/** Whether a table (schema-qualified, or on the search_path) exists: some are created only later (PostgresSaver's, the queue's). */
export async function tableExists(db: Pick<pg.Pool, "query"> | pg.PoolClient, table: string): Promise<boolean> {
  return Boolean((await db.query<{ t: string | null }>("SELECT to_regclass($1) AS t", [table])).rows[0]?.t);
}

/**
 * Runs `fn` in one transaction on a client of `pool`: committed when it returns, rolled back when it
 * throws (its error is rethrown), and the client released either way.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query("BEGIN");
    try {
      const out = await fn(c);
      await c.query("COMMIT");
      return out;
    } catch (err) {
      await c.query("ROLLBACK").catch(() => {});
      throw err;
    }
  } finally {
    c.release();
  }
}

export { isPostgresUrl, redactUrl } from "./state-url.js";

/**
 * Versioned migrations of ledgerloop's own tables; the position in the list is the version.
 * Never edit a released entry: add a new one. LangGraph's checkpoint tables are migrated by
 * PostgresSaver.setup() (its own `checkpoint_migrations` table), right after these.
 */
export const PG_MIGRATIONS: string[] = [
  // 1: the ledger (the same tables as the SQLite adapter), the run registry and the lessons store.
  `
  CREATE TABLE ll_events (
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
  CREATE INDEX ll_events_type ON ll_events(thread_id, type, seq);
  CREATE INDEX ll_events_parent ON ll_events(parent_id);
  CREATE INDEX ll_events_caused ON ll_events(caused_by);
  CREATE FUNCTION ll_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'the ledger is append-only: events cannot be %', lower(TG_OP) || 'd'; END $$;
  CREATE TRIGGER ll_events_no_change BEFORE UPDATE OR DELETE ON ll_events
    FOR EACH ROW EXECUTE FUNCTION ll_events_append_only();
  CREATE TRIGGER ll_events_no_truncate BEFORE TRUNCATE ON ll_events
    FOR EACH STATEMENT EXECUTE FUNCTION ll_events_append_only();
  CREATE TABLE ll_event_files (
    thread_id TEXT NOT NULL,
    path TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (thread_id, path, event_id)
  );
  CREATE TABLE ll_forks (
    thread_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (thread_id, event_id)
  );
  CREATE TABLE ll_blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, data BYTEA NOT NULL);
  CREATE TABLE ll_action_starts (
    action_id TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    pid INTEGER,
    pgid INTEGER,
    proc_start TEXT,
    guard TEXT
  );
  CREATE TABLE ll_runs (
    thread_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    goal TEXT NOT NULL,
    settings TEXT NOT NULL,
    origin TEXT,
    checkpoints TEXT,
    runner TEXT
  );
  CREATE TABLE ll_store (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    tsv TSVECTOR,
    PRIMARY KEY (namespace, key)
  );
  CREATE INDEX ll_store_tsv ON ll_store USING gin (tsv);
  `,
  // 2: the replica of the workspace revision stores (ledger/pg-revisions.ts): the same objects as
  // the local SQLite store, so a worker on another machine can materialise any revision a run took.
  // Blobs keep their stored form (raw DEFLATE or raw, as chosen by rev-blobs.ts); EXTERNAL storage
  // stops PostgreSQL from trying to compress them a second time.
  `
  CREATE TABLE ll_rev_blobs (hash TEXT PRIMARY KEY, size BIGINT NOT NULL, codec SMALLINT NOT NULL, data BYTEA NOT NULL);
  ALTER TABLE ll_rev_blobs ALTER COLUMN data SET STORAGE EXTERNAL;
  CREATE TABLE ll_rev_trees (hash TEXT PRIMARY KEY, data BYTEA NOT NULL);
  CREATE TABLE ll_rev_revisions (
    rev_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    label TEXT,
    files BIGINT NOT NULL,
    bytes BIGINT NOT NULL
  );
  `,
  // 3: the run queue's own rows (src/queue/): what was submitted, and which worker holds each run.
  // The jobs themselves are pg-boss's, in its own schema.
  `
  CREATE TABLE ll_submissions (
    thread_id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    source TEXT NOT NULL,
    settings TEXT NOT NULL,
    submitted_at TEXT NOT NULL,
    commit_sha TEXT
  );
  CREATE TABLE ll_run_leases (
    thread_id TEXT PRIMARY KEY REFERENCES ll_submissions(thread_id),
    state TEXT NOT NULL,
    worker TEXT,
    token TEXT,
    job_id TEXT,
    heartbeat_at TIMESTAMPTZ,
    expires_at TIMESTAMPTZ,
    takeovers INTEGER NOT NULL DEFAULT 0,
    note TEXT,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
  );
  CREATE INDEX ll_run_leases_expiry ON ll_run_leases (expires_at) WHERE state = 'held';
  `,
  // 4: a run's trace ids (W3C), so every worker that runs a node of it logs and exports under one trace.
  `
  ALTER TABLE ll_runs ADD COLUMN trace TEXT;
  `,
  // 5: the config fingerprint each thread runs under (ledger/governing.ts), shared by every machine
  // that continues the run (it was in each machine's local SQLite).
  `
  CREATE TABLE ll_thread_config (
    thread_id TEXT PRIMARY KEY,
    config_sha TEXT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now()
  );
  `,
  // 6: how often workers released a run because they could not materialise its workspace
  // (pg-run-leases.ts): another machine may reach what one cannot, up to MATERIALISE_ATTEMPTS.
  `
  ALTER TABLE ll_run_leases ADD COLUMN releases INTEGER NOT NULL DEFAULT 0;
  `,
  // 7: garbage collection of the revision replica (ledger/pg-maintenance.ts). A sweep bumps the
  // generation under a row lock; a push commits its revision only under the generation it checked
  // its objects in (ledger/pg-revisions.ts), so it never names a tree or blob a sweep removed.
  // pushed_at keeps a revision a run pushed moments ago, before its ledger names it.
  `
  CREATE TABLE ll_rev_gc (id SMALLINT PRIMARY KEY CHECK (id = 1), generation BIGINT NOT NULL);
  INSERT INTO ll_rev_gc (id, generation) VALUES (1, 0);
  ALTER TABLE ll_rev_revisions ADD COLUMN pushed_at TIMESTAMPTZ NOT NULL DEFAULT now();
  `,
  // 8: deleting one run whole (ledger/pg-delete-run.ts). The guard lets a DELETE of an event through
  // only when the transaction has named the event's thread (set_config('ledgerloop.deleting_thread',
  // thread, true)); an update, a truncate, or a delete of any other thread's events still fails.
  // ll_deleted_runs names the deleted threads: each machine's search index forgets their events, and
  // their ids are not used again.
  `
  CREATE OR REPLACE FUNCTION ll_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND TG_LEVEL = 'ROW' THEN
        IF OLD.thread_id = current_setting('ledgerloop.deleting_thread', true) THEN RETURN OLD; END IF;
      END IF;
      RAISE EXCEPTION 'the ledger is append-only: events cannot be %', lower(TG_OP) || 'd';
    END $$;
  CREATE TABLE ll_deleted_runs (thread_id TEXT PRIMARY KEY, deleted_at TIMESTAMPTZ NOT NULL DEFAULT now());
  `,
  // 9: run control (queue/run-control.ts): a cancel asked of the worker holding a run (it stops the
  // run at the next step boundary), and the priority every job of a run is queued with.
  `
  ALTER TABLE ll_run_leases ADD COLUMN cancel_requested TEXT;
  ALTER TABLE ll_run_leases ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
  `,
  // 10: the fleet (queue/fleet.ts): each worker registers and renews its row, so \`ledgerloop workers\`
  // and doctor can tell a live fleet from a dead one. Which runs a worker holds stays in ll_run_leases.
  `
  CREATE TABLE ll_workers (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    slots INTEGER NOT NULL,
    version TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    state TEXT NOT NULL,
    note TEXT,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ NOT NULL,
    stopped_at TIMESTAMPTZ
  );
  CREATE INDEX ll_workers_heartbeat ON ll_workers (heartbeat_at);
  `,
];

/** The schema version this build writes and understands. */
export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

export interface OpenPgStateOptions {
  /** PostgreSQL schema for every table (default `public`); tests use one per test. */
  schema?: string;
  /** Pool size (default 5). */
  max?: number;
  /** Give up connecting after this long (default 10 s). */
  connectTimeoutMs?: number;
  /** Create the schema and run pending migrations (default true); false only checks the version. */
  migrate?: boolean;
  /**
   * Every session of the pool is read-only (default_transaction_read_only): the server itself
   * refuses any write, whatever the code above it does. Only with `migrate: false`.
   */
  readOnly?: boolean;
  /** Open a database of a newer schema too (read-only readers of tables that every version keeps, e.g. the fleet's). */
  allowNewer?: boolean;
  /**
   * More setup to run under the same migration lock (PostgresSaver.setup(): its CREATE TABLE IF NOT
   * EXISTS races when several workers start at once).
   */
  setup?: (pool: pg.Pool) => Promise<void>;
  /** How long a session may sit idle inside a transaction before the server ends it (default STALLED_TRANSACTION_MS). */
  stalledTransactionMs?: number;
}

/**
 * A transaction left open by a client that stopped (SIGSTOP, a frozen VM, a partition that keeps
 * the TCP connection) holds its row locks for good: a fenced ledger append holds its run lease's
 * row FOR SHARE, so the reaper could never hand that run over. PostgreSQL ends such a session after
 * this long idle in a transaction (idle_in_transaction_session_timeout); a live process's
 * transactions last milliseconds, and a stopped one finds its connection gone when it wakes.
 */
export const STALLED_TRANSACTION_MS = 30_000;

/** An open PostgreSQL state database. */
export interface PgState {
  pool: pg.Pool;
  schema: string;
  /** The URL without its password. */
  location: string;
  /** Schema version found (after migrations: PG_SCHEMA_VERSION). */
  version: number;
  close(): Promise<void>;
}

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

/** Parses and checks a state URL: one line naming what is wrong. */
export function parsePgUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    throw new StateStoreError("STATE_URL_INVALID", `invalid state URL ${redactUrl(url)}: not a URL; expected postgres://user[:password]@host[:port]/database`);
  }
  if (!/^postgres(ql)?:$/.test(u.protocol)) {
    throw new StateStoreError("STATE_URL_INVALID", `invalid state URL ${redactUrl(url)}: the scheme must be postgres:// or postgresql://`);
  }
  if (!u.hostname && !u.searchParams.get("host")) {
    throw new StateStoreError("STATE_URL_INVALID", `invalid state URL ${redactUrl(url)}: no host; expected postgres://user[:password]@host[:port]/database`);
  }
  if (u.pathname.replace(/^\//, "") === "") {
    throw new StateStoreError(
      "STATE_URL_INVALID",
      `invalid state URL ${redactUrl(url)}: no database name; expected postgres://user[:password]@host[:port]/database`,
    );
  }
  return u;
}

/** Maps a connection error of `pg` to a one-line StateStoreError that never shows the password. */
export function asPgStateError(err: unknown, url: string): StateStoreError {
  if (err instanceof StateStoreError) return err;
  const u = new URL(url);
  const where = `${u.hostname}:${u.port || 5432}`;
  const db = decodeURIComponent(u.pathname.slice(1));
  const user = decodeURIComponent(u.username) || "(default user)";
  const code = (err as { code?: string })?.code ?? "";
  const msg = errorMessage(err)
    .split("\n")[0]!
    .replace(u.password || "\u0000", "***");
  if (code === "28P01" || code === "28000" || /password authentication failed|no password supplied|SASL/i.test(msg)) {
    return new StateStoreError(
      "STATE_DB_AUTH",
      `PostgreSQL at ${where} refused the login of user "${user}" (${msg}); check the user and password in the state URL`,
      { cause: err },
    );
  }
  if (code === "3D000") {
    return new StateStoreError("STATE_DB_UNREADABLE", `PostgreSQL at ${where} has no database "${db}"; create it (createdb ${db}) or fix the state URL`, {
      cause: err,
    });
  }
  if (
    ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ECONNRESET"].includes(code) ||
    /timeout|terminated unexpectedly/i.test(msg) ||
    isStateUnavailable(err)
  ) {
    return new StateStoreError("STATE_DB_UNREACHABLE", `cannot reach PostgreSQL at ${where} (${code || msg}); is the server running and the state URL right?`, {
      cause: err,
    });
  }
  return new StateStoreError("STATE_DB_UNREADABLE", `cannot use PostgreSQL state database ${redactUrl(url)}: ${msg}`, { cause: err });
}

/** A lock id for schema migrations: every process starting at once waits for the first. */
const MIGRATION_LOCK = 0x4c4c4f50; // "LLOP", as SQLite's application_id

/**
 * Connects, refuses a database written by a newer ledgerloop, and runs pending migrations (under
 * an advisory lock, each in its own transaction). Every failure is a one-line StateStoreError,
 * raised before anything else runs.
 */
export async function openPgState(url: string, opts: OpenPgStateOptions = {}): Promise<PgState> {
  const parsed = parsePgUrl(url);
  const schema = opts.schema ?? "public";
  if (!IDENT.test(schema)) throw new StateStoreError("STATE_URL_INVALID", `invalid PostgreSQL schema name "${schema}"`);
  const pool = new pg.Pool({
    connectionString: parsed.toString(),
    max: opts.max ?? 5,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
    options: [
      `-c search_path=${schema}`,
      `-c idle_in_transaction_session_timeout=${Math.max(1, Math.round(opts.stalledTransactionMs ?? STALLED_TRANSACTION_MS))}`,
      ...(opts.readOnly && opts.migrate === false ? ["-c default_transaction_read_only=on"] : []),
    ].join(" "),
  });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on("error", () => {});
  // Nor must a checked-out one between two queries of a transaction (pg-pool listens only on idle
  // clients): its next query fails instead, and the run pauses as state_unavailable.
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  let version = 0;
  try {
    const client = await pool.connect();
    try {
      if (opts.migrate === false) {
        version = await readVersion(client);
      } else {
        await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
        try {
          await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
          await client.query("CREATE TABLE IF NOT EXISTS ll_schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
          version = await readVersion(client);
          checkNotNewer(version, url);
          for (let v = version + 1; v <= PG_SCHEMA_VERSION; v++) {
            await client.query("BEGIN");
            try {
              await client.query(PG_MIGRATIONS[v - 1]!);
              await client.query("INSERT INTO ll_schema_version (version) VALUES ($1)", [v]);
              await client.query("COMMIT");
            } catch (err) {
              await client.query("ROLLBACK").catch(() => {});
              throw new StateStoreError("STATE_DB_UNREADABLE", `migrating ${redactUrl(url)} to schema version ${v} failed: ${errorMessage(err)}`, {
                cause: err,
              });
            }
            version = v;
          }
          await opts.setup?.(pool);
        } finally {
          await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
        }
      }
      if (!(opts.allowNewer && opts.readOnly && opts.migrate === false)) checkNotNewer(version, url);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => {});
    throw asPgStateError(err, parsed.toString());
  }
  let closed = false;
  return {
    pool,
    schema,
    location: redactUrl(url),
    version,
    async close() {
      if (closed) return;
      closed = true;
      await pool.end();
    },
  };
}

async function readVersion(client: pg.PoolClient): Promise<number> {
  if (!(await tableExists(client, "ll_schema_version"))) return 0;
  const r = await client.query("SELECT COALESCE(MAX(version), 0) AS v FROM ll_schema_version");
  return Number(r.rows[0]?.v ?? 0);
}

function checkNotNewer(version: number, url: string): void {
  if (version > PG_SCHEMA_VERSION) {
    throw new StateStoreError(
      "STATE_DB_NEWER",
      `the state database ${redactUrl(url)} has schema version ${version}, newer than this ledgerloop understands (${PG_SCHEMA_VERSION}); upgrade ledgerloop (nothing was written)`,
    );
  }
}
