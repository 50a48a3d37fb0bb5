import type { Command } from "commander";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { getHistory } from "../inspect/history.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";

export function registerHistory(program: Command): void {
  const cmd = workspaceOptions(
    program
      .command("history")
      .description("list a run's checkpoints (one per superstep), newest first")
      .argument("<thread>", "the run id")
      .option("--json", "one JSON object per line"),
  );
  stateOption(cmd).action(async (thread: string, opts: WorkspaceArgs) => {
    const rows = await getHistory(thread, opts);
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
