import type { Command } from "commander";
import { checkpointHistory } from "../ledger/checkpoints.js";
import { openExistingState, printJson, requireThread, workspaceOptions, type WorkspaceArgs } from "./common.js";

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
}

/** Every checkpoint of a thread, newest first. */
export async function handleHistory(thread: string, args: WorkspaceArgs): Promise<HistoryRow[]> {
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
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
          `${r.createdAt}  step ${String(r.step).padStart(4)}  ${r.checkpointId}  next: ${r.next.join(",") || "(end)"}  ${r.status ?? ""}\n`,
        );
      }
    }
  });
}
