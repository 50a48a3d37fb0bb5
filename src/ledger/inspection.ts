import type { LedgerEvent, Subtask } from "../events.js";
import type { CheckpointRow } from "./checkpoints.js";
import {
  noteCheckpointHome,
  openExistingState,
  openPgInspection,
  requirePgThread,
  requireThread,
  stateUrlOf,
  stderrNote,
  type WorkspaceArgs,
} from "./open-state.js";
import type { Ledger } from "./port.js";
import type { RunSummary } from "./run-status.js";

// One way to read a run's state, whichever backend holds it: the inspection queries (src/inspect/)
// open an Inspection and never ask whether it is SQLite or PostgreSQL. The two adapters below are
// the only places that know; each reads its own tables (SQLite's checkpoints by SQL, PostgreSQL's
// through the PostgresSaver) and gives the same rows.

/** Where a thread stands: its newest checkpoint's ledger head and plan, or the ledger's view when its checkpoints are elsewhere. */
export interface ThreadHead {
  ledgerHead: string | null;
  subtasks: Subtask[];
  from: "checkpoint" | "ledger";
}

/** A run state opened for reading, on either backend. */
export interface Inspection {
  /** The state database file, or the PostgreSQL server (password hidden). */
  readonly location: string;
  readonly ledger: Ledger;
  /** Fails with a one-line error (UNKNOWN_THREAD) unless the thread is known here. */
  requireThread(thread: string): Promise<void>;
  /** Whether this state holds the thread's checkpoints; when it does not, says on stderr where they are. */
  checkpointsHere(thread: string): Promise<boolean>;
  /** The thread's checkpoints (root graph), newest first. */
  checkpoints(thread: string): Promise<CheckpointRow[]>;
  /** Where the thread stands (see {@link ThreadHead}). */
  head(thread: string): Promise<ThreadHead>;
  /** Every run, newest first, with its status (the rows `threads` and the viewer list). */
  runs(): Promise<RunSummary[]>;
  /** Errors of the backend as one line naming the state (SQLite's own never say which file); others unchanged. */
  named(err: unknown): unknown;
  close(): Promise<void>;
}

/** The ledger's view of where a thread stands: its newest event and the last plan on that branch. */
async function ledgerHead(ledger: Ledger, thread: string): Promise<ThreadHead> {
  const head = (await ledger.list(thread)).at(-1);
  const plans = head ? await ledger.branch(head.id, { types: ["task_spec", "plan_update"], last: 1 }) : [];
  const plan = plans.at(-1) as LedgerEvent<"task_spec" | "plan_update"> | undefined;
  return { ledgerHead: head?.id ?? null, subtasks: plan?.payload.subtasks ?? [], from: "ledger" };
}

/** Opens the state `args` point at (--state / $LEDGERLOOP_STATE_URL, else the workspace's SQLite file) for reading. */
export async function openInspection(args: WorkspaceArgs): Promise<Inspection> {
  const url = stateUrlOf(args);
  return url ? openPostgres(url) : openSqlite(args);
}

async function openSqlite(args: WorkspaceArgs): Promise<Inspection> {
  const [st, { checkpointHistory, latestCheckpoint }, { listRuns }] = await Promise.all([
    openExistingState(args),
    import("./checkpoints.js"),
    import("./run-status.js"),
  ]);
  const here = (thread: string) => st.hasCheckpoints && st.runs.hasCheckpoints(thread);
  return {
    location: st.dbPath,
    ledger: st.ledger,
    requireThread: async (thread) => requireThread(st, thread),
    checkpointsHere: async (thread) => {
      noteCheckpointHome(st, thread);
      return here(thread);
    },
    checkpoints: async (thread) => (here(thread) ? checkpointHistory(st.db, thread) : []),
    head: async (thread) => {
      if (!here(thread)) return ledgerHead(st.ledger, thread);
      const values = latestCheckpoint(st.db, thread)?.values as { ledgerHead?: string | null; subtasks?: Subtask[] } | undefined;
      return { ledgerHead: values?.ledgerHead ?? null, subtasks: values?.subtasks ?? [], from: "checkpoint" };
    },
    runs: async () => listRuns(st.db),
    named: st.named,
    close: async () => st.close(),
  };
}

async function openPostgres(url: string): Promise<Inspection> {
  const [pg, { checkpointRowOf, latestValues }, { listRunsPg }] = await Promise.all([
    openPgInspection(url),
    import("./checkpoints.js"),
    import("./pg-run-status.js"),
  ]);
  const here = (thread: string) => pg.runs.hasCheckpoints(thread);
  return {
    location: pg.location,
    ledger: pg.ledger,
    requireThread: (thread) => requirePgThread(pg, thread),
    checkpointsHere: async (thread) => {
      const has = await here(thread);
      if (!has) stderrNote(`${thread} has no checkpoints in ${pg.location}; shown here is the ledger's view`);
      return has;
    },
    checkpoints: async (thread) => {
      const rows: CheckpointRow[] = [];
      for await (const t of pg.checkpointer.list({ configurable: { thread_id: thread, checkpoint_ns: "" } })) {
        rows.push(checkpointRowOf(t as unknown as Parameters<typeof checkpointRowOf>[0]));
      }
      return rows;
    },
    head: async (thread) => {
      if (!(await here(thread))) return ledgerHead(pg.ledger, thread);
      const values = await latestValues<{ ledgerHead: string | null; subtasks: Subtask[] }>(pg.checkpointer, thread);
      return { ledgerHead: values?.ledgerHead ?? null, subtasks: values?.subtasks ?? [], from: "checkpoint" };
    },
    runs: () => listRunsPg(pg.pool),
    named: (err) => err,
    close: () => pg.close(),
  };
}

/** Opens, runs `fn`, names the backend's errors, and closes whatever happens. */
export async function withInspection<T>(args: WorkspaceArgs, fn: (st: Inspection) => Promise<T>): Promise<T> {
  const st = await openInspection(args);
  try {
    return await fn(st);
  } catch (err) {
    throw st.named(err);
  } finally {
    await st.close();
  }
}
