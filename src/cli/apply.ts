import fs from "node:fs";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { Changes } from "../dry-run/dry-run.js";
import type { DryRunOutcome } from "../runs/dry-run.js";

// The dry-run module (and the diff library) load on use: `--help` needs commander only.
const dryRunModule = () => import("../dry-run/dry-run.js");
import { log, printJson } from "./common.js";
import { declareCommand } from "./command-specs.js";

/** Prints a dry run's outcome for a person: commands, diff, and how to apply it. */
export function printDryRun(d: DryRunOutcome, thread: string): void {
  log(`\ndry run: ${d.workspace} was not changed; the run worked in ${d.copy} (copied in ${d.copyMs} ms)`);
  log(`commands it ran (${d.commands.length}):`);
  for (const c of d.commands) log(`  [${c.status}${c.exitCode !== null ? ` ${c.exitCode}` : ""}] ${c.tool}: ${c.command}`);
  const n = d.changes.created.length + d.changes.modified.length + d.changes.deleted.length;
  log(
    n
      ? `changes it would apply (${d.changes.created.length} created, ${d.changes.modified.length} modified, ${d.changes.deleted.length} deleted):`
      : "no file changes to apply",
  );
  if (d.diff) process.stdout.write(d.diff);
  if (n) log(`apply with: ledgerloop apply ${thread} -w ${d.workspace}`);
}

/** Applies a dry run's changes to its real workspace (refusing, naming files, on a conflicting change). */
export async function handleApply(thread: string, args: { workspace?: string }): Promise<{ thread: string; workspace: string; applied: Changes }> {
  const { applyDryRun, loadDryRun } = await dryRunModule();
  const run = loadDryRun(thread);
  if (args.workspace && fs.realpathSync(args.workspace) !== run.workspace) {
    throw new CliError(`the dry run of ${thread} was made from ${run.workspace}, not ${fs.realpathSync(args.workspace)}`, 2, "CONFIG_INVALID");
  }
  return { thread, workspace: run.workspace, applied: applyDryRun(run) };
}

export function registerApply(program: Command): void {
  declareCommand(program, "apply")
    .option("-w, --workspace <dir>", "the real workspace (checked against the dry run's)")
    .option("--json", "one JSON object")
    .action(async (thread: string, opts: { workspace?: string; json?: boolean }) => {
      const r = await handleApply(thread, opts);
      if (opts.json) return printJson(r);
      const a = r.applied;
      log(`applied to ${r.workspace}: ${a.created.length} created, ${a.modified.length} modified, ${a.deleted.length} deleted`);
      for (const p of a.created) log(`  + ${p}`);
      for (const p of a.modified) log(`  ~ ${p}`);
      for (const p of a.deleted) log(`  - ${p}`);
    });
}
