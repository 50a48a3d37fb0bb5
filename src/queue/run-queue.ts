import PgBoss from "pg-boss";
import pg from "pg";
import { z } from "zod";
import { ConfigError, StateStoreError, threadDeleted } from "../errors.js";
import { asPgStateError, inTransaction, parsePgUrl } from "../ledger/pg-db.js";
import { defaultRedactor } from "../secrets.js";
import { RunSettings } from "../settings.js";
import { QUEUE_SCHEMA, RUN_QUEUE } from "./status.js";

// The run queue: pg-boss (a well-kept job queue on PostgreSQL, https://github.com/timgit/pg-boss)
// in its own schema of the state database. Chosen over graphile-worker because it needs nothing
// but `pg` and plain SQL tables, its jobs can be sent inside our own transactions (the `db`
// option), and it supports Node 20 up to 10.4.2 (graphile-worker's job locks expire after a fixed
// four hours, which does not fit runs that last hours and must move within seconds).
//
// A job only says which run to work on ({ thread }); what the run is (task, source, settings) is
// in ll_submissions, and who holds it in ll_run_leases (ledger/pg-run-leases.ts). pg-boss delivers each job
// once; a run outlives its jobs: when its worker dies, a reaper puts the run back with a new job.

export { QUEUE_SCHEMA, RUN_QUEUE };
/** pg-boss caps a job's active time below 24 h; a run may hold one job at most this long. */
const JOB_EXPIRE_SECONDS = 23 * 3600;

/** The payload of a queue job. Anything else is failed with the reason, never retried. */
export const RunJob = z.object({ thread: z.string().min(1).max(200) }).strict();
export type RunJob = z.infer<typeof RunJob>;

/** The longest setup command a submission may declare (it is stored, logged and shown to the model). */
export const SETUP_MAX_CHARS = 2000;

/**
 * Where a worker gets the run's files. `setup` (repo sources): a command each worker runs in its
 * fresh clone before driving the run, to re-create what git does not carry (src/runs/worker-setup.ts).
 */
export const RunSource = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.literal("repo"),
      repo: z.string().min(1),
      ref: z.string().min(1).optional(),
      setup: z.string().trim().min(1).max(SETUP_MAX_CHARS).optional(),
    })
    .strict(),
  z.object({ kind: z.literal("workspace"), path: z.string().min(1) }).strict(),
]);
export type RunSource = z.infer<typeof RunSource>;

/** Run settings a submission carries: RunSettings without what each worker decides (where the files and state are). */
export const SubmittedSettings = RunSettings.omit({ workspace: true, stateDir: true, stateUrl: true });
export type SubmittedSettings = z.infer<typeof SubmittedSettings>;

export interface Submission {
  thread: string;
  task: string;
  source: RunSource;
  settings: SubmittedSettings;
  submittedAt: string;
  /** The commit a repo source was resolved to by the first worker (every later one uses it). */
  commit: string | null;
}

/** Connections pg-boss opens of its own when it is not given a pool (`startQueue` without `pool`). */
export const QUEUE_OWN_POOL_SIZE = 3;

/**
 * Starts pg-boss on the state database (installing or migrating its schema) with the run queue created.
 * With `pool` (a worker's one pool) pg-boss runs every query on it and opens no connection of its own
 * (its `db` option; stopping it leaves the pool open); without, it opens a pool of QUEUE_OWN_POOL_SIZE.
 */
export async function startQueue(url: string, opts: { supervise?: boolean; onError?: (err: Error) => void; pool?: pg.Pool } = {}): Promise<PgBoss> {
  const pool = opts.pool;
  const boss = new PgBoss({
    ...(pool
      ? { db: { executeSql: (text: string, values: unknown[]) => pool.query(text, values) } }
      : { connectionString: parsePgUrl(url).toString(), max: QUEUE_OWN_POOL_SIZE, application_name: "ledgerloop-queue" }),
    schema: QUEUE_SCHEMA,
    schedule: false,
    supervise: opts.supervise ?? false,
  });
  // Without a listener an EventEmitter throws 'error'; pg-boss reports polling trouble there.
  boss.on("error", (err: Error) => opts.onError?.(err));
  try {
    await boss.start();
    await createRunQueue(boss, url, pool);
  } catch (err) {
    await boss.stop({ graceful: false, wait: false }).catch(() => {});
    throw asPgStateError(err, url);
  }
  return boss;
}

/**
 * Creates the run queue unless it exists, one process at a time. pg-boss serialises installing its
 * schema but not create_queue: two processes creating the same queue at once deadlock (each INSERT
 * of the queue row waits on the other's, while the first one's partition needs a lock on the queue
 * table), which killed workers started together on a new database. A session advisory lock on a
 * connection of our own orders them; the later ones find the row and do nothing. On a pool's
 * connection the lock is released by hand, and a connection that could not release it is discarded.
 */
async function createRunQueue(boss: PgBoss, url: string, pool?: pg.Pool): Promise<void> {
  if (await boss.getQueue(RUN_QUEUE)) return;
  const lockKey = [`ledgerloop.${QUEUE_SCHEMA}.${RUN_QUEUE}`];
  if (pool) {
    const c = await pool.connect();
    let unlocked = false;
    try {
      await c.query("SELECT pg_advisory_lock(hashtext($1))", lockKey);
      try {
        await createIt(boss);
      } finally {
        unlocked = await c.query("SELECT pg_advisory_unlock(hashtext($1))", lockKey).then(
          () => true,
          () => false,
        );
      }
    } finally {
      c.release(!unlocked);
    }
    return;
  }
  const c = new pg.Client({ connectionString: parsePgUrl(url).toString(), connectionTimeoutMillis: 10_000 });
  c.on("error", () => {});
  await c.connect();
  try {
    await c.query("SELECT pg_advisory_lock(hashtext($1))", lockKey);
    await createIt(boss);
  } finally {
    // Closing the session releases the lock.
    await c.end().catch(() => {});
  }
}

function createIt(boss: PgBoss): Promise<void> {
  return boss.createQueue(RUN_QUEUE, { name: RUN_QUEUE, policy: "standard", retryLimit: 0, expireInSeconds: JOB_EXPIRE_SECONDS });
}

/** Sends a run job on `client` (inside its transaction). */
export function enqueueOn(
  boss: PgBoss,
  client: pg.PoolClient,
  job: RunJob,
  opts: { startAfterSeconds?: number; priority?: number } = {},
): Promise<string | null> {
  const db = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
  return boss.send(RUN_QUEUE, job, {
    db,
    retryLimit: 0,
    expireInSeconds: JOB_EXPIRE_SECONDS,
    ...(opts.startAfterSeconds ? { startAfter: opts.startAfterSeconds } : {}),
    ...(opts.priority ? { priority: opts.priority } : {}),
  });
}

/** A thread id a submission may use: it names directories on workers. */
const THREAD_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** A run to submit, with the priority its jobs are queued with. */
export type NewSubmission = Omit<Submission, "submittedAt" | "commit"> & { priority?: number };

/** Checks what a submission says by itself (no database): the first problem as a ConfigError. */
function checkSubmission(s: NewSubmission): void {
  if (s.priority !== undefined && !Number.isInteger(s.priority)) throw new ConfigError(`invalid priority ${s.priority}: a whole number, higher runs first`);
  if (!THREAD_ID.test(s.thread)) throw new ConfigError(`invalid thread id "${s.thread}": letters, digits, '.', '_' and '-' only, at most 128`);
  if (!s.task.trim()) throw new ConfigError("the task must not be empty");
  if (s.source.kind === "repo") refuseCredentials(s.source.repo);
  if (s.source.kind === "repo" && s.source.setup !== undefined) checkSetup(s.source.setup);
}

/** Refuses a setup command that is empty, too long, or carries what looks like a secret; returns it trimmed. */
export function checkSetup(setup: string): string {
  const cmd = setup.trim();
  if (!cmd) throw new ConfigError('--setup must not be empty: give the command a worker runs in its fresh clone (e.g. "npm ci")');
  if (cmd.length > SETUP_MAX_CHARS)
    throw new ConfigError(`--setup is ${cmd.length} characters long; at most ${SETUP_MAX_CHARS} (put a longer one in a script of the repository)`);
  if (cmd.includes("\u0000")) throw new ConfigError("--setup contains a NUL character");
  // Stored in the shared database and shown to the model: a secret belongs in the workers' environment.
  if (defaultRedactor.redact(cmd) !== cmd)
    throw new ConfigError(
      `--setup carries what looks like a secret (${defaultRedactor.redact(cmd)}); give it to the workers through their environment instead`,
    );
  return cmd;
}

/** Refuses a repository URL that carries a password or token. */
export function refuseCredentials(repo: string): void {
  if (defaultRedactor.redact(repo) === repo) return;
  // Every reader of the shared database would see it, and the ledger could not redact it later.
  throw new ConfigError(
    `the repository URL carries a password or token (${defaultRedactor.redact(repo)}), which would be stored in the shared database: ` +
      "give the workers the credential instead (a git credential helper or ~/.git-credentials on each worker machine, or GIT_ASKPASS) and submit the URL without it",
  );
}

/**
 * Records a run and queues its first job, in one transaction: a submission is either fully queued
 * or not at all. Fails when the thread id is taken (by a submitted run or any run of the database).
 */
export async function submitRun(
  pool: pg.Pool,
  boss: PgBoss,
  s: Omit<Submission, "submittedAt" | "commit">,
  opts: { priority?: number } = {},
): Promise<{ jobId: string }> {
  const [r] = await submitRuns(pool, boss, [{ ...s, priority: opts.priority }]);
  return { jobId: r!.jobId };
}

/**
 * Records many runs and queues their first jobs in one transaction on one connection: all of them
 * or none (a taken or repeated thread id fails the whole batch, naming it).
 */
export async function submitRuns(pool: pg.Pool, boss: PgBoss, runs: NewSubmission[]): Promise<Array<{ thread: string; jobId: string }>> {
  runs.forEach(checkSubmission);
  const seen = new Set<string>();
  for (const s of runs) {
    if (seen.has(s.thread)) throw new ConfigError(`thread "${s.thread}" is given twice in the batch`);
    seen.add(s.thread);
  }
  return inTransaction(pool, async (client) => {
    const out: Array<{ thread: string; jobId: string }> = [];
    for (const s of runs) {
      const taken = await client.query(
        "SELECT 1 FROM ll_submissions WHERE thread_id = $1 UNION ALL SELECT 1 FROM ll_runs WHERE thread_id = $1 UNION ALL SELECT 1 FROM ll_events WHERE thread_id = $1 LIMIT 1",
        [s.thread],
      );
      if (taken.rowCount) throw new ConfigError(`thread "${s.thread}" already exists in the state database; pick another --thread`);
      if ((await client.query("SELECT 1 FROM ll_deleted_runs WHERE thread_id = $1", [s.thread])).rowCount) throw threadDeleted(s.thread);
      await client.query("INSERT INTO ll_submissions (thread_id, task, source, settings, submitted_at) VALUES ($1, $2, $3, $4, $5)", [
        s.thread,
        // Redacted as the ledger redacts a run's goal: the task is shown to every reader of the database.
        defaultRedactor.redact(s.task),
        JSON.stringify(s.source),
        JSON.stringify(s.settings),
        new Date().toISOString(),
      ]);
      // The first job, sent on the same client: the row and its job commit together.
      const jobId = await enqueueOn(boss, client, { thread: s.thread }, { priority: s.priority ?? 0 });
      if (!jobId) throw new StateStoreError("STATE_DB_UNREADABLE", `the queue refused a job for run ${s.thread}`);
      await client.query("INSERT INTO ll_run_leases (thread_id, state, note, priority, job_id) VALUES ($1, 'queued', 'submitted', $2, $3)", [
        s.thread,
        s.priority ?? 0,
        jobId,
      ]);
      out.push({ thread: s.thread, jobId });
    }
    return out;
  });
}

/** A submitted run, or null. A row that no longer parses is an error naming the thread. */
export async function getSubmission(db: Pick<pg.Pool, "query">, thread: string): Promise<Submission | null> {
  const r = (
    await db.query<{ thread_id: string; task: string; source: string; settings: string; submitted_at: string; commit_sha: string | null }>(
      "SELECT * FROM ll_submissions WHERE thread_id = $1",
      [thread],
    )
  ).rows[0];
  if (!r) return null;
  const source = RunSource.safeParse(JSON.parse(r.source));
  const settings = SubmittedSettings.safeParse(JSON.parse(r.settings));
  if (!source.success || !settings.success) {
    const i = (source.success ? settings.error! : source.error).issues[0]!;
    throw new ConfigError(`submitted run ${thread} has invalid ${source.success ? "settings" : "source"}: ${i.path.join(".")}: ${i.message}`);
  }
  return { thread: r.thread_id, task: r.task, source: source.data, settings: settings.data, submittedAt: r.submitted_at, commit: r.commit_sha };
}

/** Records the commit a repo source resolved to; the first worker's answer wins. Returns the recorded one. */
export async function pinCommit(db: Pick<pg.Pool, "query">, thread: string, commit: string): Promise<string> {
  await db.query("UPDATE ll_submissions SET commit_sha = $2 WHERE thread_id = $1 AND commit_sha IS NULL", [thread, commit]);
  const r = await db.query<{ commit_sha: string }>("SELECT commit_sha FROM ll_submissions WHERE thread_id = $1", [thread]);
  return r.rows[0]!.commit_sha;
}
