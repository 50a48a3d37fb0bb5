import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { RunSettingsInput } from "../settings.js";
import { newThreadId } from "../runs/start.js";
import type { AgentOutcome, AgentRunInput } from "./run-ledgerloop.js";
import type { EvalTask } from "./task.js";
export { seededRandom } from "./seeded-random.js";

// `ledgerloop eval --kill-every SECONDS`: the ledgerloop run of a task is driven by a child process
// (agent-child.ts) that gets a real SIGKILL at random moments, as a crashed machine would, and is
// resumed from its last checkpoint by a new child each time, until the run ends by itself. The
// moments come from a seeded generator, so an eval with the same --seed kills at the same times.

/** What a child is told to run: the task run, and whether to start it or resume it. */
export interface ChildSpec {
  input: { task: EvalTask; modelSpec: string; modelEndpoint?: string; workspace: string; stateDir: string; settings: Partial<RunSettingsInput> };
  thread: string;
  resume: boolean;
  /** Epoch ms: the task's time limit, counted from the first start. */
  deadline: number;
  outFile: string;
}

export interface KillPlan {
  /** The mean time between kills, in seconds; each kill comes 0.5 to 1.5 times that after the run starts driving. */
  everySec: number;
  /** Uniform in [0, 1), seeded. */
  random: () => number;
  /** Kills after which the run is left to end (so a run whose steps outlast the interval still ends). */
  maxKills?: number;
}

const DEFAULT_MAX_KILLS = 10;

/** Runs the task with ledgerloop in child processes, killing and resuming as planned; the outcome counts the kills. */
export async function runLedgerloopKilled(input: AgentRunInput, modelSpec: string, plan: KillPlan, modelEndpoint?: string): Promise<AgentOutcome> {
  const dir = path.dirname(input.stateDir);
  const thread = newThreadId();
  const outFile = path.join(dir, "child-outcome.json");
  const specFile = path.join(dir, "child-spec.json");
  fs.rmSync(outFile, { force: true });
  const deadline = Date.now() + input.task.limits.timeoutSec * 1000;
  const { task, workspace, stateDir, settings } = input;
  let kills = 0;
  let lastError = "";
  for (let attempt = 0; ; attempt++) {
    const spec: ChildSpec = { input: { task, modelSpec, ...(modelEndpoint ? { modelEndpoint } : {}), workspace, stateDir, settings }, thread, resume: attempt > 0, deadline, outFile };
    fs.writeFileSync(specFile, JSON.stringify(spec));
    const killAfterMs = kills < (plan.maxKills ?? DEFAULT_MAX_KILLS) ? plan.everySec * 1000 * (0.5 + plan.random()) : null;
    const r = await runChild(specFile, killAfterMs, input.signal);
    if (fs.existsSync(outFile)) {
      const outcome = JSON.parse(fs.readFileSync(outFile, "utf8")) as AgentOutcome;
      return { ...outcome, kills };
    }
    if (r.killed) {
      kills++;
      continue;
    }
    lastError = r.stderr.trim().split("\n").slice(-3).join(" | ");
    // Stopped by the eval itself, or a child that died on its own: no outcome to read.
    const status = input.signal?.aborted ? "interrupted" : "failed";
    return { status, steps: 0, spend: { calls: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costUsd: 0 }, thread, kills, error: `the run's process ended without an outcome (exit ${r.code ?? r.signal}): ${lastError}` };
  }
}

/** How this module's sibling child starts: compiled JavaScript, or the TypeScript sources through tsx. */
function childArgv(): string[] {
  const here = fileURLToPath(import.meta.url);
  const ext = path.extname(here);
  const entry = path.join(path.dirname(here), `agent-child${ext}`);
  if (ext !== ".ts") return [entry];
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;
  return ["--import", tsx, entry];
}

interface ChildEnd {
  killed: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs one child; SIGKILLs it `killAfterMs` after it says it is driving the run (null: never). */
function runChild(specFile: string, killAfterMs: number | null, stop?: AbortSignal): Promise<ChildEnd> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...childArgv(), specFile], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    let killed = false;
    let timer: NodeJS.Timeout | undefined;
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-4000)));
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      if (timer || killAfterMs === null || !d.includes("driving")) return;
      timer = setTimeout(() => {
        killed = true;
        child.kill("SIGKILL");
      }, killAfterMs);
    });
    const onStop = () => child.kill("SIGTERM");
    stop?.addEventListener("abort", onStop, { once: true });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      stop?.removeEventListener("abort", onStop);
      resolve({ killed: killed && signal === "SIGKILL", code, signal, stderr });
    });
  });
}
