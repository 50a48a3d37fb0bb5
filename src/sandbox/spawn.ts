import { failpoint } from "../failpoints.js";
import { isSecretName } from "../secrets.js";
import { sweptCommand, type LimitName } from "./limits.js";
import { OutputCap } from "./output-cap.js";
import type { ExecResult, ProcessInfo } from "./exec-result.js";
import { COMMAND_TAG_VAR, isRunning, processesWithEnv, readProcStart } from "../proc.js";

// Spawning one command process with its limits (wall clock, output), and killing what it leaves:
// the process-level half of the executor, below isolation and policy.

export const DEFAULT_OUTPUT_CAP = 16 * 1024;
/** How long to wait for pipes to close after the command's process group was killed. */
const DRAIN_MS = 2000;

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
 * What recovery after a crash tells the model about a command the dead runner had started: whether
 * this call stopped leftovers of it (`killOrphan`), and how many of its processes still run after a
 * short wait for the killed ones to exit (0 is the usual answer; another runner's sweep of stale
 * cgroups may have stopped them first).
 */
export async function stopLeftovers(
  info: { pid: number | null; pgid: number | null; procStart: string | null },
  tag?: string,
): Promise<{ stopped: boolean; running: number }> {
  const stopped = killOrphan(info, tag);
  const running = () => {
    const pids = new Set(tag ? processesWithEnv(`${COMMAND_TAG_VAR}=${tag}`, 0).map((p) => p.pid) : []);
    if (info.pid && isRunning(info.pid, info.procStart)) pids.add(info.pid);
    return [...pids].filter((p) => isRunning(p)).length;
  };
  let n = running();
  for (let i = 0; i < 40 && n > 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
    n = running();
  }
  return { stopped, running: n };
}

/**
 * Kills the process group a crashed runner left behind, but only if its leader is still the same
 * process (same start time): pids are recycled.
 */
export function killOrphan(info: { pid: number | null; pgid: number | null; procStart: string | null }, tag?: string): boolean {
  let killed = false;
  if (info.pid && info.pgid) {
    const now = readProcStart(info.pid);
    if (now !== null && (info.procStart === null || now === info.procStart)) killed = killGroup(info.pgid);
  }
  // The runner may have died between spawning the command and recording its process, and a
  // daemon may have left the group: the tag the command was started with still finds them.
  if (tag) {
    for (const p of processesWithEnv(`${COMMAND_TAG_VAR}=${tag}`, 0)) {
      try {
        process.kill(p.pid, "SIGKILL");
        killed = true;
      } catch {
        // gone, or not ours
      }
    }
  }
  // Or the sweep of groups that dead runners left behind got to them first.
  return killed || (tag !== undefined && sweptCommand(tag));
}

/**
 * Variables a command inherits from the runner. Everything else is left out: the runner's own
 * environment may carry credentials under innocent names, and test-runner variables
 * (NODE_TEST_CONTEXT, VITEST_*) change how the agent's own test commands behave.
 */
export const ENV_ALLOW = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TERM",
  "TZ",
  "TMPDIR",
  "CI",
  "GOPATH",
  "GOCACHE",
  "GOMODCACHE",
  "GOFLAGS",
  "CARGO_HOME",
  "RUSTUP_HOME",
  "VIRTUAL_ENV",
  "PYTHONPATH",
  "JAVA_HOME",
  "npm_config_cache",
  "PNPM_HOME",
  "COREPACK_HOME",
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
  /** Bytes the child can read from fd 3 (a pipe closed after them), e.g. a seccomp filter for bwrap. */
  fd3Input?: Uint8Array;
  /** Bytes of stdout+stderr together after which the command is stopped with limit "output". */
  maxOutputBytes?: number;
  /** Polled while the command runs; returning a limit name stops the command for it. */
  watch?: { intervalMs: number; check: () => LimitName | null };
  /**
   * Kills every process of the command, also those outside its process group (setsid, a PID
   * namespace, a cgroup). Called on timeout, abort, limit and when the leader exits.
   */
  killTree?: () => void;
}

/** What one spawned process did: the process part of an {@link ExecResult}, before isolation and limits are added. */
export type SpawnOutcome = Pick<ExecResult, "exitCode" | "signal" | "stdout" | "stderr" | "durationMs" | "timedOut" | "truncated"> & {
  /** Set when the runner stopped the command because of a limit it watches (output, cpu). */
  stoppedFor: LimitName | null;
};

let execaFn: (typeof import("execa"))["execa"] | undefined;

/**
 * Loads execa (~100 modules) at the first command rather than with the sandbox: a run's start (up
 * to its first decide) and the commands that spawn nothing never need it. Awaited by every spawn
 * path before {@link spawnGroupLeader}. A dynamic import, not require(): under tsx (a script that
 * imports ledgerloop from TypeScript) require() resolved execa's ES-only dependencies with
 * CommonJS conditions and failed (ERR_PACKAGE_PATH_NOT_EXPORTED, unicorn-magic).
 */
export async function loadSpawner(): Promise<void> {
  execaFn ??= (await import("execa")).execa;
}

/**
 * Starts argv as the leader of a new process group, with exactly `env`, no stdin, piped output
 * read as it comes (nothing buffered), and optional bytes on fd 3: how every command and
 * background process is spawned.
 */
export function spawnGroupLeader(spec: Pick<SpawnSpec, "argv" | "cwd" | "env" | "fd3Input">) {
  const [file, ...args] = spec.argv;
  if (!execaFn) throw new Error("spawnGroupLeader before loadSpawner(): await loadSpawner() first");
  return execaFn(file!, args, {
    cwd: spec.cwd,
    env: spec.env,
    extendEnv: false,
    detached: true,
    stdio: spec.fd3Input ? ["ignore", "pipe", "pipe", spec.fd3Input] : ["ignore", "pipe", "pipe"],
    buffer: false,
    reject: false,
    stripFinalNewline: false,
    windowsHide: true,
  });
}

/**
 * Runs argv in its own process group with a wall-clock limit and capped output. The whole group
 * (and with `killTree` the whole tree) is killed when the leader exits or the time is up, so
 * background children cannot outlive the command or keep its pipes open.
 */
export async function spawnCapped(spec: SpawnSpec): Promise<SpawnOutcome> {
  const started = performance.now();
  await loadSpawner();
  const out = new OutputCap(spec.outputCapBytes);
  const err = new OutputCap(spec.outputCapBytes);
  const child = spawnGroupLeader(spec);
  const pid = child.pid;
  // The window crash recovery must cover: the command exists, nothing has recorded it yet.
  failpoint("command-spawned");
  let timedOut = false;
  let stoppedFor: LimitName | null = null;
  const killAll = () => {
    if (pid) killGroup(pid, "SIGKILL");
    try {
      spec.killTree?.();
    } catch {
      // best effort: the group kill above already stopped the leader
    }
  };
  const stop = (why: LimitName) => {
    if (stoppedFor || timedOut) return;
    stoppedFor = why;
    killAll();
  };
  const onData = (cap: OutputCap) => (c: Buffer) => {
    cap.push(c);
    if (spec.maxOutputBytes !== undefined && out.totalBytes + err.totalBytes > spec.maxOutputBytes) stop("output");
  };
  child.stdout?.on("data", onData(out));
  child.stderr?.on("data", onData(err));

  let exitCode: number | null = null;
  let exitSignal: string | null = null;
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
    if (stoppedFor) return;
    timedOut = true;
    if (pid) {
      killGroup(pid, "SIGTERM");
      killTimer = setTimeout(killAll, 300);
    }
  }, spec.timeoutMs);
  const watchTimer = spec.watch
    ? setInterval(() => {
        const hit = spec.watch!.check();
        if (hit) stop(hit);
      }, spec.watch.intervalMs)
    : undefined;
  const onAbort = () => killAll();
  spec.signal?.addEventListener("abort", onAbort, { once: true });
  const settle = () => {
    clearTimeout(timer);
    clearInterval(watchTimer);
    if (pid) killAll();
    clearTimeout(killTimer);
    spec.signal?.removeEventListener("abort", onAbort);
  };
  if (pid && spec.onStart) {
    try {
      await spec.onStart({ pid, pgid: pid, procStart: readProcStart(pid) });
    } catch (e) {
      // The start could not be recorded (the state database went away): a command nobody tracks
      // must not run on, and its time limit and watch must not outlive it (a watch interval kept a
      // stopped worker alive).
      killAll();
      await exited;
      settle();
      throw e;
    }
  }

  await exited;
  settle();
  // A process that left the group (setsid) and escaped killTree may still hold the pipes: do not
  // wait for it forever.
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
    stderr += `${spec.argv[0]}: command not found\n`;
  }
  return {
    exitCode,
    signal: exitSignal,
    stdout: out.text(),
    stderr,
    durationMs: Math.round(performance.now() - started),
    timedOut,
    truncated: out.truncated || err.truncated,
    stoppedFor,
  };
}
