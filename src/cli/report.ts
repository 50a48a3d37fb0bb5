import type { Command } from "commander";
import { getReport } from "../inspect/report.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

export function registerReport(program: Command): void {
  workspaceOptions(declareCommand(program, "report").option("--json", "one JSON object"));
  stateOption(program.commands.at(-1)!).action(async (thread: string, opts: WorkspaceArgs) => {
    const r = await getReport(thread, opts);
    if (opts.json) return printJson(r);
    const { reportMarkdown } = await import("../report/report.js");
    process.stdout.write(reportMarkdown(r) + "\n");
  });
}
