import type { Command } from "commander";
import { isolationWarning } from "../sandbox/detect.js";
import { CliError } from "../errors.js";
import { assertNewThread, newThreadId, startThread } from "../runs/start.js";
import type { ProgressEvent, Runtime } from "../runtime.js";
import type { DriveResult } from "../runs/drive.js";
import { writeRunReport } from "../report/write-run-report.js";
import { cliCommand, log, printJson, reconnectMsOf, reconnectOption, stateOption, workspaceOptions, exitCodeForStatus } from "./common.js";
import { stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import { logLevelOption } from "./logs.js";
import type { RunSettingsInput } from "../settings.js";
import { RUN_FLAG_SETTINGS, SANDBOX_FLAG_SETTINGS, settingOptions, settingsFromFlags } from "./setting-flags.js";
import { declareCommand } from "./command-specs.js";

export interface RunArgs extends WorkspaceArgs {
  thread?: string;
  /** On a PostgreSQL state: how long a run that lost its database waits for it (default 60). */
  reconnectSeconds?: number;
  model?: string;
  summaryModel?: string;
  maxSteps?: number;
  toolCallFormat?: "native" | "text";
  budget?: number;
  retrieval?: "hybrid" | "lexical";
  vectors?: "chroma" | "off";
  embedder?: string;
  quiet?: boolean;
  approve?: "ask" | "auto" | "deny";
  sandbox?: "auto" | "bwrap" | "unshare" | "none";
  allowNetwork?: boolean;
  allow?: string[];
  /** Budget of the run's model calls (USD at the price table, tokens): past it the run pauses. */
  maxCost?: number;
  maxTokens?: number;
  /** Work on a throwaway copy; `ledgerloop apply <thread>` applies the result (cli/apply.ts). */
  dryRun?: boolean;
}

/** Run settings that come from the sandbox, approval and budget flags, checked by the settings' schema. */
export function sandboxSettings(args: object, opts: { approveFlag?: string; withoutApprove?: boolean } = {}) {
  const keys = opts.withoutApprove ? SANDBOX_FLAG_SETTINGS.filter((k) => k !== "approve") : SANDBOX_FLAG_SETTINGS;
  return settingsFromFlags(args as Record<string, unknown>, keys, { rename: opts.approveFlag ? { approve: opts.approveFlag } : {} });
}

/** Adds the sandbox, approval and budget flags shared by run, resume, submit and exec (generated from the settings). */
export function sandboxOptions(cmd: Command, opts: { approveFlag?: string } = {}): Command {
  return settingOptions(cmd, SANDBOX_FLAG_SETTINGS, { rename: opts.approveFlag ? { approve: opts.approveFlag } : {} });
}

/** Prints the loud warning for a sandbox that does not isolate. */
export function warnIfUnisolated(rt: Runtime): void {
  const w = isolationWarning(rt.sandbox.level, [...(rt.sandbox.reasons ?? [])]);
  if (w) log(w);
}

/** A new run id: sortable by time, unique enough to never collide on one machine. */
/** Prints one progress line per node event on stderr. */
export function progressPrinter(quiet = false): (e: ProgressEvent) => void {
  return (e) => {
    if (!quiet) log(`[step ${String(e.step).padStart(3)}] ${e.node.padEnd(9)} ${e.text}`);
  };
}

/**
 * How long a graceful stop may take before the process exits anyway. A hard exit is safe at any
 * instant (every ledger write and checkpoint is one SQLite transaction; a resume re-runs or marks
 * interrupted whatever was in flight), so a stop signal is always answered within about this.
 */
export const STOP_GRACE_MS = 1_500;

/**
 * Runs the rest of the process with SIGINT/SIGTERM turned into a graceful stop of the run. A second
 * signal, or a stop still unfinished after {@link STOP_GRACE_MS}, exits at once (status 130/143).
 */
export async function withStopSignal<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  const exitNow = (sig: NodeJS.Signals, why: string) => {
    log(`${why}: exiting now; the run is resumable with \`ledgerloop resume\``);
    process.exit(sig === "SIGINT" ? 130 : 143);
  };
  const stop = (sig: NodeJS.Signals) => {
    if (ac.signal.aborted) return exitNow(sig, "second stop signal");
    log("stopping: the run will be resumable with `ledgerloop resume`");
    ac.abort();
    // Armed past this function's end on purpose: writing the report or closing the runtime must
    // not hold the process either. Unref'd, so a stop that finishes in time exits normally.
    setTimeout(() => exitNow(sig, `stop took longer than ${STOP_GRACE_MS} ms`), STOP_GRACE_MS).unref();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    return await fn(ac.signal);
  } finally {
    // From here on a signal has its default effect: the process ends at once.
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}

/** Prints a run's outcome: one JSON object, or a human summary with the commands to inspect it. */
export async function reportResult(r: DriveResult, rt: Runtime, json?: boolean): Promise<void> {
  // The end-of-task report is written whenever a run stops; a failure to write it loses nothing else.
  const reportFile = await writeRunReport(rt, r.thread).catch(() => null);
  if (json) {
    printJson(r);
    return;
  }
  const ws = rt.workspace;
  const ll = cliCommand();
  log(`\nrun ${r.thread}: ${r.status} after ${r.steps} step(s)${r.error ? ` (${r.error})` : ""}`);
  if (r.pending) {
    log(`waiting for approval of: ${r.pending.command}\n  policy: ${r.pending.rule}: ${r.pending.reason}`);
    log(`answer with: ${ll} resume ${r.thread} -w ${rt.workspace} --approve   (or --reject)`);
  }
  log(`state: ${rt.stateLocation}`);
  if (reportFile) log(`report: ${reportFile}`);
  log(`inspect: ${ll} history ${r.thread} -w ${ws}`);
  log(`         ${ll} ledger ${r.thread} -w ${ws}`);
  if (r.status !== "finished") log(`resume:  ${ll} resume ${r.thread} -w ${ws}`);
}

/** Starts a new run on a workspace. */
export async function handleRun(task: string, args: RunArgs): Promise<{ result: DriveResult; runtime: Runtime }> {
  if (!task.trim()) throw new CliError("the task must not be empty", 2, "CONFIG_INVALID");
  // Every flag is checked before anything is written (a bad value is a one-line usage error).
  const flagged = await settingsFromFlags(args as unknown as Record<string, unknown>, RUN_FLAG_SETTINGS);
  const model = args.model ?? process.env.LEDGERLOOP_MODEL;
  if (!model) {
    throw new CliError(
      "no model given: pass --model openai:<name> (with OPENAI_API_KEY / OPENAI_BASE_URL) or --model scripted:<trajectory.json>, or set LEDGERLOOP_MODEL",
      2,
      "CONFIG_INVALID",
    );
  }
  // The tokenizer loads on a worker thread from here on (the runtime adopts it). Not for a model
  // spec that createRuntime would refuse. The embedded Chroma server is not started here: a new
  // run's first prompt searches without vectors, and the server starts once the files are indexed
  // (RuntimeOverrides.newRun), off the first prompt's path.
  const name = await modelNameOf(model);
  const tokens = name === null ? null : await prestartTokens(name);
  try {
    return await runWith(task, args, flagged, model);
  } finally {
    await tokens?.release();
  }
}

/** The model's name when createRuntime will accept its spec (it builds the model again and reports what is wrong), else null. */
async function modelNameOf(model: string): Promise<string | null> {
  const { createModel } = await import("../models/factory.js");
  try {
    return createModel(model).name;
  } catch {
    return null;
  }
}

async function prestartTokens(modelName: string): Promise<{ release(): Promise<void> }> {
  const [{ modelProfile }, { prestartTokenCounter }] = await Promise.all([import("../context/tokens.js"), import("../context/token-thread.js")]);
  return prestartTokenCounter(await modelProfile(modelName));
}

async function runWith(task: string, args: RunArgs, flagged: Partial<RunSettingsInput>, model: string): Promise<{ result: DriveResult; runtime: Runtime }> {
  // The runtime and the graph load on use: `--help` and the inspection commands never need them.
  const [{ createRuntime }, { askOnTerminal, driveRunReconnecting }] = await Promise.all([import("../runtime.js"), import("../runs/drive.js")]);
  const thread = args.thread ?? newThreadId();
  const dry = args.dryRun ? await (await import("../runs/dry-run.js")).startDryRun(args.workspace ?? process.cwd(), thread) : null;
  const rt = await createRuntime(
    {
      workspace: dry?.copy ?? args.workspace ?? process.cwd(),
      stateDir: args.stateDir,
      ...(stateUrlOf(args) ? { stateUrl: stateUrlOf(args) } : {}),
      ...flagged,
      model,
    },
    {
      progress: progressPrinter(args.quiet),
      recordRequestsFile: process.env.LEDGERLOOP_RECORD_REQUESTS,
      warn: (m) => log(`warning: ${m}`),
      lease: { command: "run", thread },
      newRun: true,
    },
  );
  try {
    startThread(rt, task, thread);
    await assertNewThread(rt, thread);
    if (!args.quiet && !args.json)
      log(
        `run ${thread} in ${rt.workspace} with ${rt.model.name}${rt.summaryModel ? ` (plan/summarize/reflect: ${rt.summaryModel.name})` : ""} (sandbox: ${rt.sandbox.level})`,
      );
    warnIfUnisolated(rt);
    const ask = rt.settings.approve === "ask" && process.stdin.isTTY && !args.json ? askOnTerminal : undefined;
    const result = await withStopSignal((signal) => driveRunReconnecting(rt, thread, task, { signal, ask, reconnectMs: reconnectMsOf(args), say: log }));
    if (dry) {
      const [{ finishDryRun }, { printDryRun }] = await Promise.all([import("../runs/dry-run.js"), import("./apply.js")]);
      const outcome = await finishDryRun(dry, rt);
      if (args.json) printJson({ ...result, dryRun: outcome });
      else {
        await reportResult(result, rt, false);
        printDryRun(outcome, thread);
      }
      return { result, runtime: rt };
    }
    await reportResult(result, rt, args.json);
    return { result, runtime: rt };
  } finally {
    await rt.close();
  }
}

export function registerRun(program: Command): void {
  workspaceOptions(
    declareCommand(program, "run")
      .option("-t, --thread <id>", "run id (default: generated)")
      .option("--json", "print one JSON object with the outcome on stdout")
      .option("-q, --quiet", "no progress lines")
      .option("--dry-run", "run on a throwaway copy of the workspace; print the diff and commands; `ledgerloop apply <thread>` applies it"),
  );
  const cmd = program.commands.at(-1)!;
  // Every run setting with a flag (settings-surface.ts), generated from its declaration.
  settingOptions(cmd, RUN_FLAG_SETTINGS, { short: { model: "-m" } });
  stateOption(cmd);
  reconnectOption(cmd);
  logLevelOption(cmd).action(async (task: string, opts: RunArgs) => {
    const { result } = await handleRun(task, opts);
    process.exitCode = exitCodeForStatus(result.status);
  });
}
