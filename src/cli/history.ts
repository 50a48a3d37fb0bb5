import path from "node:path";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { getHistory, type HistoryRow } from "../inspect/history.js";
import { cliCommand, intOption, printJson, stateOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

interface HistoryArgs extends WorkspaceArgs {
  json?: boolean;
  step?: number;
}

/** What the graph does next from a checkpoint, as a person reads it. */
const nextOf = (r: HistoryRow) => (r.next.length ? `before ${r.next.join(",")}` : "(end)");

/** "the checkpoint before agent step N acted": the one whose next node is act, at that step. */
function beforeStep(rows: HistoryRow[], step: number): HistoryRow {
  const hit = rows.find((r) => r.agentStep === step && r.next.includes("act"));
  if (hit) return hit;
  const steps = rows.map((r) => r.agentStep).filter((s): s is number => s !== null && s > 0);
  const range = steps.length ? `its agent steps are 1..${Math.max(...steps)}` : "it has no agent step yet";
  throw new CliError(`no checkpoint before agent step ${step} acted in this run: ${range}`, 1, "NOT_FOUND");
}

export function registerHistory(program: Command): void {
  const cmd = workspaceOptions(
    declareCommand(program, "history")
      .option("--step <n>", "only the checkpoint before agent step <n> acted, with the commands to rewind or fork there", intOption("--step"))
      .option("--json", "one JSON object per line"),
  );
  stateOption(cmd).action(async (thread: string, opts: HistoryArgs) => {
    const all = await getHistory(thread, opts);
    const rows = opts.step === undefined ? all : [beforeStep(all, opts.step)];
    for (const r of rows) {
      if (opts.json) printJson(r);
      else {
        const agent = r.agentStep === null ? "     -" : `step ${String(r.agentStep).padStart(3)}`;
        const superstep = r.step >= 0 ? `  (superstep ${r.step})` : "";
        process.stdout.write(
          `${r.createdAt}  ${agent}  ${nextOf(r).padEnd(16)}  ${r.checkpointId}  ${r.status ?? ""}${superstep}${r.view ? "  (from the ledger)" : ""}\n`,
        );
      }
    }
    if (opts.step !== undefined && !opts.json) {
      const ll = cliCommand();
      const ws = ` -w ${path.resolve(opts.workspace ?? process.cwd())}`;
      const id = rows[0]!.checkpointId;
      process.stdout.write(`rewind there: ${ll} rewind ${thread} --to ${id}${ws}\nfork there:   ${ll} fork ${thread} --at ${id}${ws}\n`);
    }
  });
}
