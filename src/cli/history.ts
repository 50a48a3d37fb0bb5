import type { Command } from "commander";
import { checkpointHistory } from "../ledger/checkpoints.js";
import type { LedgerEvent } from "../events.js";
import { noteCheckpointHome, openExistingState, printJson, requireThread, workspaceOptions, type OpenedState, type WorkspaceArgs } from "./common.js";

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
async function ledgerHistory(st: OpenedState, thread: string): Promise<HistoryRow[]> {
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

/** Every checkpoint of a thread, newest first. */
export async function handleHistory(thread: string, args: WorkspaceArgs): Promise<HistoryRow[]> {
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    if (!st.hasCheckpoints || !st.runs.hasCheckpoints(thread)) {
      noteCheckpointHome(st, thread);
      return await ledgerHistory(st, thread);
    }
    return checkpointHistory(st.db, thread).map((c) => {
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
    });
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

export function registerHistory(program: Command): void {
  workspaceOptions(
    program
      .command("history")
      .description("list a run's checkpoints (one per superstep), newest first")
      .argument("<thread>", "the run id")
      .option("--json", "one JSON object per line"),
  ).action(async (thread: string, opts: WorkspaceArgs) => {
    const rows = await handleHistory(thread, opts);
    for (const r of rows) {
      if (opts.json) printJson(r);
      else {
        process.stdout.write(
          `${r.createdAt}  step ${String(r.step).padStart(4)}  ${r.checkpointId}  next: ${r.next.join(",") || "(end)"}  ${r.status ?? ""}${r.view ? "  (from the ledger)" : ""}\n`,
        );
      }
    }
  });
}
