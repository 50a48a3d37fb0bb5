import type { Command } from "commander";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { listThreads } from "../inspect/threads.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

/**
 * Who holds a run. A lease past its expiry means the holder died or lost the database: a live
 * worker's reaper hands it over within a lease period, so one that stays expired means no live worker.
 */
export function heldBy(worker: string, expiresAt: string | null, now = Date.now()): string {
  const late = expiresAt ? Math.floor((now - Date.parse(expiresAt)) / 1000) : -1;
  return late >= 0 ? `held by ${worker} — lease expired ${late}s ago` : `held by ${worker}`;
}

export function registerThreads(program: Command): void {
  stateOption(workspaceOptions(declareCommand(program, "threads").option("--json", "one JSON object per line"))).action(async (opts: WorkspaceArgs) => {
    for (const t of await listThreads(opts)) {
      if (opts.json) printJson(t);
      else {
        const where =
          t.checkpointsIn === "external" ? (t.origin === "server" ? "  [checkpoints in the LangGraph server]" : "  [checkpoints outside this state db]") : "";
        const held = t.queue?.worker ? `  [${heldBy(t.queue.worker, t.queue.expiresAt)}]` : t.queue?.takeovers ? `  [taken over ${t.queue.takeovers}x]` : "";
        process.stdout.write(
          `${t.thread}  ${t.status.padEnd(17)} ${(t.origin ?? "-").padEnd(6)} ${String(t.events).padStart(5)} events  ${String(t.checkpoints).padStart(5)} checkpoints  ${(t.goal ?? "").slice(0, 60)}${where}${held}\n`,
        );
      }
    }
  });
}
