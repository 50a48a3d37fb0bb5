import type { Command } from "commander";
import { getReport } from "../inspect/report.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { printJson, stateOption, workspaceOptions } from "./common.js";

export function registerReport(program: Command): void {
  workspaceOptions(
    program
      .command("report")
      .description("the end-of-task report of a run: summary, plan, decisions, files changed, tests, problems, lessons, cost")
      .argument("<thread>", "the run id")
      .option("--json", "one JSON object"),
  );
  stateOption(program.commands.at(-1)!).action(async (thread: string, opts: WorkspaceArgs) => {
    const r = await getReport(thread, opts);
    if (opts.json) return printJson(r);
    const { reportMarkdown } = await import("../report/report.js");
    process.stdout.write(reportMarkdown(r) + "\n");
  });
}
