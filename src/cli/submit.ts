import type { Command } from "commander";
import { CliError, ConfigError } from "../errors.js";
import type { NewSubmission } from "../queue/run-queue.js";
import { intOption, log, printJson, stateOption } from "./common.js";
import { stateUrlOf } from "../ledger/open-state.js";
import { newThreadId } from "../runs/start.js";
import { sandboxOptions, sandboxSettings, type RunArgs } from "./run.js";
import { declareCommand } from "./command-specs.js";

// `ledgerloop submit`: queues a run for the workers (`ledgerloop worker`) of a PostgreSQL state.

export interface SubmitArgs extends Pick<
  RunArgs,
  "thread" | "model" | "summaryModel" | "maxSteps" | "budget" | "sandbox" | "allowNetwork" | "allow" | "maxCost" | "maxTokens"
> {
  state?: string;
  repo?: string;
  ref?: string;
  workspace?: string;
  approve?: "ask" | "auto" | "deny";
  retrieval?: "hybrid" | "lexical";
  vectors?: "chroma" | "off";
  priority?: number;
  setup?: string;
  tasks?: string;
  check?: boolean;
  json?: boolean;
}

export async function handleSubmit(task: string | undefined, args: SubmitArgs): Promise<Array<{ thread: string; jobId: string }>> {
  const url = stateUrlOf(args);
  if (!url) throw new CliError("submit needs the PostgreSQL state the workers use: --state postgres://… or LEDGERLOOP_STATE_URL", 2, "CONFIG_INVALID");
  if (Boolean(task) === Boolean(args.tasks)) throw new CliError("give a task, or --tasks FILE for many, not both", 2, "CONFIG_INVALID");
  if (args.tasks && args.thread) throw new CliError('--thread names one run: give each task its own "thread" in the --tasks file', 2, "CONFIG_INVALID");
  const sandboxed = await sandboxSettings(args, { withoutApprove: true });
  const { batchFromFile, buildSubmission } = await import("../queue/submit-build.js");
  let runs: NewSubmission[];
  try {
    runs = args.tasks
      ? await batchFromFile(args.tasks, args, sandboxed, newThreadId)
      : [await buildSubmission(task!, args, sandboxed, { newThread: newThreadId })];
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, 2, "CONFIG_INVALID");
    throw err;
  }
  const [{ submitRuns }, { withQueueState }] = await Promise.all([import("../queue/run-queue.js"), import("../queue/queue-state.js")]);
  return withQueueState(url, async ({ state, boss }) => {
    const queued = await submitRuns(state.pool, boss, runs);
    for (const q of queued) {
      if (args.json) printJson({ thread: q.thread, jobId: q.jobId, state: state.location });
      else log(`queued run ${q.thread} (job ${q.jobId}) in ${state.location}; follow it with \`ledgerloop threads --state …\``);
    }
    return queued;
  });
}

export function registerSubmit(program: Command): void {
  const cmd = declareCommand(program, "submit")
    .option(
      "--tasks <file>",
      "queue many runs at once: JSON lines or a JSON array of {task, thread?, repo?, ref?, workspace?, model?, summaryModel?, maxSteps?, budget?, priority?, setup?}; all or none are queued",
    )
    .option("--repo <git url or path>", "workers clone this repository for the run")
    .option("--ref <ref>", "branch, tag or commit of --repo (default: its HEAD); pinned to a commit when the run starts")
    .option(
      "--setup <command>",
      'with --repo: a command each worker runs in its fresh clone (first start and every takeover) to re-create what git ignores, e.g. "npm ci"',
    )
    .option("--workspace <dir>", "a directory every worker can read and write (a shared volume), used as it is")
    .option("-t, --thread <id>", "run id (default: generated)")
    .option("-m, --model <spec>", "openai:<name> or scripted:<trajectory.json> (default: $LEDGERLOOP_MODEL)")
    .option("--summary-model <spec>", "a cheaper model for plan, summarize and reflect")
    .option("--max-steps <n>", "stop after this many decide steps", intOption("--max-steps"))
    .option("--budget <tokens>", "prompt budget in tokens", intOption("--budget"))
    .option("--retrieval <mode>", "hybrid (n-gram index + Chroma) or lexical (plain file scan)", (v: string) => {
      if (v !== "hybrid" && v !== "lexical") throw new CliError(`--retrieval must be hybrid or lexical, got "${v}"`, 2, "CONFIG_INVALID");
      return v;
    })
    .option("--vectors <mode>", "chroma or off (n-gram index only)", (v: string) => {
      if (v !== "chroma" && v !== "off") throw new CliError(`--vectors must be chroma or off, got "${v}"`, 2, "CONFIG_INVALID");
      return v;
    })
    .option("--priority <n>", "higher runs are taken first (default 0; negative allowed)", (v: string) => {
      if (!/^-?\d+$/.test(v)) throw new CliError(`--priority must be a whole number, got "${v}"`, 2, "CONFIG_INVALID");
      return Number(v);
    })
    .option("--no-check", "do not check the workspace, repository and ref from this machine (only the workers reach them)")
    .option("--json", "print the thread and job id as JSON");
  sandboxOptions(cmd);
  stateOption(cmd).action(async (task: string | undefined, opts: SubmitArgs) => {
    await handleSubmit(task, opts);
  });
}
