import { checkpointHistory, checkpointRowOf, type CheckpointRow } from "../ledger/checkpoints.js";
import type { LedgerEvent } from "../events.js";
import type { Ledger } from "../ledger/port.js";
import {
  noteCheckpointHome,
  openExistingState,
  openPgInspection,
  requirePgThread,
  requireThread,
  stateUrlOf,
  stderrNote,
  type WorkspaceArgs,
} from "../ledger/open-state.js";

/** One checkpoint of a run as `history` lists it. */
export interface HistoryRow {
  checkpointId: string;
  parentCheckpointId: string | null;
  step: number;
  next: string[];
  createdAt: string;
  source: string;
  status: string | null;
  ledgerHead: string | null;
  agentStep: number | null;
  /** "ledger" when the checkpoints are kept elsewhere and the row is rebuilt from the ledger events written under that checkpoint. */
  view?: "ledger";
}

/**
 * The ledger's view of a run whose checkpoints are not in this database (the LangGraph server's
 * own checkpointer): every event records the checkpoint its node ran from, so each such checkpoint
 * is listed with what ran from it, newest first. Its ids are the server's, usable with the SDK.
 */
async function ledgerHistory(st: { ledger: Pick<Ledger, "list"> }, thread: string): Promise<HistoryRow[]> {
  const events = await st.ledger.list(thread);
  const byCheckpoint = new Map<string, LedgerEvent[]>();
  for (const e of events) {
    if (!e.checkpointId) continue;
    const list = byCheckpoint.get(e.checkpointId) ?? [];
    list.push(e);
    byCheckpoint.set(e.checkpointId, list);
  }
  let step: number | null = null;
  const rows: HistoryRow[] = [];
  for (const [id, list] of byCheckpoint) {
    for (const e of list) if (e.type === "context_built") step = (e.payload as { step: number }).step;
    const status = [...list].reverse().find((e) => e.type === "run_status");
    rows.push({
      checkpointId: id,
      parentCheckpointId: null,
      step: -1,
      // The node that ran from this checkpoint, from its writes' idempotency keys (node:task/name).
      next: [...new Set(list.map((e) => e.idempotencyKey?.split(":")[0]).filter((n): n is string => Boolean(n)))],
      createdAt: list[0]!.ts,
      source: "ledger",
      status: status ? String((status.payload as { status: string }).status) : null,
      ledgerHead: list.at(-1)!.id,
      agentStep: step,
      view: "ledger",
    });
  }
  return rows.reverse();
}

function historyRow(c: CheckpointRow): HistoryRow {
  const v = c.values as { status?: string; ledgerHead?: string | null; step?: number };
  return {
    checkpointId: c.checkpointId,
    parentCheckpointId: c.parentCheckpointId,
    step: c.step,
    next: c.next,
    createdAt: c.createdAt,
    source: c.source,
    status: v.status ?? null,
    ledgerHead: v.ledgerHead ?? null,
    agentStep: v.step ?? null,
  };
}

/**
 * A run's checkpoints in a PostgreSQL state, read through the PostgresSaver (root graph only, newest
 * first, as the SQLite side reads its table); the ledger's view for a run with none there.
 */
async function pgHistory(url: string, thread: string): Promise<HistoryRow[]> {
  const st = await openPgInspection(url);
  try {
    await requirePgThread(st, thread);
    if (!(await st.runs.hasCheckpoints(thread))) {
      stderrNote(`${thread} has no checkpoints in ${st.location}; shown here is the ledger's view`);
      return await ledgerHistory(st, thread);
    }
    const rows: HistoryRow[] = [];
    for await (const t of st.checkpointer.list({ configurable: { thread_id: thread, checkpoint_ns: "" } })) {
      rows.push(historyRow(checkpointRowOf(t as unknown as Parameters<typeof checkpointRowOf>[0])));
    }
    return rows;
  } finally {
    await st.close();
  }
}

/** Every checkpoint of a thread, newest first. */
export async function getHistory(thread: string, args: WorkspaceArgs): Promise<HistoryRow[]> {
  const url = stateUrlOf(args);
  if (url) return pgHistory(url, thread);
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    if (!st.hasCheckpoints || !st.runs.hasCheckpoints(thread)) {
      noteCheckpointHome(st, thread);
      return await ledgerHistory(st, thread);
    }
    return checkpointHistory(st.db, thread).map(historyRow);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}
