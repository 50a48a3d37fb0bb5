import fs from "node:fs";
import path from "node:path";
import { ConfigError, errorMessage } from "../errors.js";
import { SubmittedSettings, checkSetup, refuseCredentials, type NewSubmission, type RunSource } from "./run-queue.js";
import { checkModelSpec, checkSource } from "./submit-check.js";
import { parseTasks } from "./submit-tasks.js";

// What `ledgerloop submit` queues, from its flags or a --tasks file: runs built and checked
// (submit-check.ts) before anything is written, so a batch is queued whole or not at all.

/** The flags a submission is built from (the CLI's, or a task entry's merged over them). */
export interface SubmitFlags {
  thread?: string;
  repo?: string;
  ref?: string;
  workspace?: string;
  model?: string;
  summaryModel?: string;
  maxSteps?: number;
  budget?: number;
  retrieval?: "hybrid" | "lexical";
  vectors?: "chroma" | "off";
  approve?: "ask" | "auto" | "deny";
  priority?: number;
  /** A command each worker runs in its fresh clone of --repo before driving the run. */
  setup?: string;
  /** false (`--no-check`): the workspace or repository is reachable only from the workers; not checked here. */
  check?: boolean;
}

/** The settings a run is submitted with, from the flags (and a task entry's own). */
function settingsOf(args: SubmitFlags, model: string, sandboxed: object) {
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
    throw new ConfigError(`invalid setting ${i.path.join(".")}: ${i.message}`);
  }
  return settings.data;
}

/**
 * One run from the flags: checked as far as this machine can (workspace, repository and ref, model,
 * scripted file), so a run that cannot start is refused here rather than by a worker later.
 * `checkRepo` is shared by a batch, so each repository and ref is asked once.
 */
export async function buildSubmission(
  task: string,
  args: SubmitFlags,
  sandboxed: object,
  o: { newThread: () => string; checkRepo?: (s: RunSource) => Promise<RunSource> },
): Promise<NewSubmission> {
  if (Boolean(args.repo) === Boolean(args.workspace))
    throw new ConfigError("give exactly one of --repo <git url or path> and --workspace <dir every worker can reach>");
  if (args.ref && !args.repo) throw new ConfigError("--ref goes with --repo");
  if (args.setup !== undefined && !args.repo)
    throw new ConfigError("--setup goes with --repo: a --workspace is used as it is, the files git ignores included, so there is nothing to set up again");
  const setup = args.setup !== undefined ? checkSetup(args.setup) : undefined;
  const model = args.model ?? process.env.LEDGERLOOP_MODEL;
  if (!model) throw new ConfigError("no model given: pass --model (the workers build it with their own environment) or set LEDGERLOOP_MODEL");
  const settings = settingsOf(args, checkModelSpec(model, args.model ? "--model" : "LEDGERLOOP_MODEL"), sandboxed);
  if (args.summaryModel) settings.summaryModel = checkModelSpec(args.summaryModel, "--summary-model");
  const given: RunSource = args.repo ? { kind: "repo", repo: args.repo, ...(args.ref ? { ref: args.ref } : {}) } : { kind: "workspace", path: args.workspace! };
  // Before any git call: a URL with a password must not reach a git error message.
  if (given.kind === "repo") refuseCredentials(given.repo);
  const checked = args.check === false ? given : given.kind === "repo" ? await (o.checkRepo ?? checkSource)(given) : await checkSource(given);
  // Added after the check: the checked (shared) answer is about the repository and ref only.
  const source: RunSource = checked.kind === "repo" && setup ? { ...checked, setup } : checked;
  return { thread: args.thread ?? o.newThread(), task, source, settings, ...(args.priority !== undefined ? { priority: args.priority } : {}) };
}

/** The runs a `--tasks` file asks for, each merged over the flags; every problem at once, naming its line. */
export async function batchFromFile(file: string, args: SubmitFlags, sandboxed: object, newThread: () => string): Promise<NewSubmission[]> {
  let text: string;
  try {
    text = fs.readFileSync(path.resolve(file), "utf8");
  } catch (err) {
    throw new ConfigError(`--tasks ${file}: ${errorMessage(err)}`);
  }
  const parsed = parseTasks(text);
  if (!parsed.length) throw new ConfigError(`--tasks ${file} has no tasks`);
  const repos = new Map<string, Promise<RunSource>>();
  const checkRepo = (s: RunSource) => {
    const key = JSON.stringify(s);
    if (!repos.has(key)) repos.set(key, checkSource(s));
    return repos.get(key)!;
  };
  const errors: string[] = [];
  const runs: NewSubmission[] = [];
  for (const p of parsed) {
    if ("error" in p) {
      errors.push(`${p.where}: ${p.error}`);
      continue;
    }
    const { task, ...own } = p.entry;
    // A task's own source replaces the flags' source whole, its setup command included (a --repo
    // flag and a task's workspace are not both meant).
    const base = own.repo || own.workspace ? { ...args, repo: undefined, ref: undefined, workspace: undefined, setup: undefined } : args;
    try {
      runs.push(await buildSubmission(task, { ...base, ...own }, sandboxed, { newThread, checkRepo }));
    } catch (err) {
      errors.push(`${p.where}: ${errorMessage(err)}`);
    }
  }
  const threads = new Map<string, string>();
  for (const p of parsed) {
    const t = "entry" in p ? p.entry.thread : undefined;
    if (t && threads.has(t)) errors.push(`${p.where}: thread "${t}" is also given on ${threads.get(t)}`);
    else if (t) threads.set(t, p.where);
  }
  if (errors.length) throw new ConfigError(`--tasks ${file}: nothing was queued; ${errors.length} task(s) to fix:\n  ${errors.join("\n  ")}`);
  return runs;
}
