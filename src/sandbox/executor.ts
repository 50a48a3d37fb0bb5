import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { ConfigError } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { isSecretName } from "../secrets.js";
import { bwrapProbeArgv, detectIsolation, findProgram, probeOk, type IsolationReport } from "./detect.js";
import {
  bwrapArgv,
  DEFAULT_HIDDEN_HOST,
  DEFAULT_HIDDEN_IN_HOME,
  DEFAULT_PROTECTED,
  hiddenPaths,
  planUid,
  protectedPaths,
  unshareArgv,
  unshareEnv,
  wrapperArgv,
  type IsolationLevel,
  type Tools,
  type UidPlan,
  type WrapInput,
} from "./isolation.js";
import {
  CommandCgroups,
  detectCgroups,
  resolveLimits,
  rlimitScript,
  sweptCommand,
  whichLimit,
  type CgroupSupport,
  type LimitName,
  type Limits,
} from "./limits.js";
import { noneNamespacePrefix } from "./none-pidns.js";
import { OutputCap } from "./output-cap.js";
import type { BackgroundRequest, ExecRequest, ExecResult, ProcessInfo, Sandbox } from "./port.js";
import { COMMAND_TAG_VAR, descendants, isRunning, processesWithEnv, readProcStart, tasksOfUid } from "./proc.js";
import { WorkspaceGuard } from "./git-guard.js";
import { buildSeccompFilter } from "./seccomp.js";
import { BackgroundProcess, LineRing, listeningPorts } from "./background.js";
import { SandboxSession } from "./session.js";
import { clearNewSetid } from "./setid.js";

export { COMMAND_TAG_VAR, readProcStart } from "./proc.js";

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

/**
 * Runs argv in its own process group with a wall-clock limit and capped output. The whole group
 * (and with `killTree` the whole tree) is killed when the leader exits or the time is up, so
 * background children cannot outlive the command or keep its pipes open.
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
    stdio: spec.fd3Input ? ["ignore", "pipe", "pipe", spec.fd3Input] : ["ignore", "pipe", "pipe"],
    buffer: false,
    reject: false,
    stripFinalNewline: false,
    windowsHide: true,
  });
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
  if (pid && spec.onStart) {
    await spec.onStart({ pid, pgid: pid, procStart: readProcStart(pid) });
  }

  await exited;
  clearTimeout(timer);
  clearInterval(watchTimer);
  if (pid) killAll();
  clearTimeout(killTimer);
  spec.signal?.removeEventListener("abort", onAbort);
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
    stoppedFor,
  };
}

/** How a sandbox is built; everything has a default. */
export interface SandboxOptions {
  /** "auto" (default) takes the strongest level that works here; naming one that does not work throws. */
  level?: IsolationLevel | "auto";
  /** Workspace root, bound read-write; a request's `workspace`, else its `cwd`, when absent. */
  workspace?: string;
  /** Network for commands (default false). Level "none" cannot take it away. */
  allowNetwork?: boolean;
  /** Limits over DEFAULT_LIMITS; requests may override them again. */
  limits?: Partial<Limits>;
  outputCapBytes?: number;
  /** Extra workspace-relative paths commands may not change (.git, the config and .ledgerloop/ always are: git-guard.ts). */
  protectedPaths?: string[];
  /** Host paths bound read-write under bwrap besides the workspace (e.g. a shared build cache). */
  writablePaths?: string[];
  /**
   * Credential stores hidden from commands under bwrap: names relative to the runner's (and the
   * command uid's) home, or absolute paths. Default: DEFAULT_HIDDEN_IN_HOME (.ssh, .aws, .npmrc, …).
   */
  hiddenPaths?: string[];
  /**
   * Per-command cgroups (memory, pids, whole-command CPU, killing every process), where writable.
   * Default true. Without them memory is not limited, processes only through RLIMIT_NPROC, and the
   * tree is killed through the PID namespace or a /proc scan.
   */
  cgroups?: boolean;
  /** A detection to use instead of probing this machine (tests, or a report already printed). */
  report?: IsolationReport;
  /**
   * Level "none" only: run each command in its own PID namespace where the runner can create one
   * (root), so that nothing it starts outlives it (see none-pidns.ts). Default true; false gives
   * host pids and signals at the cost of that guarantee (what a non-root runner gets anyway).
   */
  pidNamespace?: boolean;
  /**
   * bwrap/unshare: all commands share one session (session.ts) — one network namespace with its
   * own loopback and one PID namespace — so background processes started by one command are
   * reachable from the next. Default false (each command its own namespaces); runs turn it on.
   */
  session?: boolean;
}

/** A sandbox plus what it found out about the machine. */
export interface ConfiguredSandbox extends Sandbox {
  readonly level: IsolationLevel;
  readonly reasons: readonly string[];
  /** Full detection (null for level "none" asked explicitly: no probing done). */
  readonly report: IsolationReport | null;
  /** The uid plan a workspace gets (bwrap/unshare), for `doctor` and tests. */
  uidFor(workspace: string): UidPlan;
}

let seccompFilter: Buffer | null | undefined;

/** This architecture's compiled seccomp filter (built once), or null. */
function seccompBytes(): Buffer | null {
  if (seccompFilter === undefined) seccompFilter = buildSeccompFilter();
  return seccompFilter;
}

const uidProbeCache = new Map<string, boolean>();
let commandSeq = 0;

/**
 * Creates the sandbox every command of a run goes through. The level is chosen (or checked) once;
 * each command then gets its own cgroups, rlimits and namespaces.
 */
export function createSandbox(opts: SandboxOptions = {}): ConfiguredSandbox {
  const want = opts.level ?? "auto";
  let report: IsolationReport | null = opts.report ?? null;
  let level: IsolationLevel;
  let reasons: string[];
  let tools: Tools;
  let cgroups: CgroupSupport;
  if (want === "none" && !report) {
    // No probing: level "none" is what createLocalSandbox has always been, and tests make many.
    cgroups = detectCgroups();
    tools = { sh: findProgram("sh") ?? "/bin/sh", bash: "bash" };
    level = "none";
    reasons = ["none: asked for explicitly — commands are not isolated", ...cgroups.reasons];
  } else {
    report ??= detectIsolation();
    if (want !== "auto" && !report.levels[want].ok) {
      throw new ConfigError(`sandbox level "${want}" is not available here: ${report.levels[want].detail}`);
    }
    level = want === "auto" ? report.level : want;
    reasons = want === "auto" ? report.reasons : [...report.reasons, `asked for: ${want}`];
    tools = report.tools;
    cgroups = report.cgroups;
  }
  if (opts.cgroups === false) {
    cgroups = { parents: {}, reasons: ["cgroups: turned off for this sandbox (memory limit not enforced)"] };
    reasons = [...reasons, ...cgroups.reasons];
  }
  const noneNs = level === "none" && opts.pidNamespace !== false ? noneNamespacePrefix(tools.sh) : null;
  if (level === "none") {
    reasons = [...reasons, `none: ${noneNs ? noneNs.reason : "no PID namespace (turned off for this sandbox): a process that leaves the command's process group, cgroups and tree, and drops LEDGERLOOP_COMMAND from its environment, can outlive the command"}`];
  }
  const defaults = resolveLimits(opts.limits);
  const protectRel = opts.protectedPaths ?? DEFAULT_PROTECTED;
  const writable = (opts.writablePaths ?? []).map((p) => path.resolve(p));
  const hideNames = [...(opts.hiddenPaths ?? DEFAULT_HIDDEN_IN_HOME), ...DEFAULT_HIDDEN_HOST];

  const uidFor = (workspace: string): UidPlan => {
    let plan = planUid(workspace);
    if (plan.kind === "owner" && level === "bwrap") {
      // bwrap as the owner builds its sandbox in an unprivileged user namespace: check it can.
      const key = `${plan.uid}:${plan.gid}`;
      let ok = uidProbeCache.get(key);
      if (ok === undefined && tools.setpriv && report) {
        ok = probeOk([tools.setpriv, `--reuid=${plan.uid}`, `--regid=${plan.gid}`, "--clear-groups", "--", ...bwrapProbeArgv(tools, report.disableUserns, false)]);
        uidProbeCache.set(key, ok);
      }
      if (!ok) plan = { kind: "root-userns", uid: 0, gid: 0, reason: `${plan.reason}, but bwrap cannot run as uid ${plan.uid}: uid 0 without capabilities instead` };
    }
    if (plan.kind === "root-userns") {
      // Only bwrap adds a user namespace; doctor must not claim one at unshare.
      plan = { ...plan, reason: `${plan.reason}${level === "bwrap" ? " in a user namespace (65534 inside)" : " (no user namespace at this level: the uid stays 0)"}` };
    }
    return plan;
  };

  const guards = new Map<string, WorkspaceGuard>();
  const guardOf = (workspace: string): WorkspaceGuard => {
    let g = guards.get(workspace);
    if (!g) {
      g = new WorkspaceGuard(workspace, { detectControlChanges: level === "none" });
      guards.set(workspace, g);
    }
    return g;
  };

  // The run's session (session.ts), opened by the first command that needs it.
  let session: Promise<SandboxSession> | null = null;
  let sessionPid: number | null = null;
  const sessionFor = async (): Promise<SandboxSession> => {
    if (session) {
      const s = await session.catch(() => null);
      if (s?.alive()) return s;
    }
    session = SandboxSession.open(
      { sh: tools.sh, unshare: tools.unshare, setpriv: tools.setpriv, ip: tools.ip },
      // With the network allowed for the whole run, commands use the host's network: the session
      // is then only the PID namespace that ends its processes.
      { net: !(opts.allowNetwork ?? false) },
    );
    const s = await session;
    sessionPid = s.pid;
    return s;
  };

  /** Everything a command needs to start (argv through the wrapper, env, cgroups), at this level. */
  const prepare = async (req: Omit<ExecRequest, "timeoutMs">, background = false) => {
    const limits = req.limits ? resolveLimits(defaults, req.limits) : defaults;
    const workspace = path.resolve(req.workspace ?? opts.workspace ?? req.cwd);
    const guard = guardOf(workspace);
    guard.before();
    const allowNetwork = req.allowNetwork ?? opts.allowNetwork ?? false;
    // In the run's session (bwrap/unshare): its network namespace unless this command may use the
    // host's network, and always its PID namespace, which ends every process with the session.
    // A session that cannot be made (util-linux without nsenter, namespaces refused) leaves
    // commands their own namespaces, as without sessions; a background process needs it (throws).
    const sess = level !== "none" && opts.session ? await sessionFor().catch((err: unknown) => (background ? Promise.reject(err) : null)) : null;
    const enter = sess ? sess.enterPrefix({ net: !allowNetwork }) : [];
    const made = Object.keys(cgroups.parents).length ? CommandCgroups.create(cgroups, limits) : null;
    const cg = made && made.joinFiles().length ? made : null;
    const hasPidsCgroup = cg?.has("pids") ?? false;
    // Without a cgroup or a PID namespace, descendants are found through /proc while the
    // command runs, so that children which left the process group can still be killed; a daemon
    // that double-forks out of the tree before the first scan is found by this variable.
    const scan = !cg && level === "none";
    const marker = req.tag ?? (scan ? `${process.pid}.${++commandSeq}` : null);
    const env = marker ? { ...commandEnv(req.env), [COMMAND_TAG_VAR]: marker } : commandEnv(req.env);

    let inner: string[];
    let fd3: Buffer | undefined;
    let nproc = false;
    let nprocUid = process.getuid?.() ?? 0;
    // The command runs as uid 0 on the host's files (set-uid files it makes would be root's).
    let asRoot = nprocUid === 0;
    if (level === "none") {
      // Where it can be had (root), a PID namespace: the only container of the command's
      // processes the command cannot leave (see none-pidns.ts).
      inner = [...(noneNs?.prefix ?? []), tools.bash, "-c", req.command];
      nproc = !hasPidsCgroup && nprocUid !== 0;
    } else {
      const uid = uidFor(workspace);
      asRoot = uid.kind === "root-userns";
      nproc = !hasPidsCgroup && uid.kind !== "root-userns";
      nprocUid = uid.uid;
      const input: WrapInput = {
        command: req.command,
        cwd: req.cwd,
        workspace,
        env,
        allowNetwork,
        protect: mergeProtected([...protectedPaths(workspace, protectRel), ...guard.protectPaths()]),
        writable,
        hidden: hiddenPaths([os.homedir(), uid.home], hideNames, workspace),
        uid,
        seccompFd: null,
        tools,
        disableUserns: report?.disableUserns ?? false,
        sessionNet: Boolean(sess?.ownNetwork) && !allowNetwork,
      };
      if (level === "bwrap") {
        // The filter reaches bwrap through a pipe on fd 3: no file anyone else could swap.
        fd3 = seccompBytes() ?? undefined;
        if (fd3) input.seccompFd = 3;
        // A process that entered the session's PID namespace still sees the host's /proc, where
        // its own pid names another process: bwrap reads /proc/<its pid>/ns/…, so it gets a /proc
        // of the session's namespace first (a mount namespace of its own, no --fork needed).
        const procFix = enter.length ? [tools.unshare ?? "unshare", "--mount", "--mount-proc", "--"] : [];
        inner = [...enter, ...procFix, ...bwrapArgv(input)];
        // The seccomp filter refuses set-uid/set-gid chmods: nothing to clear afterwards.
        if (fd3) asRoot = false;
      } else {
        inner = [...enter, ...unshareArgv(input)];
        Object.assign(env, unshareEnv(env, uid));
      }
    }
    const argv = wrapperArgv(tools.sh, cg?.joinFiles() ?? [], rlimitScript(limits, { nproc, nprocBase: nproc ? tasksOfUid(nprocUid) : 0 }), inner);
    return { argv, env, limits, workspace, guard, cg, fd3, asRoot, scan, marker };
  };

  return {
    level,
    reasons,
    report,
    uidFor,
    async startBackground(req: BackgroundRequest): Promise<BackgroundProcess> {
      const { argv, env, cg, fd3, guard, scan, marker } = await prepare(req, true);
      const ring = new LineRing();
      const killTree = () => {
        cg?.killAll();
        if (scan && marker) {
          for (const d of processesWithEnv(`${COMMAND_TAG_VAR}=${marker}`, 0)) {
            try {
              process.kill(d.pid, "SIGKILL");
            } catch {
              // gone
            }
          }
        }
      };
      const setpriv = tools.setpriv ?? findProgram("setpriv");
      return new BackgroundProcess({
        // With the runner gone, the top process dies too (at "none" its PID namespace with it; in a
        // session the session's own teardown covers everything).
        argv: setpriv ? [setpriv, "--pdeathsig", "SIGKILL", "--", ...argv] : argv,
        cwd: req.cwd,
        env,
        fd3Input: fd3,
        ring,
        killTree,
        onGone: () => {
          cg?.destroy();
          for (const v of guard.after().violations) ring.push(`ledgerloop: ${v}\n`);
        },
      });
    },
    listeningPorts(): Set<number> {
      if (level === "none" || !opts.session) return listeningPorts("self");
      // Only a session that exists has ports; none opened yet means nothing listens.
      return sessionPid !== null ? listeningPorts(sessionPid) : new Set();
    },
    async closeSession(): Promise<number | null> {
      const s = session ? await session.catch(() => null) : null;
      session = null;
      sessionPid = null;
      return s ? s.close() : null;
    },
    async exec(req: ExecRequest): Promise<ExecResult> {
      const { argv, env, limits, workspace, guard, cg, fd3, asRoot, scan, marker } = await prepare(req);

      const tracked = new Map<number, string | null>();
      let leader: number | undefined;
      let leaderStart = Number.NaN;
      const track = () => {
        if (leader) for (const d of descendants(leader)) tracked.set(d.pid, d.start);
      };
      const cpuBudgetMs = limits.cpuSeconds * 1000;
      const startedAt = Date.now();
      let result: ExecResult;
      let violations: string[] = [];
      try {
        const r = await spawnCapped({
          argv,
          cwd: req.cwd,
          env,
          timeoutMs: req.timeoutMs,
          outputCapBytes: req.outputCapBytes ?? opts.outputCapBytes ?? DEFAULT_OUTPUT_CAP,
          signal: req.signal,
          fd3Input: fd3,
          maxOutputBytes: limits.outputBytes,
          onStart: async (p) => {
            leader = p.pid;
            leaderStart = Number(p.procStart ?? Number.NaN);
            await req.onStart?.(p);
          },
          watch: {
            intervalMs: 200,
            check: () => {
              if (scan) track();
              const cpu = cg?.cpuMs();
              return cpu != null && cpu > cpuBudgetMs ? "cpu" : null;
            },
          },
          killTree: () => {
            cg?.killAll();
            if (scan) {
              track();
              if (marker && Number.isFinite(leaderStart)) {
                for (const d of processesWithEnv(`${COMMAND_TAG_VAR}=${marker}`, leaderStart)) tracked.set(d.pid, d.start);
              }
              for (const [pid, start] of tracked) {
                if (start !== null && readProcStart(pid) === start) {
                  try {
                    process.kill(pid, "SIGKILL");
                  } catch {
                    // gone
                  }
                }
              }
            }
          },
        });
        const usage = { cpuMs: cg?.cpuMs() ?? null, memoryPeakBytes: cg?.memoryPeak() ?? null };
        const limit = whichLimit({
          exitCode: r.exitCode,
          signal: r.signal,
          stderr: r.stderr,
          timedOut: r.timedOut,
          stoppedFor: r.stoppedFor,
          oomKills: cg?.oomKills() ?? 0,
          pidsRefused: cg?.pidsRefused() ?? 0,
        });
        const { stoppedFor: _stopped, ...rest } = r;
        if (asRoot) {
          // Every process of the command is gone (killTree ran): clear what it left set-uid.
          const cleared = clearNewSetid(workspace, startedAt);
          if (cleared.length) {
            rest.stderr +=
              `${rest.stderr && !rest.stderr.endsWith("\n") ? "\n" : ""}ledgerloop: cleared the set-uid/set-gid bits of ${cleared.slice(0, 10).join(", ")}` +
              `${cleared.length > 10 ? ` and ${cleared.length - 10} more` : ""} (a command running as root may not leave privileged programs behind)\n`;
          }
        }
        result = { ...rest, isolation: level, limit, denied: null, usage };
      } finally {
        // Also kills whatever is left, whatever happened above.
        cg?.destroy();
        // Only now is no process of the command left to undo the repairs.
        violations = guard.after().violations;
      }
      if (violations.length) {
        result.stderr += `${result.stderr && !result.stderr.endsWith("\n") ? "\n" : ""}${violations.map((v) => `ledgerloop: ${v}\n`).join("")}`;
        result.violations = violations;
      }
      return result;
    },
  };
}

/** Protected paths without those already covered by a protected directory above them. */
function mergeProtected(paths: string[]): string[] {
  const sorted = [...new Set(paths)].sort((a, b) => a.length - b.length);
  const out: string[] = [];
  for (const p of sorted) if (!out.some((q) => p.startsWith(`${q}/`))) out.push(p);
  return out;
}

export interface LocalSandboxOptions {
  outputCapBytes?: number;
  limits?: Partial<Limits>;
  pidNamespace?: boolean;
}

/**
 * Runs commands directly on the host with only limits and a scrubbed environment: isolation level
 * "none". Same as `createSandbox({ level: "none" })`.
 */
export function createLocalSandbox(opts: LocalSandboxOptions = {}): Sandbox {
  return createSandbox({ level: "none", outputCapBytes: opts.outputCapBytes, limits: opts.limits, pidNamespace: opts.pidNamespace });
}
