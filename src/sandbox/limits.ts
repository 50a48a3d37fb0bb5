import fs from "node:fs";
import path from "node:path";
import type { CommandLimit } from "../events.js";
import { COMMAND_TAG_VAR, readProcStart } from "../proc.js";

/** Names of the resource limits a command can hit; reported as `ExecResult.limit` (and recorded in its feedback event). */
export type LimitName = CommandLimit;

/** Resource limits of one command. The wall-clock timeout comes with each request. */
export interface Limits {
  /**
   * CPU seconds. Enforced per process with RLIMIT_CPU, and for the whole command (all its processes
   * together) when a cpuacct cgroup is available.
   */
  cpuSeconds: number;
  /** Memory of the whole command (cgroup v1 memory controller; not RLIMIT_AS, which breaks Node). */
  memoryBytes: number;
  /** Processes and threads of the whole command (cgroup pids controller, else RLIMIT_NPROC for a non-root uid). */
  pids: number;
  /** Largest file a command may write (RLIMIT_FSIZE). */
  fileSizeBytes: number;
  /** Bytes of stdout+stderr together after which the command is stopped; what is kept is capped separately. */
  outputBytes: number;
}

export const GiB = 1024 ** 3;
export const MiB = 1024 ** 2;

export const DEFAULT_LIMITS: Limits = {
  cpuSeconds: 300,
  memoryBytes: 2 * GiB,
  pids: 512,
  fileSizeBytes: 1 * GiB,
  outputBytes: 256 * MiB,
};

/** Limits with every field set: `overrides` over `base` over the defaults. */
export function resolveLimits(base?: Partial<Limits>, overrides?: Partial<Limits>): Limits {
  const out = { ...DEFAULT_LIMITS };
  for (const src of [base, overrides]) {
    if (!src) continue;
    for (const [k, v] of Object.entries(src) as Array<[keyof Limits, number | undefined]>) {
      if (v === undefined) continue;
      if (!Number.isFinite(v) || v <= 0) throw new RangeError(`limit ${k} must be a positive number, got ${v}`);
      out[k] = v;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// rlimits: set by the small sh wrapper every command starts in, so they hold from the first
// instruction of the command (setting them on a running pid would race with its first fork).

/**
 * Shell lines (dash-compatible) that set the per-process rlimits. `nproc` is only set when asked:
 * RLIMIT_NPROC counts every task of the uid on the host (`nprocBase` of them exist already), so it
 * is a fallback for when no pids cgroup exists, and it does nothing for uid 0.
 */
export function rlimitScript(limits: Limits, opts: { nproc?: boolean; nprocBase?: number } = {}): string[] {
  const cpu = Math.max(1, Math.ceil(limits.cpuSeconds));
  // Soft below hard: the soft limit sends SIGXCPU, which names the cause; the hard one SIGKILLs.
  const lines = [`ulimit -S -t ${cpu}`, `ulimit -H -t ${cpu + 1}`];
  // dash counts -f in 512-byte blocks.
  lines.push(`ulimit -f ${Math.max(1, Math.floor(limits.fileSizeBytes / 512))}`);
  // RLIMIT_NPROC counts every task of the uid, the user's other programs included: on top of those.
  if (opts.nproc) lines.push(`ulimit -p ${Math.max(1, Math.floor(limits.pids)) + Math.max(0, Math.floor(opts.nprocBase ?? 0))}`);
  return lines;
}

// ---------------------------------------------------------------------------------------------
// cgroup v1

type Controller = "memory" | "pids" | "freezer" | "cpuacct";
const CONTROLLERS: Controller[] = ["memory", "pids", "freezer", "cpuacct"];
const CGROUP_ROOT = "/sys/fs/cgroup";
const PREFIX = "ledgerloop-";

/** Where each usable cgroup v1 controller lets us create per-command groups, and why others are not. */
export interface CgroupSupport {
  /** Directory under which per-command groups are created, per controller; absent when unusable. */
  parents: Partial<Record<Controller, string>>;
  reasons: string[];
}

/** The runner's own cgroup path in each v1 hierarchy (from /proc/self/cgroup). */
function ownCgroups(): Map<string, string> {
  const out = new Map<string, string>();
  let text = "";
  try {
    text = fs.readFileSync("/proc/self/cgroup", "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const c of m[1]!.split(",")) if (c) out.set(c, m[2]!);
  }
  return out;
}

let supportCache: CgroupSupport | null = null;

/**
 * Finds the cgroup v1 controllers we can use. Per-command groups are created *below the runner's
 * own group* in each hierarchy, never at the top: moving a command out of the runner's group would
 * let it escape whatever limits and accounting the runner itself is under (a container, a CI job).
 */
export function detectCgroups(refresh = false): CgroupSupport {
  if (supportCache && !refresh) return supportCache;
  const parents: CgroupSupport["parents"] = {};
  const reasons: string[] = [];
  const own = ownCgroups();
  const isV2Only = fs.existsSync(path.join(CGROUP_ROOT, "cgroup.controllers"));
  for (const c of CONTROLLERS) {
    const mount = path.join(CGROUP_ROOT, c);
    if (isV2Only || !fs.existsSync(path.join(mount, "cgroup.procs"))) {
      reasons.push(
        isV2Only ? `cgroup ${c}: only cgroup v2 is mounted, which ledgerloop does not drive yet` : `cgroup ${c}: no cgroup v1 ${c} hierarchy at ${mount}`,
      );
      continue;
    }
    const parent = path.join(mount, own.get(c) ?? "/");
    const probe = path.join(parent, `${PREFIX}probe-${process.pid}`);
    try {
      fs.mkdirSync(probe);
      fs.rmdirSync(probe);
      parents[c] = parent;
    } catch (err) {
      reasons.push(`cgroup ${c}: cannot create groups under ${parent} (${(err as NodeJS.ErrnoException).code ?? err})`);
    }
  }
  supportCache = { parents, reasons };
  sweepStaleCgroups(parents);
  return supportCache;
}

let seq = 0;

/** A per-command set of cgroups (one per usable controller), created before the command starts. */
export class CommandCgroups {
  readonly dirs: Partial<Record<Controller, string>> = {};

  private constructor() {}

  /** Creates the groups and writes the limits; controllers that fail are left out (never thrown). */
  static create(support: CgroupSupport, limits: Limits): CommandCgroups {
    const g = new CommandCgroups();
    const name = `${PREFIX}${process.pid}-${readProcStart(process.pid) ?? "0"}-${++seq}`;
    for (const [c, parent] of Object.entries(support.parents) as Array<[Controller, string]>) {
      const dir = path.join(parent, name);
      try {
        fs.mkdirSync(dir);
        if (c === "memory") {
          const bytes = String(Math.floor(limits.memoryBytes));
          fs.writeFileSync(path.join(dir, "memory.limit_in_bytes"), bytes);
          // With swap accounting, memory+swap too: otherwise the command swaps instead of stopping.
          const memsw = path.join(dir, "memory.memsw.limit_in_bytes");
          if (fs.existsSync(memsw)) {
            try {
              fs.writeFileSync(memsw, bytes);
            } catch {
              // swap accounting disabled at boot: the file exists but refuses writes
            }
          }
        } else if (c === "pids") {
          fs.writeFileSync(path.join(dir, "pids.max"), String(Math.floor(limits.pids)));
        }
        g.dirs[c] = dir;
      } catch {
        try {
          fs.rmdirSync(dir);
        } catch {
          // not created
        }
      }
    }
    return g;
  }

  /**
   * The files the wrapper joins the groups through before exec'ing the command: `tasks`, written
   * "0" by the (single-threaded) wrapper itself. Moving just the current thread skips the kernel's
   * global threadgroup lock, whose write side waits for an RCU grace period: through cgroup.procs
   * joining cost 10-15 ms per command on our 2-vCPU VMs, through tasks it is free.
   */
  joinFiles(): string[] {
    return Object.values(this.dirs).map((d) => path.join(d, "tasks"));
  }

  has(c: Controller): boolean {
    return this.dirs[c] !== undefined;
  }

  private read(c: Controller, file: string): string | null {
    const dir = this.dirs[c];
    if (!dir) return null;
    try {
      return fs.readFileSync(path.join(dir, file), "utf8");
    } catch {
      return null;
    }
  }

  /** CPU time of all processes of the command so far, in ms (null without cpuacct). */
  cpuMs(): number | null {
    const ns = this.read("cpuacct", "cpuacct.usage");
    return ns === null ? null : Math.round(Number(ns.trim()) / 1e6);
  }

  /** Peak memory of the command in bytes (null without the memory controller). */
  memoryPeak(): number | null {
    const b = this.read("memory", "memory.max_usage_in_bytes");
    return b === null ? null : Number(b.trim());
  }

  /** Processes the kernel OOM-killed in this group. */
  oomKills(): number {
    const t = this.read("memory", "memory.oom_control");
    const m = t && /^oom_kill (\d+)$/m.exec(t);
    if (m) return Number(m[1]);
    // Kernels before 4.13 have no oom_kill line: hitting the limit is the best evidence there is.
    const f = this.read("memory", "memory.failcnt");
    return t && !/oom_kill/.test(t) && f && Number(f) > 0 ? 1 : 0;
  }

  /** Forks refused because pids.max was reached. */
  pidsRefused(): number {
    const t = this.read("pids", "pids.events");
    const m = t && /^max (\d+)$/m.exec(t);
    return m ? Number(m[1]) : 0;
  }

  /**
   * Kills every process of the command, including ones that left its process group or session.
   * Freezing first stops a fork bomb from outrunning the kill loop.
   */
  killAll(): void {
    killCgroupDirs(this.dirs);
  }

  /** Kills what is left and removes the groups. */
  destroy(): void {
    this.killAll();
    removeDirs(this.dirs);
  }
}

/** Blocks the thread briefly: cgroup teardown is synchronous and takes milliseconds at most. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function writeQuiet(file: string, value: string): boolean {
  try {
    fs.writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

function readProcs(dir: string): number[] {
  try {
    return fs.readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function killCgroupDirs(dirs: Partial<Record<Controller, string>>): void {
  const list = Object.values(dirs);
  const any = () => list.some((d) => readProcs(d).length > 0);
  if (!any()) return;
  const freezer = dirs.freezer;
  const frozen = freezer ? writeQuiet(path.join(freezer, "freezer.state"), "FROZEN") : false;
  if (frozen) {
    // FREEZING → FROZEN takes a moment; killing during FREEZING is still fine, signals stay pending.
    for (let i = 0; i < 50; i++) {
      try {
        if (fs.readFileSync(path.join(freezer!, "freezer.state"), "utf8").trim() === "FROZEN") break;
      } catch {
        break;
      }
      sleepSync(1);
    }
  }
  for (let round = 0; round < 100 && any(); round++) {
    for (const d of list) {
      for (const pid of readProcs(d)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    if (frozen && round === 0) writeQuiet(path.join(freezer!, "freezer.state"), "THAWED");
  }
  if (frozen) writeQuiet(path.join(freezer!, "freezer.state"), "THAWED");
}

function removeDirs(dirs: Partial<Record<Controller, string>>): void {
  for (const dir of Object.values(dirs)) {
    // A killed process stays a member until its parent has reaped it: retry briefly.
    for (let i = 0; i < 200; i++) {
      try {
        fs.rmdirSync(dir);
        break;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOENT") break;
        for (const pid of readProcs(dir)) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // gone
          }
        }
        sleepSync(5);
      }
    }
  }
}

/** Tags (`LEDGERLOOP_COMMAND`) of the commands whose leftover processes the sweep below stopped. */
const sweptTags = new Set<string>();

/** Whether the stale-group sweep of this process stopped leftovers of the command tagged `tag`. */
export function sweptCommand(tag: string): boolean {
  return sweptTags.has(tag);
}

function commandTagOf(pid: number): string | null {
  try {
    const env = fs.readFileSync(`/proc/${pid}/environ`, "latin1");
    const entry = env.split("\0").find((e) => e.startsWith(`${COMMAND_TAG_VAR}=`));
    return entry ? entry.slice(COMMAND_TAG_VAR.length + 1) : null;
  } catch {
    return null;
  }
}

/**
 * Removes per-command groups left by runners that died (their pid is gone or was reused), stopping
 * what still runs in them. A resumed run asks `sweptCommand` to tell the model its command was stopped.
 */
function sweepStaleCgroups(parents: CgroupSupport["parents"]): void {
  for (const [c, parent] of Object.entries(parents) as Array<[Controller, string]>) {
    let names: string[] = [];
    try {
      names = fs.readdirSync(parent).filter((n) => n.startsWith(PREFIX));
    } catch {
      continue;
    }
    for (const n of names) {
      const m = /^ledgerloop-(\d+)-(\d+)-\d+$/.exec(n);
      if (!m) continue;
      const pid = Number(m[1]);
      if (pid === process.pid) continue;
      if (readProcStart(pid) === m[2]) continue; // its runner is alive
      const dirs = { [c]: path.join(parent, n) } as Partial<Record<Controller, string>>;
      for (const pid of readProcs(dirs[c]!)) {
        const tag = commandTagOf(pid);
        if (tag) sweptTags.add(tag);
      }
      killCgroupDirs(dirs);
      removeDirs(dirs);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Which limit a finished command hit.

export interface LimitEvidence {
  exitCode: number | null;
  signal: string | null;
  stderr: string;
  timedOut: boolean;
  /** Set when the runner itself stopped the command for a limit (cpu watch, output budget). */
  stoppedFor: LimitName | null;
  oomKills: number;
  pidsRefused: number;
}

// Without a pids cgroup to count refusals, RLIMIT_NPROC shows only in what the shell says.
const FORK_REFUSED = /(?:\bfork|\bclone|Creating new namespace failed|\bspawn\b)[^\n]*(?:Resource temporarily unavailable|EAGAIN)|\bCannot fork\b/;
const SIGXCPU_EXIT = 128 + 24;
const SIGXFSZ_EXIT = 128 + 25;

/**
 * Names the limit that ended a command, or null. Counters from the cgroup are facts; exit statuses
 * 152/153 (a shell's report of SIGXCPU/SIGXFSZ) are only believed together with the shell's message
 * or when nothing else explains them, since a program may exit with any code.
 */
export function whichLimit(e: LimitEvidence): LimitName | null {
  if (e.stoppedFor) return e.stoppedFor;
  const failed = e.exitCode !== 0 || e.signal !== null;
  if (e.oomKills > 0 && failed) return "memory";
  if ((e.pidsRefused > 0 || FORK_REFUSED.test(e.stderr)) && failed) return "pids";
  if (e.timedOut) return "timeout";
  if (!failed) return null;
  if (e.signal === "SIGXCPU" || (e.exitCode === SIGXCPU_EXIT && !/File size limit/.test(e.stderr))) return "cpu";
  if (e.signal === "SIGXFSZ" || e.exitCode === SIGXFSZ_EXIT) return "file_size";
  // Node ignores SIGXFSZ, so its writes fail with EFBIG instead.
  if (/\bEFBIG\b|File too large/.test(e.stderr)) return "file_size";
  return null;
}
