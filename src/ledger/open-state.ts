import fs from "node:fs";
import type { Database } from "../sqlite/driver.js";
import { CliError } from "../errors.js";
import type { LedgerEvent, Subtask } from "../events.js";
import { defaultRedactor } from "../secrets.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import { checkpointsElsewhere } from "./checkpoint-home.js";
import type { RunRegistry } from "./runs.js";
import type { SqliteLedger } from "./sqlite-ledger.js";

// Opening a run's state to read it (or, for gc and memory forget, to write it): the workspace's
// SQLite file or a PostgreSQL state, with one-line errors for a missing state or an unknown thread.
// Shared by the inspection queries (inspect/), the application layer (runs/) and the entry points,
// so it sits in the core. Every command imports it, `--help` included: heavy modules load on use.

/** A line on stderr, redacted: notes the queries give beside their data (where checkpoints are). */
export function stderrNote(line: string): void {
  process.stderr.write(defaultRedactor.redact(line) + "\n");
}

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
  ledger: import("./port.js").Ledger;
  runs: import("./runs.js").RunRegistryPort;
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
    import("./pg-db.js"),
    import("./pg-ledger.js"),
    import("./pg-runs.js"),
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

export interface OpenedState {
  workspace: string;
  stateDir: string;
  dbPath: string;
  db: Database;
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
export async function openExistingState(args: WorkspaceArgs, opts: { write?: boolean; warn?: (line: string) => void } = {}): Promise<OpenedState> {
  // Loaded on use: this module is imported by every command, `--help` included, and must stay light.
  const [{ RunRegistry }, { SqliteLedger }, { asStateError, isSqliteError, openStateDb }] = await Promise.all([
    import("./runs.js"),
    import("./sqlite-ledger.js"),
    import("./state-db.js"),
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
      const { claimWorkspace } = await import("./workspace-identity.js");
      claimWorkspace(db, { workspace, stateDir }, { warn: (m) => (opts.warn ?? stderrNote)(`warning: ${m}`) });
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
    checkpointsElsewhere({
      thread,
      origin: run?.origin ?? null,
      checkpointsIn: st.runs.hasCheckpoints(thread) ? "state-db" : run?.checkpoints === "external" ? "external" : "none",
    }) ?? `the checkpoints of ${thread} are in ${st.dbPath}`
  );
}

/** Says on stderr, for a run whose checkpoints are not here, that what follows is the ledger's view and where the checkpoints are. */
export function noteCheckpointHome(st: OpenedState, thread: string): void {
  if (!st.runs.hasCheckpoints(thread)) stderrNote(whereCheckpointsAre(st, thread));
}

/**
 * Where a thread stands: its newest local checkpoint's ledger head and plan or, for a run whose
 * checkpoints are kept elsewhere (the LangGraph server's), the ledger's view: its newest event and
 * the last plan on that branch.
 */
export async function currentHead(st: OpenedState, thread: string): Promise<{ ledgerHead: string | null; subtasks: Subtask[]; from: "checkpoint" | "ledger" }> {
  if (st.hasCheckpoints && st.runs.hasCheckpoints(thread)) {
    const { latestCheckpoint } = await import("./checkpoints.js");
    const values = latestCheckpoint(st.db, thread)?.values as { ledgerHead?: string | null; subtasks?: Subtask[] } | undefined;
    return { ledgerHead: values?.ledgerHead ?? null, subtasks: values?.subtasks ?? [], from: "checkpoint" };
  }
  const head = st.db.prepare("SELECT id FROM ll_events WHERE thread_id = ? ORDER BY seq DESC LIMIT 1").get(thread) as { id: string } | undefined;
  const plans = head ? await st.ledger.branch(head.id, { types: ["task_spec", "plan_update"], last: 1 }) : [];
  const plan = plans.at(-1) as LedgerEvent<"task_spec" | "plan_update"> | undefined;
  return { ledgerHead: head?.id ?? null, subtasks: plan?.payload.subtasks ?? [], from: "ledger" };
}
