import { spawn, type ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import type { WorkspaceGuard } from "./git-guard.js";
import type { CommandCgroups } from "./limits.js";
import { COMMAND_TAG_VAR, descendants, isRunning, processesWithEnv, readProcStart } from "../proc.js";
import { clearNewSetid } from "./setid.js";

// A long-lived process that the runtime talks to over its stdin and stdout (an MCP server), started
// by the sandbox exactly like a command (executor.ts `startServer`): same wrapper, limits, isolation,
// seccomp filter and PID namespace. What a command gets once, around its one run, a server gets
// around each request it answers (`around`): the workspace guard's before/after and the set-id
// clean-up. Stopping it ends every process it started, and is awaited: close() resolves once they
// are gone, not when a timer may fire later.

/** How a server is started and cleaned up; built by the sandbox. */
export interface ServerSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** Bytes the child can read from fd 3 (a pipe closed after them): bwrap's seccomp filter. */
  fd3Input?: Uint8Array;
  /** Kills every process of it that left its process tree (cgroups, the tag scan at level none). */
  killTree?: () => void;
  /** Before each request: what the workspace guard compares against. */
  beforeCall: () => void;
  /** After each request (and once more when it is gone): what was undone, one sentence each. */
  afterCall: (sinceMs: number) => string[];
  /** Called once when it and its tree are gone. */
  onGone?: () => void;
  /** Whether the start of its stderr says its sandbox's set-up failed before anything of it ran, on a mask that vanished. */
  setupRaced?: (stderrHead: string) => boolean;
}

export interface ServerExit {
  exitCode: number | null;
  signal: string | null;
}

/** What the executor's `prepare` made for a server (the argv through the wrapper at the run's level, and the rest). */
export interface PreparedServer {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  fd3: Buffer | undefined;
  cg: CommandCgroups | null;
  guard: WorkspaceGuard;
  /** It runs as uid 0 on the host's files without the seccomp filter: set-id bits are cleared after each request. */
  asRoot: boolean;
  /** Level none without cgroups: its processes are found by the tag in their environment. */
  scan: boolean;
  marker: string | null;
  workspace: string;
  setpriv: string | undefined;
}

/** The spec of a server prepared like a command: the guard and set-id clean-up around each request, as `exec` does around a command. */
export function serverSpec(p: PreparedServer): ServerSpec {
  return {
    // The runner's death (even by SIGKILL) kills the first process; its PID namespace, where it
    // has one (every level, "none" as root), takes every other process with it.
    argv: p.setpriv ? [p.setpriv, "--pdeathsig", "SIGKILL", "--", ...p.argv] : p.argv,
    cwd: p.cwd,
    env: p.env,
    fd3Input: p.fd3,
    killTree: () => {
      p.cg?.killAll();
      if (!p.scan || !p.marker) return;
      for (const d of processesWithEnv(`${COMMAND_TAG_VAR}=${p.marker}`, 0)) signal(d.pid, "SIGKILL");
    },
    beforeCall: () => p.guard.before(),
    afterCall: (since) => {
      const cleared = p.asRoot ? clearNewSetid(p.workspace, since) : [];
      const notes = cleared.length
        ? [
            `cleared the set-uid/set-gid bits of ${cleared.slice(0, 10).join(", ")}${cleared.length > 10 ? ` and ${cleared.length - 10} more` : ""} (a server running as root may not leave privileged programs behind)`,
          ]
        : [];
      return [...notes, ...p.guard.after().violations];
    },
    onGone: () => p.cg?.destroy(),
  };
}

/** Servers not yet stopped: killed when the runner exits without stopping them. */
const LIVE = new Set<ServerProcess>();
let exitHook = false;

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone
  }
}

/** A sandboxed server process; see the module comment. */
export class ServerProcess {
  readonly pid: number;
  readonly startedAt = Date.now();
  readonly exited: Promise<ServerExit>;
  exit: ServerExit | null = null;
  private readonly child: ChildProcess;
  private stopping: Promise<void> | null = null;
  /** What the clean-up after the server's end undid, for whoever asks next (drainNotes). */
  private leftNotes: string[] = [];
  /** Every process of the tree seen so far (pid → start time), to kill and to wait for. */
  private readonly seen = new Map<number, string | null>();

  constructor(private readonly spec: ServerSpec) {
    const [file, ...args] = spec.argv;
    this.child = spawn(file!, args, {
      cwd: spec.cwd,
      env: spec.env,
      // Its own process group, as every command: killNow's group signal reaches all that stayed in it.
      detached: true,
      stdio: spec.fd3Input ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"],
    });
    this.pid = this.child.pid ?? -1;
    if (this.pid > 0) this.seen.set(this.pid, readProcStart(this.pid));
    // A server gone before reading its input must not turn EPIPE into an uncaught error.
    for (const s of [this.child.stdin, this.child.stdio[3] as Writable | null]) s?.on("error", () => {});
    if (spec.fd3Input) (this.child.stdio[3] as Writable).end(spec.fd3Input);
    this.exited = new Promise<ServerExit>((resolve) => {
      const done = (exitCode: number | null, sig: string | null) => {
        this.exit ??= { exitCode, signal: sig };
        resolve(this.exit);
      };
      this.child.once("exit", (code, sig) => done(code, sig));
      this.child.once("error", () => done(127, null));
    });
    // A server that exits on its own may leave children: they go with it.
    void this.exited.then(() => this.stop(0));
    LIVE.add(this);
    if (!exitHook) {
      exitHook = true;
      // The runner exits without having closed it (a crash path, process.exit): synchronous kills
      // only. A SIGKILLed runner runs no hook at all; the parent-death signal the executor sets on
      // the server's first process covers that, and the PID namespace takes the rest with it.
      process.on("exit", () => {
        for (const s of LIVE) s.killNow();
      });
    }
  }

  /** It exited because its sandbox's set-up met a mask that vanished meanwhile (given the start of its stderr): nothing of it ran. */
  setupRaced(stderrHead: string): boolean {
    return this.exit?.exitCode === 1 && (this.spec.setupRaced?.(stderrHead) ?? false);
  }

  get stdin(): Writable {
    return this.child.stdin!;
  }

  get stdout(): Readable {
    return this.child.stdout!;
  }

  get stderr(): Readable {
    return this.child.stderr!;
  }

  /** Starts a server; resolves once its process exists, rejects if it could not be started. */
  static async start(spec: ServerSpec): Promise<ServerProcess> {
    const s = new ServerProcess(spec);
    await s.spawned();
    return s;
  }

  /** Listens for the spawn failing (e.g. the wrapper's shell missing). */
  onError(fn: (err: Error) => void): void {
    this.child.on("error", fn);
  }

  private spawned(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.child.pid) return resolve();
      this.child.once("spawn", () => resolve());
      this.child.once("error", reject);
    });
  }

  /**
   * Runs one request to the server between the guard's before and after (as a command runs
   * between them); what the guard and the set-id clean-up undid is pushed onto `notes`.
   */
  async around<T>(fn: () => Promise<T>, notes: string[]): Promise<T> {
    const since = Date.now();
    this.spec.beforeCall();
    try {
      return await fn();
    } finally {
      // A daemon it started for this request is remembered while still under it.
      this.track();
      notes.push(...this.spec.afterCall(since), ...this.drainNotes());
    }
  }

  /** What the clean-up when the server ended undid and nobody was told yet. */
  drainNotes(): string[] {
    return this.leftNotes.splice(0);
  }

  /**
   * Ends the server and every process it started: stdin closed and SIGTERM to each of them, then
   * after `graceMs` SIGKILL to all, and waits (a few seconds at most) until none is left.
   */
  stop(graceMs = 2000): Promise<void> {
    this.stopping ??= this.stopNow(graceMs);
    return this.stopping;
  }

  private async stopNow(graceMs: number): Promise<void> {
    this.track();
    this.child.stdin?.destroy();
    // The processes under the leader first: the leader (unshare, bwrap) then reaps them and exits.
    for (const pid of this.seen.keys()) if (pid !== this.pid) signal(pid, "SIGTERM");
    if (this.seen.size <= 1 && this.pid > 0) signal(-this.pid, "SIGTERM");
    if (!this.exit && graceMs > 0) await Promise.race([this.exited, sleep(graceMs)]);
    this.killNow();
    await Promise.race([this.exited, sleep(5000)]);
    // The leader's exit does not wait for the namespace: its init may still be taking the others down.
    for (let i = 0; i < 250 && this.anyLeft(); i++) {
      if (i % 25 === 24) this.killNow();
      await sleep(20);
    }
    LIVE.delete(this);
    for (const s of [this.child.stdout, this.child.stderr]) s?.destroy();
    try {
      this.leftNotes.push(...this.spec.afterCall(this.startedAt));
    } catch {
      // best effort: the last request's clean-up already ran
    }
    try {
      this.spec.onGone?.();
    } catch {
      // best effort
    }
  }

  /** SIGKILL to the whole tree, synchronously. */
  killNow(): void {
    this.track();
    if (this.pid > 0) signal(-this.pid, "SIGKILL");
    for (const [pid, start] of this.seen) if (readProcStart(pid) === start) signal(pid, "SIGKILL");
    try {
      this.spec.killTree?.();
    } catch {
      // best effort
    }
  }

  /** Adds the tree's current processes to those it must end (a daemon reparented inside its PID namespace is still under it). */
  private track(): void {
    if (this.pid > 0 && isRunning(this.pid)) for (const d of descendants(this.pid)) this.seen.set(d.pid, d.start);
  }

  private anyLeft(): boolean {
    for (const [pid, start] of this.seen) if (isRunning(pid, start)) return true;
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
