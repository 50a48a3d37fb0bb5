import type { CheckpointRow } from "../ledger/checkpoints.js";
import type { LedgerEvent } from "../events.js";
import type { Ledger } from "../ledger/port.js";
import { withInspection } from "../ledger/inspection.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";

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

/** Every checkpoint of a thread, newest first; the ledger's view for a run whose checkpoints are kept elsewhere. */
export async function getHistory(thread: string, args: WorkspaceArgs): Promise<HistoryRow[]> {
  return withInspection(args, async (st) => {
    await st.requireThread(thread);
    if (!(await st.checkpointsHere(thread))) return ledgerHistory(st, thread);
    return (await st.checkpoints(thread)).map(historyRow);
  });
}
