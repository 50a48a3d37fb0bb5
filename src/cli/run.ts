import type { Command } from "commander";
import { isolationWarning } from "../sandbox/detect.js";
import { CliError } from "../errors.js";
import { assertNewThread, newThreadId, startThread } from "../runs/start.js";
import type { ProgressEvent, Runtime } from "../runtime.js";
import type { DriveResult } from "../runs/drive.js";
import { writeRunReport } from "../report/write-run-report.js";
import { cliCommand, intOption, log, printJson, reconnectMsOf, reconnectOption, stateOption, workspaceOptions, exitCodeForStatus } from "./common.js";
import { stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import { logLevelOption } from "./logs.js";

export interface RunArgs extends WorkspaceArgs {
  thread?: string;
  /** On a PostgreSQL state: how long a run that lost its database waits for it (default 60). */
  reconnectSeconds?: number;
  model?: string;
  summaryModel?: string;
  maxSteps?: number;
  toolCallFormat?: "native" | "text";
  budget?: number;
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

/** Run settings that come from sandbox flags. */
export function sandboxSettings(args: Pick<RunArgs, "approve" | "sandbox" | "allowNetwork" | "allow" | "maxCost" | "maxTokens">) {
  return {
    ...(args.maxCost !== undefined ? { maxCostUsd: args.maxCost } : {}),
    ...(args.maxTokens !== undefined ? { maxTokens: args.maxTokens } : {}),
    ...(args.approve ? { approve: args.approve } : {}),
    ...(args.sandbox ? { sandbox: args.sandbox } : {}),
    ...(args.allowNetwork ? { allowNetwork: true } : {}),
    ...(args.allow?.length ? { allow: args.allow } : {}),
  };
}

/** Adds the sandbox and approval flags shared by run and resume. */
export function sandboxOptions(cmd: Command, opts: { approveFlag?: string } = {}): Command {
  const flag = opts.approveFlag ?? "--approve";
  return cmd
    .option(`${flag} <mode>`, "commands the policy wants approved: ask (pause and ask), auto (approve), deny (refuse)", (v: string) => {
      if (!["ask", "auto", "deny"].includes(v)) throw new CliError(`${flag} must be ask, auto or deny, got "${v}"`, 2, "CONFIG_INVALID");
      return v;
    })
    .option("--sandbox <level>", "isolation: auto (strongest available), bwrap, unshare or none", (v: string) => {
      if (!["auto", "bwrap", "unshare", "none"].includes(v)) throw new CliError(`--sandbox must be auto, bwrap, unshare or none, got "${v}"`, 2, "CONFIG_INVALID");
      return v;
    })
    .option("--allow-network", "let commands use the network (network tools and installs are then allowed)")
    .option("--allow <command...>", "also allow these commands (a program, or a program and leading arguments)")
    .option("--max-cost <usd>", "pause the run (budget_exhausted, exit 3) once its model calls cost this many USD; resume with a higher one", (v: string) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0) throw new CliError(`--max-cost must be a positive number of USD, got "${v}"`, 2, "CONFIG_INVALID");
      return n;
    })
    .option("--max-tokens <n>", "pause the run (budget_exhausted, exit 3) once its model calls used this many tokens; resume with a higher one", intOption("--max-tokens"));
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
  const model = args.model ?? process.env.LEDGERLOOP_MODEL;
  if (!model) {
    throw new CliError(
      "no model given: pass --model openai:<name> (with OPENAI_API_KEY / OPENAI_BASE_URL) or --model scripted:<trajectory.json>, or set LEDGERLOOP_MODEL",
      2,
      "CONFIG_INVALID",
    );
  }
  // The runtime and the graph load on use: `--help` and the inspection commands never need them.
  const [{ createRuntime }, { askOnTerminal, driveRunReconnecting }] = await Promise.all([import("../runtime.js"), import("../runs/drive.js")]);
  const thread = args.thread ?? newThreadId();
  const dry = args.dryRun ? await (await import("../runs/dry-run.js")).startDryRun(args.workspace ?? process.cwd(), thread) : null;
  const rt = await createRuntime(
    {
      workspace: dry?.copy ?? args.workspace ?? process.cwd(),
      stateDir: args.stateDir,
      ...(stateUrlOf(args) ? { stateUrl: stateUrlOf(args) } : {}),
      model,
      ...(args.summaryModel ? { summaryModel: args.summaryModel } : {}),
      ...(args.maxSteps ? { maxSteps: args.maxSteps } : {}),
      ...(args.toolCallFormat ? { toolCallFormat: args.toolCallFormat } : {}),
      ...(args.budget ? { budgetTokens: args.budget } : {}),
      ...sandboxSettings(args),
    },
    {
      progress: progressPrinter(args.quiet),
      recordRequestsFile: process.env.LEDGERLOOP_RECORD_REQUESTS,
      warn: (m) => log(`warning: ${m}`),
      lease: { command: "run", thread },
    },
  );
  try {
    startThread(rt, task, thread);
    await assertNewThread(rt, thread);
    if (!args.quiet && !args.json) log(`run ${thread} in ${rt.workspace} with ${rt.model.name}${rt.summaryModel ? ` (plan/summarize/reflect: ${rt.summaryModel.name})` : ""} (sandbox: ${rt.sandbox.level})`);
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
    program
      .command("run")
      .description("start a new run of the agent on a task")
      .argument("<task>", "what the agent should do")
      .option("-t, --thread <id>", "run id (default: generated)")
      .option("-m, --model <spec>", "openai:<name> or scripted:<trajectory.json> (default: $LEDGERLOOP_MODEL)")
      .option("--summary-model <spec>", "a cheaper model for plan, summarize and reflect; decide stays on --model (also `summaryModel` in ledgerloop.config.json)")
      .option("--max-steps <n>", "stop after this many decide steps", intOption("--max-steps"))
      .option("--tool-call-format <format>", "native (the provider's tool calling) or text (tools in the prompt, calls parsed from the answer: for models served without tool calling)", (v: string) => {
        if (v !== "native" && v !== "text") throw new CliError(`--tool-call-format must be native or text, got "${v}"`, 2, "CONFIG_INVALID");
        return v;
      })
      .option("--budget <tokens>", "prompt budget in tokens, at least 1000 (default: the model's window minus its reserved output)", intOption("--budget"))
      .option("--json", "print one JSON object with the outcome on stdout")
      .option("-q, --quiet", "no progress lines")
      .option("--dry-run", "run on a throwaway copy of the workspace; print the diff and commands; `ledgerloop apply <thread>` applies it"),
  );
  stateOption(program.commands.at(-1)!);
  reconnectOption(program.commands.at(-1)!);
  logLevelOption(sandboxOptions(program.commands.at(-1)!)).action(async (task: string, opts: RunArgs) => {
    const { result } = await handleRun(task, opts);
    process.exitCode = exitCodeForStatus(result.status);
  });
}
