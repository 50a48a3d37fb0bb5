import type { Command } from "commander";
import { createCodingAgent } from "../../graphs/coding-agent.js";
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
  const st = openExistingState(args);
  try {
    requireThread(st, thread);
    const agent = createCodingAgent({
      resolve: async () => {
        throw new Error("history runs no node");
      },
      checkpointer: st.checkpointer,
    });
    const rows: HistoryRow[] = [];
    for await (const snap of agent.getStateHistory({ configurable: { thread_id: thread } })) {
      const v = snap.values as { status?: string; ledgerHead?: string | null; step?: number };
      rows.push({
        checkpointId: String(snap.config.configurable?.checkpoint_id),
        parentCheckpointId: (snap.parentConfig?.configurable?.checkpoint_id as string | undefined) ?? null,
        step: (snap.metadata?.step as number | undefined) ?? -1,
        next: [...snap.next],
        createdAt: snap.createdAt ?? "",
        source: String(snap.metadata?.source ?? ""),
        status: v.status ?? null,
        ledgerHead: v.ledgerHead ?? null,
        agentStep: v.step ?? null,
      });
    }
    return rows;
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
          `${r.createdAt}  step ${String(r.step).padStart(4)}  ${r.checkpointId}  next: ${r.next.join(",") || "(end)"}  ${r.status ?? ""}\n`,
        );
      }
    }
  });
}
