import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CliError } from "../errors.js";
import { createModel } from "../models/factory.js";
import { loadTrajectory } from "../models/scripted.js";
import type { RunSettingsInput } from "../settings.js";
import { EvalResultSchema } from "./result-schema.js";
import { runSeed, seededRandom } from "./seeded-random.js";
import { evalHtml } from "./report-html.js";
import { evalMarkdown } from "./report.js";
import { resultKey, runTask, type EvalAgent, type EvalResult } from "./run-task.js";
import { sweBenchTasks, type Prediction } from "./swe-bench.js";
import { loadSuite, type EvalTask } from "./task.js";
import { testServerSeed } from "./models.js";
import { startTestServer } from "./test-server.js";

// `ledgerloop eval`: every task of a suite, K times, by ledgerloop (and the plain baseline), N at a
// time. Each finished run's result is one JSON file in the out folder, written when it ends, so an
// interrupted eval resumed with `resume` runs only what has no result yet.

export interface EvalOptions {
  /** A suite folder, or with `format: "swe-bench"` a task list file (JSON or JSONL). */
  suiteDir: string;
  /** `swe-bench`: the suite is a SWE-bench-style task list; predictions.jsonl is written. */
  format?: "suite" | "swe-bench";
  /** What `run --model` takes, or `oracle` / `nothing` / `test-server[:SEED]` (models.ts). */
  model: string;
  baseline?: "plain";
  repeat?: number;
  concurrency?: number;
  /** Default: a new folder under the system's temp folder. */
  outDir?: string;
  resume?: boolean;
  /** Only these task ids. */
  only?: string[];
  /** Run settings for every run (sandbox, approve, tool-call format, retrieval…); the task's limits fill the rest. */
  settings?: Partial<RunSettingsInput>;
  signal?: AbortSignal;
  /** `--kill-every`: the mean seconds between SIGKILLs of each ledgerloop run (resumed after each). */
  killEverySec?: number;
  /** Seeds the kill moments (default 1). */
  seed?: number;
  /** Told of each result as it is stored (progress lines). */
  onResult?: (r: EvalResult, done: number, total: number) => void;
}

export interface EvalOutcome {
  outDir: string;
  reportFile: string;
  /** report.html: the report with charts of the solved rate and the cost per task. */
  htmlFile: string;
  /** `--format swe-bench`: the predictions file per agent (ledgerloop, and plain with the baseline). */
  predictionFiles?: Partial<Record<EvalAgent, string>>;
  results: EvalResult[];
  /** Results that were already in the out folder and not run again. */
  resumed: number;
}

/** What the out folder records about the eval it belongs to, so a resume cannot mix two evals. */
interface EvalMeta {
  suite: string;
  model: string;
  agents: EvalAgent[];
  repeat: number;
  format?: "swe-bench";
  killEverySec?: number;
  seed?: number;
}

/** Runs a suite and writes its results and report into the out folder. */
export async function runEval(opts: EvalOptions): Promise<EvalOutcome> {
  const swe = opts.format === "swe-bench";
  const tasks: EvalTask[] = swe ? onlyOf(sweBenchTasks(opts.suiteDir), opts.only, opts.suiteDir) : loadSuite(opts.suiteDir, opts.only);
  const repeat = opts.repeat ?? 1;
  if (swe && repeat > 1) throw new CliError("--format swe-bench writes one prediction per instance: --repeat must be 1", 2, "CONFIG_INVALID");
  // A model spec that cannot work fails here, once, not as a failed run of every task.
  const serverSeed = testServerSeed(opts.model);
  if (opts.model !== "oracle" && opts.model !== "nothing" && serverSeed === null) createModel(opts.model);
  if (opts.model === "oracle" || serverSeed !== null)
    for (const t of tasks) if (!t.oracleFile) throw new CliError(`task ${t.dir}: --model ${opts.model} needs an oracle.json trajectory in the task folder`, 2, "EVAL_SUITE_INVALID");
  const agents: EvalAgent[] = opts.baseline === "plain" ? ["ledgerloop", "plain"] : ["ledgerloop"];
  const outDir = path.resolve(opts.outDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-eval-")));
  const resultsDir = path.join(outDir, "results");
  if (opts.killEverySec !== undefined && !(opts.killEverySec > 0)) throw new CliError(`--kill-every must be a number of seconds above 0, got ${opts.killEverySec}`, 2, "CONFIG_INVALID");
  const seed = opts.seed ?? 1;
  const meta: EvalMeta = { suite: path.resolve(opts.suiteDir), model: opts.model, agents, repeat, ...(swe ? { format: "swe-bench" } : {}), ...(opts.killEverySec ? { killEverySec: opts.killEverySec, seed } : {}) };
  openOutDir(outDir, meta, opts.resume ?? false);
  const jobs: Array<{ task: EvalTask; agent: EvalAgent; repeat: number; key: string }> = [];
  for (const task of tasks) for (let r = 1; r <= repeat; r++) for (const agent of agents) jobs.push({ task, agent, repeat: r, key: resultKey(task.id, agent, r) });
  const results = new Map<string, EvalResult>();
  for (const j of jobs) {
    const stored = readResult(path.join(resultsDir, `${j.key}.json`));
    if (stored) results.set(j.key, stored);
  }
  const resumed = results.size;
  const todo = jobs.filter((j) => !results.has(j.key));
  let done = resumed;
  let next = 0;
  // `test-server`: the model is a real HTTP server on loopback, for this eval only.
  const server =
    serverSeed !== null && todo.length
      ? await startTestServer(
          tasks.map((t) => ({ id: t.id, goal: t.goal, trajectory: loadTrajectory(t.oracleFile!) })),
          { seed: serverSeed },
        )
      : null;
  const worker = async () => {
    while (next < todo.length && !opts.signal?.aborted) {
      const j = todo[next++]!;
      const r = await runTask({
        task: j.task,
        agent: j.agent,
        repeat: j.repeat,
        modelSpec: opts.model,
        ...(server ? { modelEndpoint: server.url } : {}),
        workDir: path.join(outDir, "work", j.key),
        settings: opts.settings ?? {},
        signal: opts.signal,
        ...(opts.killEverySec ? { kill: { everySec: opts.killEverySec, random: seededRandom(runSeed(seed, j.key)) } } : {}),
      });
      // A run stopped by the eval's own stop has no result: a resume runs it again.
      if (opts.signal?.aborted) return;
      writeJsonAtomic(path.join(resultsDir, `${j.key}.json`), r);
      results.set(j.key, r);
      opts.onResult?.(r, ++done, jobs.length);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency ?? 1, todo.length || 1)) }, worker));
  } finally {
    await server?.close();
    // What the model did at each turn (oracle, parallel or which misbehaviour), for a reader of the results.
    if (server) fs.appendFileSync(path.join(outDir, "test-server.jsonl"), server.played.map((p) => JSON.stringify(p) + "\n").join(""));
  }
  const ordered = jobs.map((j) => results.get(j.key)).filter((r): r is EvalResult => r !== undefined);
  const reportFile = path.join(outDir, "report.md");
  const reportMeta = { suite: meta.suite, model: opts.model, complete: ordered.length === jobs.length };
  fs.writeFileSync(reportFile, evalMarkdown(ordered, reportMeta));
  const htmlFile = path.join(outDir, "report.html");
  fs.writeFileSync(htmlFile, evalHtml(ordered, reportMeta));
  const predictionFiles = swe ? writePredictions(outDir, tasks, ordered, opts.model) : undefined;
  return { outDir, reportFile, htmlFile, results: ordered, resumed, ...(predictionFiles ? { predictionFiles } : {}) };
}

/** Makes the out folder, or checks that the one given holds this very eval when resuming. */
function openOutDir(outDir: string, meta: EvalMeta, resume: boolean): void {
  const metaFile = path.join(outDir, "eval.json");
  const existing = fs.existsSync(metaFile) ? (JSON.parse(fs.readFileSync(metaFile, "utf8")) as EvalMeta) : null;
  if (existing && !resume) {
    throw new CliError(`${outDir} already holds an eval (${existing.model} on ${existing.suite}): pass --resume to continue it, or choose another --out`, 2, "EVAL_OUT_EXISTS");
  }
  if (existing && JSON.stringify(existing) !== JSON.stringify(meta)) {
    throw new CliError(
      `${outDir} holds a different eval (${JSON.stringify(existing)}); --resume continues only the same suite, model, baseline and --repeat`,
      2,
      "EVAL_OUT_MISMATCH",
    );
  }
  fs.mkdirSync(path.join(outDir, "results"), { recursive: true });
  if (!existing) writeJsonAtomic(metaFile, meta);
}

/** A stored result, or null when there is none (a half-written one is not there: writes are atomic). */
function readResult(file: string): EvalResult | null {
  if (!fs.existsSync(file)) return null;
  const parsed = EvalResultSchema.safeParse(JSON.parse(fs.readFileSync(file, "utf8")));
  if (!parsed.success) throw new CliError(`${file} is not an eval result (${parsed.error.issues[0]?.message}); remove it to run that task again`, 2, "EVAL_OUT_INVALID");
  return parsed.data as EvalResult;
}

function writeJsonAtomic(file: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(value, null, 2) + "\n");
  fs.renameSync(tmp, file);
}

/** Writes predictions.jsonl (ledgerloop) and predictions.plain.jsonl (the baseline) in the official harness's format. */
function writePredictions(outDir: string, tasks: EvalTask[], results: EvalResult[], model: string): Partial<Record<EvalAgent, string>> {
  const files: Partial<Record<EvalAgent, string>> = {};
  for (const agent of [...new Set(results.map((r) => r.agent))]) {
    const lines = results
      .filter((r) => r.agent === agent)
      .map((r): Prediction => {
        const t = tasks.find((x) => x.id === r.task) as (EvalTask & { instanceId?: string }) | undefined;
        // The agent that made the patch is part of the name, so the two runs' scores are told apart.
        return { instance_id: t?.instanceId ?? r.task, model_name_or_path: `${agent === "plain" ? "plain-langgraph" : "ledgerloop"}:${model}`, model_patch: r.patch ?? "" };
      });
    const file = path.join(outDir, agent === "ledgerloop" ? "predictions.jsonl" : `predictions.${agent}.jsonl`);
    fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + (lines.length ? "\n" : ""));
    files[agent] = file;
  }
  return files;
}

/** The instances named by --task (their file names or instance ids), or all. */
function onlyOf<T extends EvalTask & { instanceId: string }>(tasks: T[], only: string[] | undefined, file: string): T[] {
  if (!only?.length) return tasks;
  const unknown = only.filter((id) => !tasks.some((t) => t.id === id || t.instanceId === id));
  if (unknown.length) throw new CliError(`task list ${file} has no instance ${unknown.map((u) => `"${u}"`).join(", ")}`, 2, "EVAL_SUITE_INVALID");
  return tasks.filter((t) => only.includes(t.id) || only.includes(t.instanceId));
}
