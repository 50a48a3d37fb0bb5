import fs from "node:fs";
import type { Runtime } from "../runtime.js";
import type { Changes, DryRun, commandsRun } from "../dry-run/dry-run.js";

// A dry run's life as a run operation: the copy it works in, and its outcome. The CLI's
// `run --dry-run` and openAgent's dryRun share it; `ledgerloop apply` applies the outcome.

// The dry-run module (and the diff library) load on use: `--help` needs commander only.
const dryRunModule = () => import("../dry-run/dry-run.js");

/** What `run --dry-run` adds to its outcome. */
export interface DryRunOutcome {
  workspace: string;
  copy: string;
  copyMs: number;
  changes: Changes;
  commands: ReturnType<typeof commandsRun>;
  diff: string;
}

/** Makes the throwaway copy a dry run of `thread` works in; returns its record (saved at the end). */
export async function startDryRun(workspace: string, thread: string): Promise<DryRun> {
  const { makeDryCopy, saveDryRun } = await dryRunModule();
  const real = fs.realpathSync(workspace);
  const { copy, copyMs, manifest } = makeDryCopy(real, thread);
  const run: DryRun = { thread, workspace: real, copy, createdAt: new Date().toISOString(), copyMs, manifest };
  saveDryRun(run);
  return run;
}

/** The dry run's outcome: the diff it would apply and the commands it ran (from its ledger). */
export async function finishDryRun(run: DryRun, rt: Runtime): Promise<DryRunOutcome> {
  const { commandsRun, dryRunChanges, dryRunDiff } = await dryRunModule();
  const changes = dryRunChanges(run);
  return {
    workspace: run.workspace,
    copy: run.copy,
    copyMs: Math.round(run.copyMs),
    changes,
    commands: commandsRun(await rt.ledger.list(run.thread)),
    diff: dryRunDiff(run, changes),
  };
}
