import type { Command } from "commander";
import { CliError } from "../errors.js";
import { log, reconnectMsOf, reconnectOption, stateOption, workspaceOptions, exitCodeForStatus } from "./common.js";
import { stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import { savedRun } from "../runs/thread-runtime.js";
import type { DriveResult } from "../runs/drive.js";
import { progressPrinter, reportResult, sandboxOptions, sandboxSettings, warnIfUnisolated, withStopSignal, type RunArgs } from "./run.js";
import { logLevelOption } from "./logs.js";
import { declareCommand } from "./command-specs.js";

export interface ResumeArgs
  extends WorkspaceArgs, Pick<RunArgs, "sandbox" | "allowNetwork" | "allow" | "maxCost" | "maxTokens" | "summaryModel" | "reconnectSeconds"> {
  model?: string;
  quiet?: boolean;
  /** Answer the approval the run is paused on. */
  approve?: boolean;
  reject?: boolean;
  approveMode?: "ask" | "auto" | "deny";
  /** Go on under the config file as it is now, though it changed since the run started. */
  acceptConfig?: boolean;
}

/** Continues a run from its last checkpoint with the settings it was started with. */
export async function handleResume(thread: string, args: ResumeArgs): Promise<DriveResult> {
  if (args.approve === true && args.reject) throw new CliError("give either --approve or --reject, not both", 2, "CONFIG_INVALID");
  const { workspace, settings } = await savedRun(thread, args, { postgres: true });
  if (!settings) {
    // Checkpoints without a registered run (made through the library, not the CLI): no settings to resume with.
    throw new CliError(
      `unknown thread "${thread}" in ${workspace}: it has checkpoints but no recorded run settings; list runs with \`ledgerloop threads\``,
      1,
      "UNKNOWN_THREAD",
    );
  }
  const [{ createRuntime }, { askOnTerminal, driveRunReconnecting, pendingApproval }] = await Promise.all([
    import("../runtime.js"),
    import("../runs/drive.js"),
  ]);
  const flagged = await sandboxSettings(args, { approveFlag: "--approve-mode" });
  const rt = await createRuntime(
    {
      ...settings,
      workspace,
      stateDir: args.stateDir,
      // The registry never stores where it is: a run read from PostgreSQL goes on there.
      ...(stateUrlOf(args) ? { stateUrl: stateUrlOf(args) } : {}),
      model: args.model ?? settings.model,
      ...(args.summaryModel ? { summaryModel: args.summaryModel } : {}),
      ...flagged,
    },
    {
      progress: progressPrinter(args.quiet),
      recordRequestsFile: process.env.LEDGERLOOP_RECORD_REQUESTS,
      warn: (m) => log(`warning: ${m}`),
      lease: { command: "resume", thread },
    },
  );
  try {
    // A run of the queue is the workers' to drive (or to hand back first).
    await rt.state.refuseIfQueued(thread, "resume");
    // Before anything runs: a run never obeys a config it was not started with unless told to.
    const [{ CONFIG_FILE }, { acceptThreadConfig, checkThreadConfig }] = await Promise.all([import("../config.js"), import("../ledger/governing.js")]);
    if (args.acceptConfig) await acceptThreadConfig(rt.ledger, thread, rt.configSha);
    else await checkThreadConfig(rt.ledger, thread, rt.configSha, CONFIG_FILE);
    const pending = await pendingApproval(rt, thread);
    const answer = args.approve === true ? "approve" : args.reject ? "reject" : undefined;
    if (answer && !pending) throw new CliError(`run ${thread} is not waiting for an approval`, 1, "NOTHING_PENDING");
    if (!args.quiet && !args.json) log(`resuming ${thread} in ${rt.workspace} with ${rt.model.name} (sandbox: ${rt.sandbox.level})`);
    warnIfUnisolated(rt);
    const ask = rt.settings.approve === "ask" && process.stdin.isTTY && !args.json ? askOnTerminal : undefined;
    const result = await withStopSignal((signal) =>
      driveRunReconnecting(rt, thread, null, { signal, ask, resume: answer, reconnectMs: reconnectMsOf(args), say: log }),
    );
    await reportResult(result, rt, args.json);
    return result;
  } finally {
    await rt.close();
  }
}

export function registerResume(program: Command): void {
  const cmd = workspaceOptions(
    declareCommand(program, "resume")
      .option("-m, --model <spec>", "use another model than the run was started with")
      .option("--summary-model <spec>", "use another model for plan, summarize and reflect than the run was started with")
      .option("--approve", "approve the command the run is paused on")
      .option("--reject", "refuse the command the run is paused on (the model is told)")
      .option("--accept-config", "go on under ledgerloop.config.json as it is now, though it changed since the run started")
      .option("--json", "print one JSON object with the outcome on stdout")
      .option("-q, --quiet", "no progress lines"),
  );
  // The sandbox flags of `run`; here --approve answers the pending approval, --approve-mode sets the mode.
  sandboxOptions(cmd, { approveFlag: "--approve-mode" });
  stateOption(cmd);
  reconnectOption(cmd);
  logLevelOption(cmd);
  cmd.action(async (thread: string, opts: ResumeArgs) => {
    const result = await handleResume(thread, opts);
    process.exitCode = exitCodeForStatus(result.status);
  });
}
