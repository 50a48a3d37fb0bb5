import fs from "node:fs";
import { execa } from "execa";
import { isSecretName } from "../secrets.js";
import { OutputCap } from "./output-cap.js";
import type { ExecRequest, ExecResult, ProcessInfo, Sandbox } from "./port.js";

export const DEFAULT_OUTPUT_CAP = 16 * 1024;
/** How long to wait for pipes to close after the command's process group was killed. */
const DRAIN_MS = 2000;

/** Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), or null. */
export function readProcStart(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** Kills a whole process group; true if a signal was delivered. */
export function killGroup(pgid: number, signal: NodeJS.Signals = "SIGKILL"): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Kills the process group a crashed runner left behind, but only if its leader is still the same
 * process (same start time): pids are recycled.
 */
export function killOrphan(info: { pid: number | null; pgid: number | null; procStart: string | null }): boolean {
  if (!info.pid || !info.pgid) return false;
  const now = readProcStart(info.pid);
  if (now === null || (info.procStart !== null && now !== info.procStart)) return false;
  return killGroup(info.pgid);
}

/**
 * Variables a command inherits from the runner. Everything else is left out: the runner's own
 * environment may carry credentials under innocent names, and test-runner variables
 * (NODE_TEST_CONTEXT, VITEST_*) change how the agent's own test commands behave.
 */
export const ENV_ALLOW = [
  "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "CI",
  "GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "CARGO_HOME", "RUSTUP_HOME", "VIRTUAL_ENV", "PYTHONPATH",
  "JAVA_HOME", "npm_config_cache", "PNPM_HOME", "COREPACK_HOME",
];
const ENV_ALLOW_PREFIX = ["LC_"];

/** The environment a command gets: allow-listed runner variables plus `extra`, never a secret-looking name. */
export function commandEnv(extra: Record<string, string> = {}, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined) continue;
    if (ENV_ALLOW.includes(k) || ENV_ALLOW_PREFIX.some((p) => k.startsWith(p))) env[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) env[k] = v;
  for (const k of Object.keys(env)) if (isSecretName(k)) delete env[k];
  return env;
}

export interface SpawnSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  outputCapBytes: number;
  signal?: AbortSignal;
  onStart?: (p: ProcessInfo) => void | Promise<void>;
}

export interface SpawnOutcome {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
  truncated: boolean;
}

/**
 * Runs argv in its own process group with a wall-clock limit and capped output. The whole group is
 * killed when the leader exits or the time is up, so background children cannot outlive the
 * command or keep its pipes open.
 */
export async function spawnCapped(spec: SpawnSpec): Promise<SpawnOutcome> {
  const started = performance.now();
  const out = new OutputCap(spec.outputCapBytes);
  const err = new OutputCap(spec.outputCapBytes);
  const [file, ...args] = spec.argv;
  const child = execa(file!, args, {
    cwd: spec.cwd,
    env: spec.env,
    extendEnv: false,
    detached: true,
    stdin: "ignore",
    buffer: false,
    reject: false,
    stripFinalNewline: false,
    windowsHide: true,
  });
  child.stdout?.on("data", (c: Buffer) => out.push(c));
  child.stderr?.on("data", (c: Buffer) => err.push(c));

  let timedOut = false;
  let exitCode: number | null = null;
  let exitSignal: string | null = null;
  const pid = child.pid;
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code, sig) => {
      exitCode = code;
      exitSignal = sig;
      resolve();
    });
    child.once("error", () => resolve());
  });
  let killTimer: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    if (pid) {
      killGroup(pid, "SIGTERM");
      killTimer = setTimeout(() => killGroup(pid, "SIGKILL"), 300);
    }
  }, spec.timeoutMs);
  const onAbort = () => pid && killGroup(pid, "SIGKILL");
  spec.signal?.addEventListener("abort", onAbort, { once: true });
  if (pid && spec.onStart) {
    await spec.onStart({ pid, pgid: pid, procStart: readProcStart(pid) });
  }

  await exited;
  clearTimeout(timer);
  if (pid) killGroup(pid, "SIGKILL");
  clearTimeout(killTimer);
  spec.signal?.removeEventListener("abort", onAbort);
  // A process that left the group (setsid) may still hold the pipes: do not wait for it forever.
  let drainTimer: NodeJS.Timeout | undefined;
  const result = await Promise.race([
    child,
    new Promise<null>((r) => {
      drainTimer = setTimeout(() => r(null), DRAIN_MS);
    }),
  ]);
  clearTimeout(drainTimer);
  if (result === null) {
    child.stdout?.destroy();
    child.stderr?.destroy();
  }
  let stderr = err.text();
  const failure = result && "failed" in result && result.failed && exitCode === null ? result : null;
  if (failure && "code" in failure && failure.code === "ENOENT") {
    exitCode = 127;
    stderr += `${file}: command not found\n`;
  }
  return {
    exitCode,
    signal: exitSignal,
    stdout: out.text(),
    stderr,
    durationMs: Math.round(performance.now() - started),
    timedOut,
    truncated: out.truncated || err.truncated,
  };
}

export interface LocalSandboxOptions {
  outputCapBytes?: number;
}

/**
 * Runs commands directly on the host with only limits and a scrubbed environment: isolation level
 * "none". Stronger levels wrap the same spawn.
 */
export function createLocalSandbox(opts: LocalSandboxOptions = {}): Sandbox {
  return {
    level: "none",
    async exec(req: ExecRequest): Promise<ExecResult> {
      const r = await spawnCapped({
        argv: ["bash", "-c", req.command],
        cwd: req.cwd,
        env: commandEnv(req.env),
        timeoutMs: req.timeoutMs,
        outputCapBytes: req.outputCapBytes ?? opts.outputCapBytes ?? DEFAULT_OUTPUT_CAP,
        signal: req.signal,
        onStart: req.onStart,
      });
      return { ...r, isolation: "none", limit: null, denied: null };
    },
  };
}
