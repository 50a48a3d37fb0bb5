import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { CliError } from "../errors.js";
import { isRemote, type RepoSource } from "./checkout.js";
import { ignoresNodeModules } from "./toolchain.js";

// The task format of `ledgerloop eval`: a suite is a folder of task folders, each with task.json,
// workspace/ (what the agent starts from) or a git repository and commit named in task.json
// (`repo`, `commit`), hidden/ (tests copied in only after the run ends) and, for the oracle,
// oracle.json (a scripted trajectory that solves it).

/** A suite or task that cannot be run as written. */
export class EvalSuiteError extends CliError {
  constructor(message: string) {
    super(message, 2, "EVAL_SUITE_INVALID");
  }
}

export const TaskLimits = z
  .object({
    maxSteps: z.number().int().positive().max(10_000).default(60).describe("Decide steps (model calls) the agent gets."),
    timeoutSec: z.number().positive().max(24 * 3600).default(900).describe("Wall time of the agent's run; past it the run is stopped."),
    maxCostUsd: z.number().positive().optional().describe("The run pauses (budget_exhausted) once its model calls cost this much."),
  })
  .strict();
export type TaskLimits = z.infer<typeof TaskLimits>;

export const TaskSpec = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,80}$/, "lower-case letters, digits, '.', '_' and '-' (it names files)"),
    goal: z.string().min(1).describe("What the agent is told to do."),
    language: z.enum(["javascript", "typescript", "python", "other"]),
    toolchain: z
      .array(z.string().regex(/^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/, "an npm package name (typescript, @types/node)"))
      .default([])
      .describe("npm packages the task needs offline (typescript): copied from where they are installed into the workspace's node_modules."),
    setup: z.string().min(1).optional().describe("A command run in the fresh workspace (sandboxed) before the agent starts."),
    hiddenTest: z.string().min(1).describe("The command that decides `solved` (exit 0), run after hidden/ is copied in."),
    hiddenTestTimeoutSec: z.number().positive().max(3600).default(120),
    limits: TaskLimits.default(() => TaskLimits.parse({})),
    repo: z.string().min(1).optional().describe("Instead of workspace/: a git repository (URL, or a path relative to the task folder) ..."),
    commit: z
      .string()
      .regex(/^[0-9a-f]{7,40}$/i, "a commit id (7 to 40 hex digits): a branch name would not pin the task")
      .optional()
      .describe("... and the commit of it the agent starts from."),
  })
  .strict()
  .refine((t) => (t.repo === undefined) === (t.commit === undefined), { message: "repo and commit go together (the repository and the commit the task starts from)", path: ["commit"] });
export type TaskSpec = z.infer<typeof TaskSpec>;

/** A task as loaded: its spec and where its parts are. */
export interface EvalTask extends Omit<TaskSpec, "hiddenTest" | "repo" | "commit"> {
  /** Null for tasks scored elsewhere (SWE-bench instances: the official harness). */
  hiddenTest: string | null;
  dir: string;
  /** The folder the workspace is copied from, or null when it is a commit of a repository. */
  workspaceDir: string | null;
  source: RepoSource | null;
  hiddenDir: string | null;
  /** The task's own oracle trajectory, when it has one. */
  oracleFile: string | null;
}

/** Reads and validates one task folder; the error names the file and the field. */
export function loadTask(dir: string): EvalTask {
  const file = path.join(dir, "task.json");
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : (err as Error).message;
    throw new EvalSuiteError(`task ${file}: cannot read it (${why})`);
  }
  const parsed = TaskSpec.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new EvalSuiteError(`task ${file}: ${i.path.join(".") || "(root)"}: ${i.message}`);
  }
  const spec = parsed.data;
  if (spec.id !== path.basename(dir)) throw new EvalSuiteError(`task ${file}: id "${spec.id}" must match its folder name "${path.basename(dir)}"`);
  const workspaceDir = path.join(dir, "workspace");
  const hiddenDir = path.join(dir, "hidden");
  const hasWorkspace = fs.statSync(workspaceDir, { throwIfNoEntry: false })?.isDirectory() ?? false;
  if (spec.repo && hasWorkspace) throw new EvalSuiteError(`task ${dir}: give either a workspace/ folder or repo and commit in task.json, not both`);
  if (!spec.repo && !hasWorkspace) throw new EvalSuiteError(`task ${dir}: the workspace/ folder is missing (or name a git repository and commit in task.json: "repo", "commit")`);
  if (!fs.statSync(hiddenDir, { throwIfNoEntry: false })?.isDirectory()) throw new EvalSuiteError(`task ${dir}: the hidden/ folder is missing`);
  if (fs.readdirSync(hiddenDir).length === 0) throw new EvalSuiteError(`task ${dir}: hidden/ is empty (the hidden tests decide whether the task is solved)`);
  // Checked again after a repository's checkout (toolchain.ts); a shipped workspace fails here, before anything runs.
  if (spec.toolchain.length && hasWorkspace && !ignoresNodeModules(workspaceDir))
    throw new EvalSuiteError(`task ${dir}: it has a toolchain, so workspace/.gitignore must ignore node_modules/ (the copied toolchain is not the agent's work)`);
  const oracle = path.join(dir, "oracle.json");
  const source = spec.repo && spec.commit ? { repo: isRemote(spec.repo) ? spec.repo : path.resolve(dir, spec.repo), commit: spec.commit } : null;
  return { ...spec, dir, workspaceDir: source ? null : workspaceDir, source, hiddenDir, oracleFile: fs.existsSync(oracle) ? oracle : null };
}

/** Every task of a suite folder (its subfolders), sorted by id; `only` keeps the named ones. */
export function loadSuite(suiteDir: string, only?: string[]): EvalTask[] {
  const abs = path.resolve(suiteDir);
  if (!fs.statSync(abs, { throwIfNoEntry: false })?.isDirectory()) throw new EvalSuiteError(`suite ${abs} is not a folder`);
  const dirs = fs
    .readdirSync(abs, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith("."))
    .map((e) => path.join(abs, e.name))
    .sort();
  const tasks = dirs.map(loadTask);
  if (tasks.length === 0) throw new EvalSuiteError(`suite ${abs} has no task folders (each needs a task.json)`);
  if (!only?.length) return tasks;
  const unknown = only.filter((id) => !tasks.some((t) => t.id === id));
  if (unknown.length) throw new EvalSuiteError(`suite ${abs} has no task ${unknown.map((u) => `"${u}"`).join(", ")}`);
  return tasks.filter((t) => only.includes(t.id));
}
