import type { Command } from "commander";
import type { RunSummary } from "../ledger/run-status.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import { openExistingState, openPgInspection, stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";

/** One run as `threads` lists it: the same rows, status and order as the viewer. */
export type ThreadRow = Omit<RunSummary, "steps">;

/** Every run recorded in a workspace's state database, whatever started it, newest first. */
export async function handleThreads(args: WorkspaceArgs): Promise<ThreadRow[]> {
  const url = stateUrlOf(args);
  if (url) {
    const [{ listRunsPg }, pg] = await Promise.all([import("../ledger/pg-run-status.js"), openPgInspection(url)]);
    try {
      return (await listRunsPg(pg.pool)).map(({ steps: _steps, ...row }) => row);
    } finally {
      await pg.close();
    }
  }
  const { listRuns } = await import("../ledger/run-status.js");
  const st = await openExistingState(args);
  try {
    return listRuns(st.db).map(({ steps: _steps, ...row }) => row);
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

export function registerThreads(program: Command): void {
  stateOption(
    workspaceOptions(
      program.command("threads").description("list the runs recorded in a workspace (CLI, scripts, LangGraph server), newest first").option("--json", "one JSON object per line"),
    ),
  ).action(async (opts: WorkspaceArgs) => {
    for (const t of await handleThreads(opts)) {
      if (opts.json) printJson(t);
      else {
        const where = t.checkpointsIn === "external" ? (t.origin === "server" ? "  [checkpoints in the LangGraph server]" : "  [checkpoints outside this state db]") : "";
        const held = t.queue?.worker ? `  [held by ${t.queue.worker}]` : t.queue?.takeovers ? `  [taken over ${t.queue.takeovers}x]` : "";
        process.stdout.write(
          `${t.thread}  ${t.status.padEnd(17)} ${(t.origin ?? "-").padEnd(6)} ${String(t.events).padStart(5)} events  ${String(t.checkpoints).padStart(5)} checkpoints  ${(t.goal ?? "").slice(0, 60)}${where}${held}\n`,
        );
      }
    }
  });
}
