import type { Command } from "commander";
import { CliError } from "../errors.js";
import { intOption, log, printJson, stateOption } from "./common.js";
import { stateUrlOf } from "../ledger/open-state.js";
import { newThreadId } from "../runs/start.js";
import { sandboxOptions, sandboxSettings, type RunArgs } from "./run.js";

// `ledgerloop submit`: queues a run for the workers (`ledgerloop worker`) of a PostgreSQL state.

export interface SubmitArgs extends Pick<RunArgs, "thread" | "model" | "summaryModel" | "maxSteps" | "budget" | "sandbox" | "allowNetwork" | "allow" | "maxCost" | "maxTokens"> {
  state?: string;
  repo?: string;
  ref?: string;
  workspace?: string;
  approve?: "ask" | "auto" | "deny";
  retrieval?: "hybrid" | "lexical";
  vectors?: "chroma" | "off";
  priority?: number;
  json?: boolean;
}

export async function handleSubmit(task: string, args: SubmitArgs): Promise<{ thread: string; jobId: string }> {
  const url = stateUrlOf(args);
  if (!url) throw new CliError("submit needs the PostgreSQL state the workers use: --state postgres://… or LEDGERLOOP_STATE_URL", 2, "CONFIG_INVALID");
  if (Boolean(args.repo) === Boolean(args.workspace)) throw new CliError("give exactly one of --repo <git url or path> and --workspace <dir every worker can reach>", 2, "CONFIG_INVALID");
  if (args.ref && !args.repo) throw new CliError("--ref goes with --repo", 2, "CONFIG_INVALID");
  const model = args.model ?? process.env.LEDGERLOOP_MODEL;
  if (!model) throw new CliError("no model given: pass --model (the workers build it with their own environment) or set LEDGERLOOP_MODEL", 2, "CONFIG_INVALID");
  const [{ SubmittedSettings, startQueue, submitRun }, { openPgState }] = await Promise.all([import("../queue/run-queue.js"), import("../ledger/pg-db.js")]);
  const sandboxed = await sandboxSettings(args, { withoutApprove: true });
  const settings = SubmittedSettings.safeParse({
    model,
    ...(args.summaryModel ? { summaryModel: args.summaryModel } : {}),
    ...(args.maxSteps ? { maxSteps: args.maxSteps } : {}),
    ...(args.budget ? { budgetTokens: args.budget } : {}),
    ...(args.retrieval ? { retrieval: args.retrieval } : {}),
    ...(args.vectors ? { vectors: args.vectors } : {}),
    // Nobody is at a worker's terminal: a command needing approval pauses the run unless told otherwise.
    approve: args.approve ?? "deny",
    ...sandboxed,
  });
  if (!settings.success) {
    const i = settings.error.issues[0]!;
    throw new CliError(`invalid setting ${i.path.join(".")}: ${i.message}`, 2, "CONFIG_INVALID");
  }
  const source = args.repo ? { kind: "repo" as const, repo: args.repo, ...(args.ref ? { ref: args.ref } : {}) } : { kind: "workspace" as const, path: args.workspace! };
  const thread = args.thread ?? newThreadId();
  const state = await openPgState(url);
  try {
    const boss = await startQueue(url);
    try {
      const { jobId } = await submitRun(state.pool, boss, { thread, task, source, settings: settings.data }, { priority: args.priority });
      if (args.json) printJson({ thread, jobId, state: state.location });
      else log(`queued run ${thread} (job ${jobId}) in ${state.location}; follow it with \`ledgerloop threads --state …\``);
      return { thread, jobId };
    } finally {
      await boss.stop({ graceful: false, wait: true }).catch(() => {});
    }
  } finally {
    await state.close();
  }
}

export function registerSubmit(program: Command): void {
  const cmd = program
    .command("submit")
    .description("queue a run for the workers of a PostgreSQL state (see `ledgerloop worker`)")
    .argument("<task>", "what the agent should do")
    .option("--repo <git url or path>", "workers clone this repository for the run")
    .option("--ref <ref>", "branch, tag or commit of --repo (default: its HEAD); pinned to a commit when the run starts")
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
    .option("--json", "print the thread and job id as JSON");
  sandboxOptions(cmd);
  stateOption(cmd).action(async (task: string, opts: SubmitArgs) => {
    await handleSubmit(task, opts);
  });
}
