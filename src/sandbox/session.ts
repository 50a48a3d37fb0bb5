import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { ConfigError } from "../errors.js";
import { findProgram } from "./detect.js";
import { isExiting, isRunning, readProcStart } from "../proc.js";

// One sandbox session per run: a network namespace (its own loopback) and a PID namespace that
// every command of the run enters, so that a server one command starts in the background is
// reachable on 127.0.0.1 from the next, and nothing outside the run reaches it.
//
// The session is a holder process: `unshare --net --pid --fork` with a `sh` as the first process
// (PID 1) of the new PID namespace. Commands enter its namespaces with `nsenter` and then build
// their own confinement (mounts, a nested PID namespace, limits) as they always did. When the
// holder's sh ends, the kernel kills every process of the namespace, the nested ones included:
// that is the teardown, and it needs nothing from the runner. Three ways the holder ends:
// - close(): the runner kills it (finish, pause, interrupt);
// - the runner dies, even by SIGKILL: `setpriv --pdeathsig SIGKILL` kills `unshare`, whose
//   `--kill-child` kills the sh;
// - the watchdog: the sh reads its stdin, a pipe only the runner holds; when the runner is gone
//   (whatever killed it, and even if the parent-death signal was lost, e.g. the spawning thread
//   ended), the read returns and the sh exits.

const HOLDER_SCRIPT = [
  // The loopback of a new network namespace is down.
  'if [ -n "$1" ]; then "$1" link set lo up || { echo "ledgerloop: cannot bring up lo in the session" >&2; exit 3; }; fi',
  "echo ready",
  // Watchdog: returns when the runner's end of the pipe closes.
  "read _ || true",
  "exit 0",
].join("\n");

export interface SessionTools {
  sh: string;
  unshare?: string;
  setpriv?: string;
  ip?: string;
  nsenter?: string;
}

export interface SessionOptions {
  /** The session's own network namespace; false shares the host's network (allowNetwork). */
  net: boolean;
  /** Create a user namespace too (a non-root runner cannot create the others without one). */
  user?: boolean;
}

/** The holder of a run's namespaces; see the module comment. */
export class SandboxSession {
  /** Host pid of the holder's sh (PID 1 of the session's PID namespace). */
  readonly pid: number;
  readonly procStart: string | null;
  /** How long creating the session took (ms). */
  readonly startMs: number;
  private closed = false;

  private constructor(
    private readonly child: ChildProcess,
    pid: number,
    private readonly tools: SessionTools & { nsenter: string },
    private readonly opts: SessionOptions,
    startMs: number,
  ) {
    this.pid = pid;
    this.procStart = readProcStart(pid);
    this.startMs = startMs;
  }

  /** Starts a holder and waits until its namespaces exist and its loopback is up. */
  static async open(tools: SessionTools, opts: SessionOptions): Promise<SandboxSession> {
    const t0 = performance.now();
    const unshare = tools.unshare ?? findProgram("unshare");
    const setpriv = tools.setpriv ?? findProgram("setpriv");
    const nsenter = tools.nsenter ?? findProgram("nsenter");
    if (!unshare || !setpriv || !nsenter) {
      throw new ConfigError(
        `a sandbox session needs unshare, setpriv and nsenter (util-linux); missing: ${[!unshare && "unshare", !setpriv && "setpriv", !nsenter && "nsenter"].filter(Boolean).join(", ")}`,
      );
    }
    const user = opts.user ?? (process.getuid?.() ?? 0) !== 0;
    const argv = [setpriv, "--pdeathsig", "SIGKILL", "--", unshare];
    if (user) argv.push("--user", "--map-root-user");
    if (opts.net) argv.push("--net");
    argv.push(
      "--pid",
      "--fork",
      "--kill-child",
      "--",
      tools.sh,
      "-c",
      HOLDER_SCRIPT,
      "ledgerloop-session",
      opts.net ? (tools.ip ?? findProgram("ip") ?? "") : "",
    );
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], detached: true, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    // The runner must not wait for its session to exit, and the pipe must not keep it alive.
    child.unref();
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const ready = await new Promise<boolean>((resolve) => {
      let out = "";
      const timer = setTimeout(() => resolve(false), 10_000);
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("ready\n")) {
          clearTimeout(timer);
          resolve(true);
        }
      });
      child.once("exit", () => {
        clearTimeout(timer);
        resolve(false);
      });
      child.once("error", () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    const holder = ready && child.pid ? firstChild(child.pid) : null;
    if (!holder) {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone
      }
      throw new ConfigError(`could not create the run's sandbox session: ${stderr.trim().split("\n")[0] || "the holder did not start"}`);
    }
    for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as { unref?: () => void } | null)?.unref?.();
    return new SandboxSession(child, holder, { ...tools, nsenter }, { ...opts, user }, performance.now() - t0);
  }

  /** The session is alive: its holder has not exited and is not exiting (a command entered now would die with it). */
  alive(): boolean {
    return !this.closed && !isExiting(this.pid, this.procStart);
  }

  /**
   * The holder is gone, or going, although nobody closed the session: it was killed, or its watchdog
   * fired. "Going" counts: the commands of its namespace die while it is still exiting.
   */
  ended(): boolean {
    return !this.closed && isExiting(this.pid, this.procStart);
  }

  /** The argv prefix that runs the rest of an argv inside the session's namespaces. */
  enterPrefix(opts: { net: boolean }): string[] {
    const a = [this.tools.nsenter, "--target", String(this.pid)];
    if (this.opts.user) a.push("--user", "--preserve-credentials");
    if (opts.net && this.opts.net) a.push("--net");
    a.push("--pid", "--");
    return a;
  }

  /** Whether this session gives commands their own network namespace. */
  get ownNetwork(): boolean {
    return this.opts.net;
  }

  /**
   * Ends the session and every process in it, and waits until the holder is gone; returns how long
   * that took (ms).
   */
  async close(): Promise<number> {
    const t0 = performance.now();
    if (this.closed) return 0;
    this.closed = true;
    try {
      if (this.child.pid) process.kill(-this.child.pid, "SIGKILL");
    } catch {
      // already gone
    }
    try {
      process.kill(this.pid, "SIGKILL");
    } catch {
      // already gone
    }
    this.child.stdin?.destroy();
    for (let i = 0; i < 200 && isRunning(this.pid, this.procStart); i++) await new Promise((r) => setTimeout(r, 10));
    return performance.now() - t0;
  }
}

/** The first child of a process (the forked PID 1 of `unshare --fork`), waiting briefly for it. */
function firstChild(pid: number): number | null {
  try {
    const list = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
    return list.length ? Number(list[0]) : null;
  } catch {
    return null;
  }
}
