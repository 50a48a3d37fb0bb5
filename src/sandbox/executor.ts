import os from "node:os";
import path from "node:path";
import { ConfigError } from "../errors.js";
import { bwrapProbeArgv, detectIsolation, findProgram, probeOk, verifyCachedLevel, type IsolationReport } from "./detect.js";
import {
  bwrapArgv,
  DEFAULT_HIDDEN_HOST,
  DEFAULT_HIDDEN_IN_HOME,
  DEFAULT_PROTECTED,
  hiddenPaths,
  MASK_RACE_ATTEMPTS,
  mergeProtected,
  planUid,
  protectedPaths,
  unshareArgv,
  unshareEnv,
  vanishedMask,
  wrapperArgv,
  type IsolationLevel,
  type Tools,
  type UidPlan,
  type WrapInput,
} from "./isolation.js";
import { CommandCgroups, detectCgroups, resolveLimits, rlimitScript, whichLimit, type CgroupSupport, type Limits } from "./limits.js";
import { noneNamespacePrefix } from "./none-pidns.js";
import type { BackgroundRequest, ExecRequest, ExecResult, Sandbox, ServerRequest } from "./port.js";
import { COMMAND_TAG_VAR, descendants, processesWithEnv, readProcStart, tasksOfUid } from "../proc.js";
import { WorkspaceGuard } from "./git-guard.js";
import { buildSeccompFilter } from "./seccomp.js";
import { BackgroundProcess, LineRing, listeningPorts } from "./background.js";
import { ServerProcess, serverSpec } from "./server-process.js";
import { SandboxSession } from "./session.js";
import { BackgroundSetid, clearNewSetid, setidNote } from "./setid.js";

export { COMMAND_TAG_VAR, readProcStart } from "../proc.js";
export { DEFAULT_OUTPUT_CAP, ENV_ALLOW, commandEnv, killGroup, killOrphan, spawnCapped, stopLeftovers, type SpawnOutcome, type SpawnSpec } from "./spawn.js";
import { DEFAULT_OUTPUT_CAP, commandEnv, loadSpawner, spawnCapped } from "./spawn.js";

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
  /** Resolves once the level is known to work in this process; rejects when a cached level fails now (detect.ts). */
  verified(): Promise<void>;
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
    // The cache only vouches for bwrap: a level named explicitly is probed for real.
    if (want !== "auto" && want !== "bwrap" && report.source === "cache" && report.cacheFile) {
      report = detectIsolation({ refresh: true, cacheDir: path.dirname(report.cacheFile) });
    }
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
    reasons = [
      ...reasons,
      `none: ${noneNs ? noneNs.reason : "no PID namespace (turned off for this sandbox): a process that leaves the command's process group, cgroups and tree, and drops LEDGERLOOP_COMMAND from its environment, can outlive the command"}`,
    ];
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
        ok = probeOk([
          tools.setpriv,
          `--reuid=${plan.uid}`,
          `--regid=${plan.gid}`,
          "--clear-groups",
          "--",
          ...bwrapProbeArgv(tools, report.disableUserns, false),
        ]);
        uidProbeCache.set(key, ok);
      }
      if (!ok)
        plan = { kind: "root-userns", uid: 0, gid: 0, reason: `${plan.reason}, but bwrap cannot run as uid ${plan.uid}: uid 0 without capabilities instead` };
    }
    if (plan.kind === "root-userns") {
      // Only bwrap adds a user namespace; doctor must not claim one at unshare.
      plan = {
        ...plan,
        reason: `${plan.reason}${level === "bwrap" ? " in a user namespace (65534 inside)" : " (no user namespace at this level: the uid stays 0)"}`,
      };
    }
    return plan;
  };

  const backgroundSetid = new BackgroundSetid();
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

  /**
   * Everything a command needs to start (argv through the wrapper, env, cgroups), at this level:
   * the one place a command, a background process and a server are wrapped. A server stays out of
   * the run's session: it serves every run of the runtime, and a session ends with each pause.
   */
  let verifying: Promise<void> | null = null;
  const verified = (): Promise<void> => (verifying ??= report ? verifyCachedLevel(report, level) : Promise.resolve());

  const prepare = async (req: Omit<ExecRequest, "timeoutMs"> & Pick<ServerRequest, "ownEnv">, background = false, server = false) => {
    // No command runs under a level taken from the probe cache before it passed a probe here.
    await verified();
    const limits = req.limits ? resolveLimits(defaults, req.limits) : defaults;
    const workspace = path.resolve(req.workspace ?? opts.workspace ?? req.cwd);
    const guard = guardOf(workspace);
    guard.before();
    const allowNetwork = req.allowNetwork ?? opts.allowNetwork ?? false;
    // In the run's session (bwrap/unshare): its network namespace unless this command may use the
    // host's network, and always its PID namespace, which ends every process with the session.
    // A session that cannot be made (util-linux without nsenter, namespaces refused) leaves
    // commands their own namespaces, as without sessions; a background process needs it (throws).
    const sess = level !== "none" && opts.session && !server ? await sessionFor().catch((err: unknown) => (background ? Promise.reject(err) : null)) : null;
    const enter = sess ? sess.enterPrefix({ net: !allowNetwork }) : [];
    const made = Object.keys(cgroups.parents).length ? CommandCgroups.create(cgroups, limits) : null;
    const cg = made && made.joinFiles().length ? made : null;
    const hasPidsCgroup = cg?.has("pids") ?? false;
    // Without a cgroup or a PID namespace, descendants are found through /proc while the
    // command runs, so that children which left the process group can still be killed; a daemon
    // that double-forks out of the tree before the first scan is found by this variable.
    const scan = !cg && level === "none";
    const marker = req.tag ?? (scan ? `${process.pid}.${++commandSeq}` : null);
    const env = { ...commandEnv(req.env), ...(req.ownEnv ?? {}), ...(marker ? { [COMMAND_TAG_VAR]: marker } : {}) };

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
    return { argv, env, limits, workspace, guard, cg, fd3, asRoot, scan, marker, sess };
  };

  /** One start of a command; `exec` starts it again when bwrap's set-up met a vanished mask. */
  const execOnce = async (req: ExecRequest): Promise<{ result: ExecResult; argv: string[] }> => {
    const { argv, env, limits, workspace, guard, cg, fd3, asRoot, scan, marker, sess } = await prepare(req);

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
      const oomKills = cg?.oomKills() ?? 0;
      const limit = whichLimit({
        exitCode: r.exitCode,
        signal: r.signal,
        stderr: r.stderr,
        timedOut: r.timedOut,
        stoppedFor: r.stoppedFor,
        oomKills,
        pidsRefused: cg?.pidsRefused() ?? 0,
      });
      const { stoppedFor: _stopped, ...rest } = r;
      // Every process of the command is gone (killTree ran): clear what it (or a background
      // process running as root) left set-uid.
      const since = backgroundSetid.since(workspace, startedAt) ?? (asRoot ? startedAt : null);
      if (since !== null) {
        const cleared = clearNewSetid(workspace, since);
        if (cleared.length) rest.stderr = withNotes(rest.stderr, [setidNote(cleared)]);
      }
      result = { ...rest, isolation: level, limit, denied: null, usage };
      // Killed with the whole session (its holder died: killed from outside, or the runner's end
      // of its watchdog pipe closed), not by anything the command did or by a limit of ours.
      if (sess && r.signal && !limit && !req.signal?.aborted && sess.ended()) {
        result.sessionEnded = true;
        result.stderr = withNotes(result.stderr, [
          "the run's sandbox session ended while this command ran (its PID namespace was killed, with every process in it); " +
            "the next command starts in a new session",
        ]);
      } else if (
        !limit &&
        !r.timedOut &&
        !req.signal?.aborted &&
        (r.signal === "SIGKILL" || r.exitCode === 128 + 9) &&
        cg?.has("memory") &&
        cg.has("cpuacct") &&
        oomKills === 0 &&
        usage.cpuMs !== null &&
        usage.cpuMs < cpuBudgetMs
      ) {
        // A SIGKILL is what the OOM killer and the hard CPU rlimit send, but here the command's
        // cgroups saw neither (every OOM kill, the machine's own included, is counted in the
        // victim's memory group): someone outside killed it, and a limit is not what to change.
        result.limitsRuledOut = true;
        result.stderr = withNotes(result.stderr, [
          `no limit of the sandbox stopped this command (its cgroups counted no OOM kill and ${(usage.cpuMs / 1000).toFixed(1)} s of CPU); ` +
            "the SIGKILL came from outside it",
        ]);
      }
    } finally {
      // Also kills whatever is left, whatever happened above.
      cg?.destroy();
      // Only now is no process of the command left to undo the repairs.
      violations = guard.after().violations;
    }
    if (violations.length) {
      result.stderr = withNotes(result.stderr, violations);
      result.violations = violations;
    }
    return { result, argv };
  };

  return {
    level,
    reasons,
    report,
    uidFor,
    verified,
    async startBackground(req: BackgroundRequest): Promise<BackgroundProcess> {
      await loadSpawner();
      const { argv, env, cg, fd3, guard, scan, marker, asRoot, workspace } = await prepare(req, true);
      const sweepSetid = asRoot ? backgroundSetid.started(workspace, Date.now()) : null;
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
        setupRaced: (output) => level === "bwrap" && vanishedMask(argv, output) !== null,
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
          const cleared = sweepSetid?.() ?? [];
          if (cleared.length) ring.push(`ledgerloop: ${setidNote(cleared)}\n`);
          for (const v of guard.after().violations) ring.push(`ledgerloop: ${v}\n`);
        },
      });
    },
    async startServer(req: ServerRequest): Promise<ServerProcess> {
      const prepared = await prepare(req, false, true);
      return ServerProcess.start({
        ...serverSpec({ ...prepared, cwd: req.cwd, setpriv: tools.setpriv ?? findProgram("setpriv") }),
        setupRaced: (head) => level === "bwrap" && vanishedMask(prepared.argv, head) !== null,
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
      for (let attempt = 1; ; attempt++) {
        const { result, argv } = await execOnce(req);
        // bwrap stopped before running anything: a host socket (or hidden file) it was to mask went away.
        if (attempt < MASK_RACE_ATTEMPTS && level === "bwrap" && result.exitCode === 1 && vanishedMask(argv, result.stderr)) continue;
        return result;
      }
    },
  };
}

/** `stderr` with one `ledgerloop: …` line per note after it, on a line of their own. */
function withNotes(stderr: string, notes: readonly string[]): string {
  return `${stderr}${stderr && !stderr.endsWith("\n") ? "\n" : ""}${notes.map((n) => `ledgerloop: ${n}\n`).join("")}`;
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
