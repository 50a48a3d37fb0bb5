import type { Database } from "../sqlite/driver.js";
import { checkpointCounts, interruptedCheck } from "./checkpoints.js";
import { RunRegistry, runnerAlive, type CheckpointHome, type RunOrigin, type RunRecord } from "./runs.js";

/**
 * What a reader can say about a run. The ledger's statuses (finished, failed, max_steps,
 * script_exhausted, interrupted, awaiting_approval, rate_limited, model_unavailable, budget_exhausted) plus what only the records show together:
 * `rewound`/`forked` (a CLI time-travel waiting to be resumed), `running` (its runner is alive),
 * `unknown` (no terminal status, and its runner cannot be checked from here).
 */
export type RunStatusView =
  | "running"
  | "finished"
  | "failed"
  | "interrupted"
  | "awaiting_approval"
  | "rewound"
  | "forked"
  | "max_steps"
  | "script_exhausted"
  | "rate_limited"
  | "model_unavailable"
  | "budget_exhausted"
  | "no_progress"
  /** Submitted to the queue (src/queue/), waiting for a worker. */
  | "queued"
  /** Cancelled from the queue (`ledgerloop cancel`); `ledgerloop requeue` continues it. */
  | "cancelled"
  | "unknown";

/** What is recorded about a run, as `runStatus` reads it. */
export interface RunFacts {
  /** The thread's newest ledger event (by seq): its type, and the status it records if it is a run_status. */
  last: { type: string; status?: string | null; kind?: string | null } | null;
  /** The newest local checkpoint has a pending interrupt (a paused approval). */
  pendingInterrupt: boolean;
  /** The runner that last ran a node: alive, dead, or not checkable (null). */
  runnerAlive: boolean | null;
}

/**
 * The one status function: the CLI (`threads`, `report`) and the viewer both show this.
 * A pending interrupt wins (the run waits whatever the ledger said before); then the ledger's last
 * word when it is a status or a CLI time travel; otherwise the run is as alive as its runner.
 */
export function runStatus(f: RunFacts): RunStatusView {
  if (f.pendingInterrupt) return "awaiting_approval";
  if (f.last?.type === "run_status" && f.last.status) {
    if (f.last.status !== "running") return f.last.status as RunStatusView;
  }
  if (f.last?.type === "time_travel" && f.last.kind === "rewind") return "rewound";
  if (f.last?.type === "time_travel" && f.last.kind === "fork") return "forked";
  if (f.runnerAlive === true) return "running";
  if (f.runnerAlive === false) return "interrupted";
  return "unknown";
}

/** One run as every inspection command and the viewer list it. */
export interface RunSummary {
  thread: string;
  goal: string | null;
  status: RunStatusView;
  origin: RunOrigin | null;
  /** Where the checkpoints are: this state database, a checkpointer of the caller (the LangGraph server), or none yet. */
  checkpointsIn: CheckpointHome | "none";
  createdAt: string | null;
  lastActivity: string | null;
  events: number;
  checkpoints: number;
  /** Highest decide step with a prompt recorded. */
  steps: number | null;
  /** A run submitted to the queue (PostgreSQL state only): which worker holds it, how often it moved. */
  queue?: { state: string; worker: string | null; takeovers: number; heartbeatAt: string | null; expiresAt: string | null; note: string | null };
}

const hasTable = (db: Database, name: string) => Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name));

/** Every run recorded in a state database (registry, ledger or checkpoints), newest first, each with its status. */
export function listRuns(db: Database): RunSummary[] {
  const runs = new Map(new RunRegistry(db).list().map((r) => [r.threadId, r]));
  const ledger = hasTable(db, "ll_events");
  const events = new Map<string, ThreadEvents>();
  if (ledger) {
    const rows = db
      .prepare(
        `SELECT thread_id, COUNT(*) AS n, MIN(ts) AS first_ts, MAX(ts) AS last_ts, MAX(seq) AS max_seq,
           MAX(CASE WHEN type = 'context_built' THEN json_extract(payload, '$.step') END) AS steps,
           (SELECT json_extract(payload, '$.goal') FROM ll_events s WHERE s.thread_id = e.thread_id AND s.type = 'task_spec' ORDER BY seq LIMIT 1) AS goal
         FROM ll_events e GROUP BY thread_id`,
      )
      .all() as Array<{ thread_id: string; n: number; first_ts: string; last_ts: string; max_seq: number; goal: string | null; steps: number | null }>;
    for (const r of rows) events.set(r.thread_id, { n: r.n, first: r.first_ts, last: r.last_ts, maxSeq: r.max_seq, goal: r.goal, steps: r.steps });
  }
  const counts = checkpointCounts(db);
  const lastEvent = ledger
    ? db.prepare<[string, number], { type: string; status: string | null; kind: string | null }>(
        "SELECT type, json_extract(payload, '$.status') AS status, json_extract(payload, '$.kind') AS kind FROM ll_events WHERE thread_id = ? AND seq = ?",
      )
    : null;
  // A run paused by interrupt() has a pending __interrupt__ write on its newest checkpoint.
  const paused = interruptedCheck(db);
  const ids = new Set([...runs.keys(), ...events.keys(), ...counts.keys()]);
  return [...ids]
    .map((id): RunSummary => {
      const r = runs.get(id);
      const e = events.get(id);
      const last = e && lastEvent ? (lastEvent.get(id, e.maxSeq) ?? null) : null;
      return runSummary(id, r, e, last, paused?.(id) ?? false, counts.get(id) ?? 0);
    })
    .sort(newestFirst);
}

/** What the ledger says of one thread, for the run listing (both backends compute it). */
export interface ThreadEvents {
  n: number;
  first: string;
  last: string;
  maxSeq: number;
  goal: string | null;
  steps: number | null;
}

/** The listing's order: newest first, then by thread id. */
export const newestFirst = (a: RunSummary, b: RunSummary) => String(b.createdAt).localeCompare(String(a.createdAt)) || a.thread.localeCompare(b.thread);

/** One run's line in the listing, from its registry record, ledger summary, last event, pending interrupt and checkpoint count. */
export function runSummary(
  id: string,
  r: RunRecord | undefined,
  e: ThreadEvents | undefined,
  last: { type: string; status: string | null; kind: string | null } | null,
  paused: boolean,
  checkpoints: number,
): RunSummary {
  return {
    thread: id,
    goal: r?.goal ?? e?.goal ?? null,
    status: runStatus({ last, pendingInterrupt: paused, runnerAlive: runnerAlive(r?.runner ?? null) }),
    origin: r?.origin ?? null,
    checkpointsIn: checkpoints > 0 ? "state-db" : r?.checkpoints === "external" ? "external" : "none",
    createdAt: r?.createdAt ?? e?.first ?? null,
    lastActivity: e?.last ?? null,
    events: e?.n ?? 0,
    checkpoints,
    steps: e?.steps ?? null,
  };
}

export { checkpointsElsewhere } from "./checkpoint-home.js";

/** Statuses of runs that gc leaves whole and delete refuses: they may be writing right now. */
const ACTIVE = new Set(["running", "queued", "unknown"]);

/**
 * Whether a run may be running (gc leaves it whole, delete refuses it). `unknown` is a run with no
 * final status whose runner is on a host this machine cannot check: running there, or dead without
 * a word. With `staleMs`, such a run silent (no ledger event) for longer than that counts as
 * stopped; a held or queued run never does.
 */
export function mayBeRunning(run: Pick<RunSummary, "status" | "lastActivity">, now: number, staleMs?: number): boolean {
  if (!ACTIVE.has(run.status)) return false;
  if (run.status !== "unknown" || staleMs === undefined || run.lastActivity === null) return true;
  const last = Date.parse(run.lastActivity);
  return Number.isNaN(last) || now - last <= staleMs;
}
