import fs from "node:fs";
import path from "node:path";
import { errorMessage } from "../errors.js";
import { createSandbox } from "../sandbox/executor.js";
import type { ExecResult } from "../sandbox/port.js";
import { confined } from "../workspace/confined.js";
import type { RunSettingsInput } from "../settings.js";
import type { HostRepo } from "../workspace/host-git.js";
import { checkoutSource } from "./checkout.js";
import { predictionPatch } from "./swe-bench.js";
import type { EffectsCheck } from "./effects.js";
import { runLedgerloopKilled, type KillPlan } from "./killed-run.js";
import { taskModel } from "./models.js";
import { runLedgerloop, type AgentOutcome, type AgentRunInput } from "./run-ledgerloop.js";
import type { EvalTask } from "./task.js";
import { provisionToolchain, resolveToolchain, toolchainBases, ToolchainMissing } from "./toolchain.js";

/** Which loop drives the model: ledgerloop's graph, or the plain LangGraph baseline. */
export type EvalAgent = "ledgerloop" | "plain";

/** One run of one task by one agent, as stored in the eval's out folder and reported. */
export interface EvalResult {
  task: string;
  agent: EvalAgent;
  /** 1-based repetition (`--repeat`). */
  repeat: number;
  model: string;
  solved: boolean;
  status: string;
  steps: number;
  modelCalls: number;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  costUsd: number;
  wallMs: number;
  thread?: string;
  /** The hidden test command's exit code, null when it did not run or was killed. */
  hiddenExit: number | null;
  /** The tail of the hidden tests' output, for a reader who wants to know why. */
  hiddenOutput: string;
  error?: string;
  /** Steps refused, rejected or failed as tools (faults.ts); an oracle run with any is not solved. */
  faults?: string[];
  /** `--format swe-bench`: the workspace's diff against the base commit, and the added files left out of it. */
  patch?: string;
  patchExcluded?: string[];
  /** `--kill-every`: times the run was killed and resumed, and what its ledger says was doubled or lost. */
  kills?: number;
  effects?: EffectsCheck;
}

/** One task run to do. */
export interface TaskRunSpec {
  task: EvalTask;
  agent: EvalAgent;
  repeat: number;
  modelSpec: string;
  /** The URL of the server that plays the model, for `test-server` (started by the eval). */
  modelEndpoint?: string;
  /** A folder of this run's own: workspace/ and state/ are made in it. */
  workDir: string;
  settings: Partial<RunSettingsInput>;
  signal?: AbortSignal;
  /** `--kill-every`: kill the ledgerloop run's process as planned and resume it (the baseline has no checkpoints). */
  kill?: KillPlan;
}

/** The name of a run's result in the out folder: task, agent and repetition. */
export function resultKey(task: string, agent: EvalAgent, repeat: number): string {
  return `${task}.${agent}.${repeat}`;
}

const TAIL = 2000;

/** The result of a run that did not start because this machine lacks the task's toolchain. */
const skipped = { solved: false, status: "skipped", steps: 0, modelCalls: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costUsd: 0, hiddenExit: null, hiddenOutput: "" };

/**
 * Runs one task: a fresh copy of its workspace, its setup command, the agent, then (only after the
 * agent's run has ended and its runtime is closed) the hidden tests copied in and run in the sandbox.
 */
export async function runTask(spec: TaskRunSpec): Promise<EvalResult> {
  const { task } = spec;
  const t0 = Date.now();
  const workspace = path.join(spec.workDir, "workspace");
  const stateDir = path.join(spec.workDir, "state");
  fs.rmSync(spec.workDir, { recursive: true, force: true });
  fs.mkdirSync(stateDir, { recursive: true });
  let sourceError: string | undefined;
  let pinned: HostRepo | null = null;
  if (task.workspaceDir) fs.cpSync(task.workspaceDir, workspace, { recursive: true });
  else if (task.source) {
    // Cloned next to the run, never into the workspace (checkout.ts); the clone's failure is the run's.
    pinned = await checkoutSource(task.source, path.join(spec.workDir, "source"), workspace).catch((err: unknown) => {
      sourceError = errorMessage(err);
      fs.mkdirSync(workspace, { recursive: true });
      return null;
    });
  }
  const base = { task: task.id, agent: spec.agent, repeat: spec.repeat, model: spec.modelSpec };
  let toolchain: Map<string, string>;
  try {
    toolchain = resolveToolchain(task.toolchain, toolchainBases(task.dir));
  } catch (err) {
    if (!(err instanceof ToolchainMissing)) throw err;
    // What this machine lacks is not the agent's failure: the task is skipped, saying what to install.
    return { ...base, ...skipped, wallMs: Date.now() - t0, error: err.message };
  }
  const sandbox = createSandbox({ level: spec.settings.sandbox ?? "auto", workspace, allowNetwork: false });
  const empty = { calls: 0, inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, costUsd: 0 };
  let outcome: AgentOutcome;
  try {
    if (sourceError) throw new Error(sourceError);
    if (toolchain.size) provisionToolchain(workspace, toolchain);
    if (task.setup) {
      const r = await sandbox.exec({ command: task.setup, cwd: workspace, timeoutMs: 300_000 });
      if (r.exitCode !== 0) throw new Error(`the task's setup command failed (exit ${r.exitCode}): ${tail(r)}`);
    }
    const input: AgentRunInput = { task, model: taskModel(spec.modelSpec, task, spec.modelEndpoint), workspace, stateDir, settings: spec.settings, signal: spec.signal };
    // The baseline loads LangGraph's prebuilt pieces only when asked for.
    if (spec.agent === "plain") outcome = await (await import("./plain-agent.js")).runPlainAgent(input);
    else if (spec.kill) outcome = await runLedgerloopKilled(input, spec.modelSpec, spec.kill, spec.modelEndpoint);
    else outcome = await runLedgerloop(input);
  } catch (err) {
    outcome = { status: "failed", steps: 0, spend: empty, error: errorMessage(err) };
  }
  let hidden: ExecResult | null = null;
  let hiddenError: string | undefined;
  let prediction: { patch: string; excluded: string[] } | undefined;
  try {
    // The diff first: the hidden tests are not the agent's work.
    if (pinned && task.source && !task.hiddenDir) prediction = await predictionPatch(pinned, task.source.commit, workspace);
    if (task.hiddenDir && task.hiddenTest) {
      // The hidden tests use the real toolchain, whatever the agent did to its copy.
      if (toolchain.size) provisionToolchain(workspace, toolchain);
      copyHidden(task.hiddenDir, workspace);
      hidden = await sandbox.exec({ command: task.hiddenTest, cwd: workspace, timeoutMs: task.hiddenTestTimeoutSec * 1000 });
    }
  } catch (err) {
    hiddenError = prediction || !task.hiddenDir ? `the workspace's diff could not be taken: ${errorMessage(err)}` : `hidden tests could not run: ${errorMessage(err)}`;
  } finally {
    await sandbox.closeSession?.().catch(() => null);
  }
  const s = outcome.spend;
  const faults = outcome.faults ?? [];
  // The oracle is the proof that a task can be solved as written: one whose steps are refused
  // proves nothing, even when the hidden tests pass.
  const brokenOracle = spec.modelSpec === "oracle" && faults.length > 0 ? `the oracle trajectory has ${faults.length} faulty step(s), first: ${faults[0]}` : undefined;
  const error = [outcome.error, hiddenError, brokenOracle].filter(Boolean).join("; ");
  return {
    ...base,
    solved: hidden?.exitCode === 0 && !hidden.timedOut && !brokenOracle,
    status: outcome.status,
    steps: outcome.steps,
    modelCalls: s.calls,
    inputTokens: s.inputTokens,
    cachedInputTokens: s.cachedInputTokens,
    outputTokens: s.outputTokens,
    costUsd: s.costUsd,
    wallMs: Date.now() - t0,
    ...(outcome.thread ? { thread: outcome.thread } : {}),
    hiddenExit: hidden?.exitCode ?? null,
    hiddenOutput: hidden ? tail(hidden) : "",
    ...(error ? { error } : {}),
    ...(faults.length ? { faults } : {}),
    ...(prediction ? { patch: prediction.patch, patchExcluded: prediction.excluded } : {}),
    ...(spec.kill && spec.agent === "ledgerloop" ? { kills: outcome.kills ?? 0, ...(outcome.effects ? { effects: outcome.effects } : {}) } : {}),
  };
}

function tail(r: ExecResult): string {
  const out = `${r.stdout}\n${r.stderr}`.trim();
  return out.length > TAIL ? `…${out.slice(-TAIL)}` : out;
}

/**
 * Copies hidden/ over the workspace through the confined writer: the workspace is the agent's
 * work and is treated as hostile (a symlink it left where a hidden test goes is replaced, never followed).
 */
export function copyHidden(hiddenDir: string, workspace: string): void {
  const ws = confined(workspace, { links: "never" });
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(hiddenDir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) {
        const st = ws.lstatOrNull(r);
        if (st && !st.isFile()) ws.rm(r, { recursive: true, force: true });
        ws.writeFile(r, fs.readFileSync(path.join(hiddenDir, r)), { mkdirs: true });
      }
    }
  };
  walk("");
}
