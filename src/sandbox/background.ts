import fs from "node:fs";
import { spawnGroupLeader } from "./spawn.js";
import { descendants, readProcStart } from "../proc.js";

// A long-lived process of a run (a dev server, a database): spawned like a command, through the
// same wrapper (cgroups, rlimits, isolation), but not waited for. Its output is kept in a bounded
// ring of lines; it ends when stopped, when it exits on its own, or with the run's session.

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // gone
  }
}

/** The last lines of a stream, bounded in lines and in bytes; a line longer than `maxLineBytes` is cut. */
export class LineRing {
  private lines: string[] = [];
  private bytes = 0;
  private partial = "";
  /** Lines dropped from the front so far. */
  dropped = 0;
  /** Every line ever pushed, dropped ones included. */
  total = 0;

  constructor(
    readonly maxLines = 500,
    readonly maxBytes = 256 * 1024,
    readonly maxLineBytes = 4096,
  ) {}

  /** Adds a chunk of output; returns the complete lines it finished. */
  push(chunk: string): string[] {
    const text = this.partial + chunk;
    const parts = text.split("\n");
    this.partial = parts.pop() ?? "";
    if (this.partial.length > this.maxLineBytes) {
      parts.push(this.partial);
      this.partial = "";
    }
    for (const p of parts) this.add(p);
    return parts.map((p) => this.cut(p));
  }

  /** Ends the stream: a last line without a newline counts too. */
  flush(): void {
    if (this.partial) this.add(this.partial);
    this.partial = "";
  }

  private cut(line: string): string {
    return line.length > this.maxLineBytes ? `${line.slice(0, this.maxLineBytes)}… (line cut)` : line;
  }

  private add(raw: string): void {
    const line = this.cut(raw);
    this.lines.push(line);
    this.bytes += line.length + 1;
    this.total++;
    while (this.lines.length > this.maxLines || (this.bytes > this.maxBytes && this.lines.length > 1)) {
      this.bytes -= this.lines.shift()!.length + 1;
      this.dropped++;
    }
  }

  /** The kept lines (the unfinished last one too), oldest first; `tail` keeps only the newest n. */
  snapshot(tail?: number): string[] {
    const all = this.partial ? [...this.lines, this.cut(this.partial)] : [...this.lines];
    return tail !== undefined ? all.slice(Math.max(0, all.length - tail)) : all;
  }
}

export interface BackgroundSpec {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  fd3Input?: Uint8Array;
  /** Kills every process of it, also outside its process group (cgroups). */
  killTree?: () => void;
  /** Called once when it has exited and its tree is gone (cleanup: cgroups, workspace guard). */
  onGone?: () => void;
  ring?: LineRing;
  /** Whether its output says its sandbox's set-up failed before anything of it ran, on a mask that vanished. */
  setupRaced?: (output: string) => boolean;
}

export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
  at: number;
}

/** A process running in the background of a run. */
export class BackgroundProcess {
  readonly output: LineRing;
  readonly pid: number;
  readonly procStart: string | null;
  readonly startedAt = Date.now();
  exit: ProcessExit | null = null;
  readonly exited: Promise<ProcessExit>;
  /** Resolves once its stdout and stderr have closed: all it wrote is in `output` (a daemon holding them keeps it pending). */
  readonly outputEnded: Promise<void>;
  private listeners = new Set<(line: string) => void>();
  private stopping = false;

  constructor(private readonly spec: BackgroundSpec) {
    this.output = spec.ring ?? new LineRing();
    const child = spawnGroupLeader(spec);
    this.pid = child.pid ?? -1;
    this.procStart = child.pid ? readProcStart(child.pid) : null;
    const onData = (d: Buffer) => {
      for (const line of this.output.push(d.toString("utf8"))) for (const l of this.listeners) l(line);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    const closed = (st: NodeJS.ReadableStream | null | undefined) => (st ? new Promise<void>((r) => st.once("close", () => r())) : Promise.resolve());
    this.outputEnded = Promise.all([closed(child.stdout), closed(child.stderr)]).then(() => this.output.flush());
    this.exited = new Promise<ProcessExit>((resolve) => {
      const done = (code: number | null, sig: string | null) => {
        if (this.exit) return;
        this.output.flush();
        // Whatever it left running (a daemonised child) goes with it.
        if (this.pid > 0) killGroup(this.pid, "SIGKILL");
        try {
          spec.killTree?.();
        } catch {
          // best effort
        }
        this.exit = { exitCode: code, signal: sig, at: Date.now() };
        try {
          spec.onGone?.();
        } catch {
          // cleanup is best effort
        }
        resolve(this.exit);
      };
      child.once("exit", (code, sig) => done(code, sig));
      child.once("error", () => done(127, null));
    });
    // Neither the child nor its pipes keep the runner alive: the session ends it.
    child.unref?.();
    void child.catch?.(() => {});
  }

  /** Calls `fn` with every new complete output line until the returned function is called. */
  onLine(fn: (line: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  get running(): boolean {
    return this.exit === null;
  }

  /** It exited because its sandbox's set-up met a mask that vanished meanwhile: nothing of it ran, it may be started again. */
  get setupRaced(): boolean {
    return this.exit?.exitCode === 1 && (this.spec.setupRaced?.(this.output.dropped === 0 ? (this.output.snapshot()[0] ?? "") : "") ?? false);
  }

  /** SIGTERM to its process group, SIGKILL to all of it after `graceMs`; resolves once it is gone. */
  async stop(graceMs = 2000): Promise<ProcessExit> {
    if (this.exit) return this.exit;
    if (!this.stopping) {
      this.stopping = true;
      // The processes under the leader first: the leader (nsenter, unshare) then reaps them and
      // exits by itself. Killed with them, it would leave them to the host's init to reap, and a
      // session's PID namespace cannot end before they are reaped.
      const kids = this.pid > 0 ? descendants(this.pid) : [];
      if (kids.length) {
        for (const k of kids) {
          try {
            process.kill(k.pid, "SIGTERM");
          } catch {
            // gone
          }
        }
      } else if (this.pid > 0) killGroup(this.pid, "SIGTERM");
      const t = setTimeout(() => {
        if (this.pid > 0) killGroup(this.pid, "SIGKILL");
        try {
          this.spec.killTree?.();
        } catch {
          // best effort
        }
      }, graceMs);
      void this.exited.then(() => clearTimeout(t));
    }
    return this.exited;
  }
}

/**
 * TCP ports in LISTEN state in the network namespace of `pid` ("self": the runner's), from
 * /proc/<pid>/net/tcp{,6}: a ready check that needs no connection into the session's namespace.
 */
export function listeningPorts(pid: number | "self"): Set<number> {
  const out = new Set<number>();
  for (const f of ["tcp", "tcp6"]) {
    let text = "";
    try {
      text = fs.readFileSync(`/proc/${pid}/net/${f}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      // st 0A = LISTEN
      if (cols.length > 3 && cols[3] === "0A") out.add(parseInt(cols[1]!.split(":")[1]!, 16));
    }
  }
  return out;
}
