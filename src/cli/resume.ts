import type { Command } from "commander";
import { CliError } from "../errors.js";
import { RunRegistry } from "../ledger/runs.js";
import { openStateDb } from "../ledger/state-db.js";
import { createRuntime, resolveWorkspace, stateLocation } from "../runtime.js";
import type { DriveResult } from "./drive.js";
import { driveRun } from "./drive.js";
import { log, workspaceOptions, type WorkspaceArgs } from "./common.js";
import { progressPrinter, reportResult, withStopSignal } from "./run.js";
import fs from "node:fs";

export interface ResumeArgs extends WorkspaceArgs {
  model?: string;
  quiet?: boolean;
}

/** Continues a run from its last checkpoint with the settings it was started with. */
export async function handleResume(thread: string, args: ResumeArgs): Promise<DriveResult> {
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  const { dbPath } = stateLocation(workspace, args.stateDir);
  if (!fs.existsSync(dbPath)) throw new CliError(`no ledgerloop state in ${workspace} (${dbPath} does not exist)`, 1, "NO_STATE");
  const probe = openStateDb(dbPath, { create: false });
  let saved;
  try {
    const runs = new RunRegistry(probe);
    saved = runs.get(thread);
    if (!saved || !runs.hasCheckpoints(thread)) {
      throw new CliError(`unknown thread "${thread}" in ${dbPath}; list runs with \`ledgerloop threads\``, 1, "UNKNOWN_THREAD");
    }
  } finally {
    probe.close();
  }
  const rt = await createRuntime(
    { ...saved.settings, workspace, stateDir: args.stateDir ?? saved.settings.stateDir, model: args.model ?? saved.settings.model },
    { progress: progressPrinter(args.quiet), recordRequestsFile: process.env.LEDGERLOOP_RECORD_REQUESTS, warn: (m) => log(`warning: ${m}`) },
  );
  try {
    if (!args.quiet && !args.json) log(`resuming ${thread} in ${rt.workspace} with ${rt.model.name}`);
    const result = await withStopSignal((signal) => driveRun(rt, thread, null, signal));
    reportResult(result, rt, args.json);
    return result;
  } finally {
    await rt.close();
  }
}

export function registerResume(program: Command): void {
  workspaceOptions(
    program
      .command("resume")
      .description("continue a run from its last checkpoint (after a crash, a kill or a stop)")
      .argument("<thread>", "the run id")
      .option("-m, --model <spec>", "use another model than the run was started with")
      .option("--json", "print one JSON object with the outcome on stdout")
      .option("-q, --quiet", "no progress lines"),
  ).action(async (thread: string, opts: ResumeArgs) => {
    const result = await handleResume(thread, opts);
    process.exitCode = result.status === "finished" ? 0 : 1;
  });
}
