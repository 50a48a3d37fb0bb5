import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import type Database from "better-sqlite3";
import { CliError, LedgerloopError } from "../errors.js";
import type { LedgerEvent, Subtask } from "../events.js";
import { checkpointsElsewhere } from "../ledger/checkpoint-home.js";
import type { RunRegistry } from "../ledger/runs.js";
import type { SqliteLedger } from "../ledger/sqlite-ledger.js";
import type { ProgressEvent, Runtime } from "../runtime.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import { defaultRedactor } from "../secrets.js";
import type { RunSettings } from "../settings.js";

/** Options every command that reads a workspace's state accepts. */
export interface WorkspaceArgs {
  workspace?: string;
  stateDir?: string;
  /** PostgreSQL URL of the durable state (`--state`, default $LEDGERLOOP_STATE_URL). */
  state?: string;
  json?: boolean;
}

/** The PostgreSQL state a command was pointed at (--state, else $LEDGERLOOP_STATE_URL), if any. */
export function stateUrlOf(args: { state?: string }): string | undefined {
  const url = (args.state ?? process.env.LEDGERLOOP_STATE_URL)?.trim();
  return url ? url : undefined;
}

/** A PostgreSQL state opened for reading (threads, history, ledger, report with --state). */
export interface PgInspection {
  location: string;
  pool: import("pg").Pool;
  ledger: import("../ledger/port.js").Ledger;
  runs: import("../ledger/runs.js").RunRegistryPort;
  checkpointer: import("@langchain/langgraph-checkpoint").BaseCheckpointSaver;
  close(): Promise<void>;
}

/**
 * Opens a PostgreSQL state read-only (no migration); one line when it holds no ledgerloop runs.
 * `max` is the pool's size (default 2: a command reads one thing at a time; the viewer takes more);
 * `readOnly` makes the server refuse any write on its sessions (the viewer, which runs for long).
 */
export async function openPgInspection(url: string, opts: { max?: number; readOnly?: boolean } = {}): Promise<PgInspection> {
  const [{ openPgState }, { PgLedger }, { PgRunRegistry }, { PostgresSaver }] = await Promise.all([
    import("../ledger/pg-db.js"),
    import("../ledger/pg-ledger.js"),
    import("../ledger/pg-runs.js"),
    import("@langchain/langgraph-checkpoint-postgres"),
  ]);
  const st = await openPgState(url, { migrate: false, max: opts.max ?? 2, ...(opts.readOnly ? { readOnly: true } : {}) });
  if (st.version === 0) {
    await st.close();
    throw new CliError(`no ledgerloop state in ${st.location} yet; start a run with \`ledgerloop run --state …\``, 1, "NO_STATE");
  }
  return {
    location: st.location,
    pool: st.pool,
    ledger: new PgLedger(st.pool),
    runs: new PgRunRegistry(st.pool),
    checkpointer: new PostgresSaver(st.pool),
    close: () => st.close(),
  };
}

/** Fails with a one-line error unless the thread is known in a PostgreSQL state. */
export async function requirePgThread(st: PgInspection, threadId: string): Promise<void> {
  if ((await st.runs.get(threadId)) || (await st.runs.hasCheckpoints(threadId))) return;
  if ((await st.ledger.list(threadId, { limit: 1 })).length) return;
  throw new CliError(`unknown thread "${threadId}" in ${st.location}; list runs with \`ledgerloop threads --state …\``, 1, "UNKNOWN_THREAD");
}

/** Adds --state to a command that can keep its durable state in PostgreSQL. */
export function stateOption(cmd: Command): Command {
  return cmd.option("--state <url>", "keep the ledger, checkpoints, lessons and run registry in PostgreSQL: postgres://user[:password]@host[:port]/db (default: $LEDGERLOOP_STATE_URL)");
}

/** Adds --reconnect-seconds to a command that drives a run (run, resume). */
export function reconnectOption(cmd: Command): Command {
  return cmd.option(
    "--reconnect-seconds <n>",
    "on a PostgreSQL state, how long a run that lost its database waits for it to come back before it stays paused (exit 6); 0 pauses at once (default 60)",
    wholeNumberOption("--reconnect-seconds", "seconds"),
  );
}

/** Parser of an option that takes a whole number of `unit`, 0 included. */
export function wholeNumberOption(name: string, unit: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new CliError(`${name} must be a whole number of ${unit}, got "${v}"`, 2, "CONFIG_INVALID");
    return n;
  };
}

/** Milliseconds a driven run waits for a lost state database (--reconnect-seconds, default 60). */
export function reconnectMsOf(args: { reconnectSeconds?: number }): number {
  return (args.reconnectSeconds ?? 60) * 1000;
}

/** Adds --workspace and --state-dir to a command. */
export function workspaceOptions(cmd: Command): Command {
  return cmd
    .option("-w, --workspace <dir>", "the workspace directory (default: current directory)")
    .option("--state-dir <dir>", "where the state database lives (default: <workspace>/.ledgerloop)");
}

/** Progress and logs go to stderr, so stdout stays clean for --json. */
export function log(line: string): void {
  process.stderr.write(defaultRedactor.redact(line) + "\n");
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + "\n");
}

export interface OpenedState {
  workspace: string;
  stateDir: string;
  dbPath: string;
  db: Database.Database;
  ledger: SqliteLedger;
  runs: RunRegistry;
  /** The database has LangGraph's checkpoint tables (a run whose checkpoints live elsewhere may not). */
  hasCheckpoints: boolean;
  close(): void;
  /** SQLite's own errors (which never say which file) as a one-line error naming the state database; others unchanged. */
  named(err: unknown): unknown;
}

/**
 * Opens an existing state database; never creates one. Read-only unless `write` (gc, memory
 * forget): inspecting a run, even a corrupt or foreign file, writes nothing to it.
 */
export async function openExistingState(args: WorkspaceArgs, opts: { write?: boolean } = {}): Promise<OpenedState> {
  // Loaded on use: this module is imported by every command, `--help` included, and must stay light.
  const [{ RunRegistry }, { SqliteLedger }, { asStateError, isSqliteError, openStateDb }] = await Promise.all([
    import("../ledger/runs.js"),
    import("../ledger/sqlite-ledger.js"),
    import("../ledger/state-db.js"),
  ]);
  if (stateUrlOf(args)) {
    // Said plainly rather than showing the workspace's local SQLite file as if it were the state.
    throw new CliError(
      "this command reads runs from the SQLite state only; reading them from PostgreSQL (--state / LEDGERLOOP_STATE_URL) is not implemented yet (run, resume, threads, history, ledger, report, context, memory, diff, rewind, fork, replay, web, doctor, migrate, submit, worker, gc and delete take --state; logs and stats are about this machine's files)",
      2,
      "NOT_SUPPORTED",
    );
  }
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  const { stateDir, dbPath } = stateLocation(workspace, args.stateDir);
  if (!fs.existsSync(dbPath)) {
    const hint = args.workspace ? "" : " (no -w given, so the current directory was taken: give the workspace with -w DIR)";
    throw new CliError(`no ledgerloop state in ${workspace}${hint} (${dbPath} does not exist); start a run with \`ledgerloop run\``, 1, "NO_STATE");
  }
  const db = openStateDb(dbPath, { create: false, readonly: !opts.write });
  const named = (err: unknown) => (isSqliteError(err) ? asStateError(err, dbPath) : err);
  try {
    if (opts.write) {
      const { claimWorkspace } = await import("../ledger/workspace-identity.js");
      claimWorkspace(db, { workspace, stateDir }, { warn: (m) => log(`warning: ${m}`) });
    }
    const have = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name));
    if (!opts.write && !have.has("ll_events")) {
      // Read-only, nothing creates the tables: a file with checkpoints only (plain LangGraph) or
      // from before the first run gets a sentence, not "no such table". A run whose checkpoints are
      // kept elsewhere (the LangGraph server's) has no checkpoints table here, and is still a run.
      throw new CliError(`${dbPath} holds no ledgerloop run (table ll_events is missing); start a run with \`ledgerloop run\``, 1, "NO_STATE");
    }
    return {
      workspace,
      stateDir,
      dbPath,
      db,
      // Their constructors create tables and triggers when writing: a locked file fails here.
      ledger: new SqliteLedger(db),
      runs: new RunRegistry(db),
      hasCheckpoints: have.has("checkpoints") && have.has("writes"),
      close: () => db.close(),
      named,
    };
  } catch (err) {
    db.close();
    throw named(err);
  }
}

/** Fails with a one-line error unless the thread is known here: registered, in the ledger, or with checkpoints. */
export function requireThread(state: OpenedState, threadId: string): void {
  if (state.runs.hasCheckpoints(threadId) || state.runs.get(threadId)) return;
  if (state.db.prepare("SELECT 1 FROM ll_events WHERE thread_id = ? LIMIT 1").get(threadId)) return;
  throw new CliError(`unknown thread "${threadId}" in ${state.dbPath}; list runs with \`ledgerloop threads\``, 1, "UNKNOWN_THREAD");
}

/** A sentence saying where a run's checkpoints are when they are not in this database. */
export function whereCheckpointsAre(st: OpenedState, thread: string): string {
  const run = st.runs.get(thread);
  return (
    checkpointsElsewhere({ thread, origin: run?.origin ?? null, checkpointsIn: st.runs.hasCheckpoints(thread) ? "state-db" : run?.checkpoints === "external" ? "external" : "none" }) ??
    `the checkpoints of ${thread} are in ${st.dbPath}`
  );
}

/** Says on stderr, for a run whose checkpoints are not here, that what follows is the ledger's view and where the checkpoints are. */
export function noteCheckpointHome(st: OpenedState, thread: string): void {
  if (!st.runs.hasCheckpoints(thread)) log(whereCheckpointsAre(st, thread));
}

/**
 * Where a thread stands: its newest local checkpoint's ledger head and plan or, for a run whose
 * checkpoints are kept elsewhere (the LangGraph server's), the ledger's view: its newest event and
 * the last plan on that branch.
 */
export async function currentHead(st: OpenedState, thread: string): Promise<{ ledgerHead: string | null; subtasks: Subtask[]; from: "checkpoint" | "ledger" }> {
  if (st.hasCheckpoints && st.runs.hasCheckpoints(thread)) {
    const { latestCheckpoint } = await import("../ledger/checkpoints.js");
    const values = latestCheckpoint(st.db, thread)?.values as { ledgerHead?: string | null; subtasks?: Subtask[] } | undefined;
    return { ledgerHead: values?.ledgerHead ?? null, subtasks: values?.subtasks ?? [], from: "checkpoint" };
  }
  const head = st.db.prepare("SELECT id FROM ll_events WHERE thread_id = ? ORDER BY seq DESC LIMIT 1").get(thread) as { id: string } | undefined;
  const plans = head ? await st.ledger.branch(head.id, { types: ["task_spec", "plan_update"], last: 1 }) : [];
  const plan = plans.at(-1) as LedgerEvent<"task_spec" | "plan_update"> | undefined;
  return { ledgerHead: head?.id ?? null, subtasks: plan?.payload.subtasks ?? [], from: "ledger" };
}

/** Exit code of `run`/`resume` for a run's outcome (documented in the README). */
export function exitCodeForStatus(status: string): number {
  return ({ finished: 0, budget_exhausted: 3, rate_limited: 4, model_unavailable: 5, state_unavailable: 6, no_progress: 7 } as Record<string, number>)[status] ?? 1;
}

/** Exit code for an error reaching the top level. */
export function exitCodeFor(err: unknown): number {
  // CliError and the errors that name their own code (a held lease, a copied workspace).
  const own = (err as { exitCode?: unknown } | null)?.exitCode;
  if (err instanceof LedgerloopError && typeof own === "number") return own;
  if (err instanceof LedgerloopError) return err.code === "CONFIG_INVALID" || err.code === "MODEL_UNKNOWN" ? 2 : 1;
  return 1;
}

/** Parses a positive integer flag, naming the flag on failure. */
export function intOption(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new CliError(`${name} must be a positive integer, got "${value}"`, 2, "CONFIG_INVALID");
    return n;
  };
}

/** A model for commands that run no node (rewind, fork, diff, gc): calling it is a bug. */
const INERT_MODEL = {
  name: "none:inspection",
  async invoke(): Promise<never> {
    throw new CliError("this command does not call a model", 1, "NO_MODEL");
  },
};

/**
 * An existing thread's workspace and the settings it was started with (none for a thread made
 * outside the CLI); reads the state database without writing to it, or with `postgres` and --state
 * (or $LEDGERLOOP_STATE_URL) the PostgreSQL run registry. Fails for an unknown thread.
 */
export async function savedRun(
  thread: string,
  args: WorkspaceArgs,
  opts: { postgres?: boolean } = {},
): Promise<{ workspace: string; settings: RunSettings | undefined }> {
  const url = stateUrlOf(args);
  // Only for callers that go through the runtime's ports on PostgreSQL (resume, diff, rewind, fork,
  // replay); the others (context, logs, …) read the local tables, and keep saying that they do not
  // read PostgreSQL yet.
  if (url && opts.postgres) {
    // With --state the run's registry and checkpoints are in PostgreSQL; the workspace is this
    // machine's copy of the files (with its revisions and lease in .ledgerloop/).
    const workspace = resolveWorkspace(args.workspace ?? process.cwd());
    const pg = await openPgInspection(url);
    try {
      await requirePgThread(pg, thread);
      if (!(await pg.runs.hasCheckpoints(thread))) {
        throw new CliError(`${thread} has no checkpoints in ${pg.location}; this command needs them there (inspect the run with threads, history, ledger, report)`, 1, "CHECKPOINTS_ELSEWHERE");
      }
      return { workspace, settings: (await pg.runs.get(thread))?.settings };
    } finally {
      await pg.close();
    }
  }
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    if (!st.runs.hasCheckpoints(thread)) {
      // resume, rewind, fork, diff and replay need the run's checkpoints in this database.
      throw new CliError(`${whereCheckpointsAre(st, thread)}; this command needs them here (inspect the run with threads, history, ledger, report, context)`, 1, "CHECKPOINTS_ELSEWHERE");
    }
    return { workspace: st.workspace, settings: st.runs.get(thread)?.settings };
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

/**
 * The runtime of an existing thread, with the settings it was started with (model replaced by an
 * inert one unless the command runs the agent). With `postgres` the command works through the
 * runtime's ports only (checkpointer, ledger, runs, revisions with their replica), so --state (or
 * $LEDGERLOOP_STATE_URL) gives it a runtime on that PostgreSQL state and the `-w` workspace's files;
 * without, it is refused there (savedRun).
 */
export async function runtimeForThread(
  thread: string,
  args: WorkspaceArgs,
  opts: { progress?: (e: ProgressEvent) => void; lease?: string; postgres?: boolean } = {},
): Promise<Runtime> {
  const { workspace, settings } = await savedRun(thread, args, { postgres: opts.postgres });
  const url = opts.postgres ? stateUrlOf(args) : undefined;
  // Loaded here, not at the top: inspection commands share this module and must not load LangGraph.
  const { createRuntime } = await import("../runtime.js");
  // Time-travel commands need no index: the next run refreshes it from the files' sizes and mtimes.
  // The state is the workspace's own (or --state-dir), never a path stored in the run's settings.
  const rt = await createRuntime(
    // The registry never stores where it is: a run read from PostgreSQL is changed there.
    { ...(settings ?? {}), workspace, stateDir: args.stateDir, ...(url ? { stateUrl: url } : {}), model: INERT_MODEL.name, retrieval: "lexical" },
    {
      model: INERT_MODEL,
      progress: opts.progress,
      warn: (m) => log(`warning: ${m}`),
      ...(opts.lease ? { lease: { command: opts.lease, thread } } : {}),
    },
  );
  if (opts.lease && rt.pg) {
    try {
      await refuseIfQueued(rt.pg.pool, thread, opts.lease);
    } catch (err) {
      await rt.close();
      throw err;
    }
  }
  return rt;
}

/**
 * A command that writes a run (resume, rewind, fork) must not race a queue worker: refused, in one
 * line naming the worker, while one holds the run or while it waits in the queue for one.
 */
export async function refuseIfQueued(pool: import("pg").Pool, thread: string, command: string): Promise<void> {
  const { findRunLease, leaseLive } = await import("../queue/run-leases.js");
  const l = await findRunLease(pool, thread);
  if (!l) return;
  if (leaseLive(l)) {
    throw new CliError(`run ${thread} is being driven by worker ${l.worker}; stop that worker (SIGTERM hands the run back to the queue) before \`${command}\``, 75, "LEASE_HELD");
  }
  if (l.state === "queued" || l.state === "held") {
    throw new CliError(`run ${thread} is queued for the workers (a worker will take it up); \`${command}\` would race it`, 75, "LEASE_HELD");
  }
}

/** Quotes a word for a POSIX shell when it needs it. */
export function shellWord(w: string): string {
  return /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/**
 * How to call this CLI in a printed hint so that it works as printed from any directory:
 * `ledgerloop` when that name on the user's PATH is this very package, else `node <its bin>`
 * (after `npm ci` in a clone nothing is on the PATH; `npx` and `npm run` add directories that
 * are gone once they exit, so those do not count).
 */
export function cliCommand(env: NodeJS.ProcessEnv = process.env): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "package.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const bin = path.join(dir, "bin", "ledgerloop.js");
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return null;
    }
  };
  for (const d of (env.PATH ?? "").split(path.delimiter)) {
    if (!d || d.includes(`${path.sep}_npx${path.sep}`) || d.endsWith(path.join("node_modules", ".bin"))) continue;
    const found = real(path.join(d, "ledgerloop"));
    if (found) return found === real(bin) ? "ledgerloop" : `node ${shellWord(bin)}`;
  }
  return `node ${shellWord(bin)}`;
}
