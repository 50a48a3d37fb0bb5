import path from "node:path";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { EvalResult } from "../eval/run-task.js";
import { intOption, log, printJson } from "./common.js";
import { withStopSignal, type RunArgs } from "./run.js";
import { RUN_FLAG_SETTINGS, settingOptions, settingsFromFlags } from "./setting-flags.js";
import { declareCommand } from "./command-specs.js";

/** Every run setting `run` has a flag for, but the model (eval's --model also takes oracle and nothing). */
const EVAL_SETTINGS = RUN_FLAG_SETTINGS.filter((k) => k !== "model");

interface EvalArgs extends Pick<RunArgs, "approve" | "sandbox" | "allowNetwork" | "allow" | "maxCost" | "maxTokens" | "toolCallFormat" | "maxSteps"> {
  model?: string;
  baseline?: "plain";
  repeat?: number;
  concurrency?: number;
  json?: boolean;
  out?: string;
  resume?: boolean;
  task?: string[];
  retrieval?: "hybrid" | "lexical";
  vectors?: "chroma" | "off";
  killEvery?: number;
  seed?: number;
  format?: "suite" | "swe-bench";
}

function secondsOption(flag: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new CliError(`${flag} must be a number of seconds above 0, got "${v}"`, 2, "CONFIG_INVALID");
    return n;
  };
}

function choice<T extends string>(flag: string, values: readonly T[]) {
  return (v: string): T => {
    if (!values.includes(v as T)) throw new CliError(`${flag} must be ${values.join(" or ")}, got "${v}"`, 2, "CONFIG_INVALID");
    return v as T;
  };
}

/** Registers `ledgerloop eval`: parses, runs src/eval/, prints the table (or JSON). */
export function registerEval(program: Command): void {
  const cmd = declareCommand(program, "eval")
    .option(
      "--format <kind>",
      "suite (default), or swe-bench: SUITE is a SWE-bench-style task list; writes predictions.jsonl for the official harness",
      choice("--format", ["suite", "swe-bench"] as const),
    )
    .option(
      "-m, --model <spec>",
      "what `run --model` takes, or oracle (each task's oracle.json), nothing (a model that never calls a tool) or test-server[:SEED] (the oracle played over HTTP by a server that misbehaves like real models)",
    )
    .option(
      "--baseline <kind>",
      "also run each task with this baseline: plain (a plain LangGraph agent, same model, tools, sandbox and limits)",
      choice("--baseline", ["plain"] as const),
    )
    .option("--repeat <k>", "run each task k times", intOption("--repeat"))
    .option("--concurrency <n>", "tasks run at the same time", intOption("--concurrency"))
    .option("--out <dir>", "where results (one JSON per run), the runs' folders and report.md go (default: a new temp folder)")
    .option("--resume", "continue the eval in --out: runs that have a result are not run again")
    .option("--task <id...>", "only these tasks")
    .option(
      "--kill-every <seconds>",
      "SIGKILL each ledgerloop run's process at random moments about this far apart and resume it from its checkpoint; reports kills and whether effects were doubled or lost",
      secondsOption("--kill-every"),
    )
    .option("--seed <n>", "seeds the moments of --kill-every (default 1)", intOption("--seed"))
    .option("--json", "print the results and totals as one JSON object on stdout");
  // The run settings a task run takes, generated from their declarations as `run`'s are
  // (--max-steps overrides every task's own limit).
  settingOptions(cmd, EVAL_SETTINGS).action(async (suite: string, args: EvalArgs) => {
    const model = args.model ?? process.env.LEDGERLOOP_MODEL;
    if (!model) throw new CliError("no model given: pass --model <spec> (as `run --model`), --model oracle or --model nothing", 2, "CONFIG_INVALID");
    if (args.resume && !args.out) throw new CliError("--resume needs the --out folder of the eval to continue", 2, "CONFIG_INVALID");
    const settings = await settingsFromFlags(args as unknown as Record<string, unknown>, EVAL_SETTINGS);
    const [{ runEval }, { evalTable, progressLine, summarize }] = await Promise.all([import("../eval/eval.js"), import("../eval/report.js")]);
    if (args.seed !== undefined && !args.killEvery) throw new CliError("--seed only seeds --kill-every; pass --kill-every <seconds> too", 2, "CONFIG_INVALID");
    const progress = (r: EvalResult, done: number, total: number) => log(progressLine(r, done, total));
    const outcome = await withStopSignal((signal) =>
      runEval({
        suiteDir: suite,
        ...(args.format ? { format: args.format } : {}),
        model,
        ...(args.baseline ? { baseline: args.baseline } : {}),
        repeat: args.repeat,
        concurrency: args.concurrency,
        outDir: args.out,
        resume: args.resume,
        only: args.task,
        ...(args.killEvery ? { killEverySec: args.killEvery, seed: args.seed } : {}),
        settings,
        signal,
        onResult: progress,
      }),
    );
    const predictions = outcome.predictionFiles ?? {};
    if (args.json)
      printJson({
        outDir: outcome.outDir,
        report: outcome.reportFile,
        html: outcome.htmlFile,
        ...(outcome.predictionFiles ? { predictions } : {}),
        resumed: outcome.resumed,
        summary: summarize(outcome.results),
        results: outcome.results,
      });
    else {
      process.stdout.write(evalTable(outcome.results) + "\n");
      log(
        `report: ${outcome.reportFile} and ${path.basename(outcome.htmlFile)}${outcome.resumed ? ` (${outcome.resumed} result(s) from an earlier run of this eval)` : ""}`,
      );
      for (const [agent, file] of Object.entries(predictions)) log(`predictions (${agent}): ${file}`);
    }
  });
}
