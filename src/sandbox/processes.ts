import fs from "node:fs";
import type { BackgroundProcess, ProcessExit } from "./background.js";
import type { BackgroundRequest, Sandbox } from "./port.js";
import { descendants } from "../proc.js";
import { MASK_RACE_ATTEMPTS } from "./isolation.js";

// The background processes of one run (start_process and friends): names, ready checks, bounded
// output, a cap. Ledger events are written by the caller from what these methods return.

export const DEFAULT_MAX_PROCESSES = 8;
export const DEFAULT_READY_TIMEOUT_MS = 30_000;
/** Without a ready check, a process that is still running after this long counts as started. */
const SETTLE_MS = 300;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface StartSpec {
  name: string;
  command: string;
  readyPort?: number;
  readyPattern?: string;
  readyTimeoutMs?: number;
  /** Names its processes for crash recovery (LEDGERLOOP_COMMAND). */
  tag?: string;
  /** The action (or restore) that started it: the cause of its later exit event. */
  cause?: string | null;
}

export type StartFailure = "invalid" | "duplicate" | "cap" | "unsupported" | "ready_timeout" | "exited";

export type StartOutcome =
  | { ok: true; name: string; pid: number; readyMs: number; ports: number[]; matched?: string; lines: string[] }
  | { ok: false; name: string; code: StartFailure; reason: string; lines: string[]; exit?: ProcessExit | null };

export interface ProcessView {
  name: string;
  command: string;
  status: "running" | "exited" | "stopped";
  pid: number;
  ports: number[];
  readyPort?: number;
  readyPattern?: string;
  readyTimeoutMs?: number;
  startedAt: number;
  /** Start order within the run. */
  order: number;
  exit: ProcessExit | null;
  lastLines: string[];
  cause: string | null;
}

interface Entry {
  spec: StartSpec;
  proc: BackgroundProcess;
  order: number;
  stopped: boolean;
  /** An exit on its own was handed out by takeExits(). */
  exitReported: boolean;
}

/** The processes one run started in its sandbox. */
export class ProcessManager {
  private entries = new Map<string, Entry>();
  private order = 0;
  /** Lines the model is told once at the next step (e.g. what a resume restarted). */
  notes: string[] = [];
  /** The processes a resumed branch had running were restarted (once per runtime). */
  restored = false;

  constructor(
    private readonly sandbox: Sandbox,
    private readonly workspace: string,
    readonly maxProcesses = DEFAULT_MAX_PROCESSES,
  ) {}

  /** Starts a process and waits until it is ready (port listening, output matched) or fails (`attempt`: this start's number, see vanishedMask). */
  async start(spec: StartSpec, attempt = 1): Promise<StartOutcome> {
    const fail = (code: StartFailure, reason: string, lines: string[] = [], exit?: ProcessExit | null): StartOutcome => ({
      ok: false,
      name: spec.name,
      code,
      reason,
      lines,
      exit,
    });
    if (!NAME_RE.test(spec.name))
      return fail(
        "invalid",
        `process name "${spec.name.slice(0, 80)}" is not valid: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
      );
    let pattern: RegExp | null = null;
    if (spec.readyPattern !== undefined) {
      try {
        pattern = new RegExp(spec.readyPattern);
      } catch (err) {
        return fail("invalid", `readyPattern is not a valid regular expression: ${(err as Error).message}`);
      }
    }
    const existing = this.entries.get(spec.name);
    if (existing?.proc.running) {
      return fail(
        "duplicate",
        `a process named "${spec.name}" is already running (pid ${existing.proc.pid}, started by: ${existing.spec.command.slice(0, 200)}); stop_process it first or choose another name`,
      );
    }
    const running = this.list().filter((p) => p.status === "running");
    if (running.length >= this.maxProcesses) {
      return fail(
        "cap",
        `at most ${this.maxProcesses} background processes may run at once in a run; running: ${running.map((p) => p.name).join(", ")}. Stop one with stop_process first`,
      );
    }
    if (!this.sandbox.startBackground) return fail("unsupported", `this sandbox (${this.sandbox.level}) cannot run background processes`);
    const t0 = performance.now();
    const req: BackgroundRequest = { command: spec.command, cwd: this.workspace, workspace: this.workspace, tag: spec.tag };
    let proc: BackgroundProcess;
    try {
      proc = await this.sandbox.startBackground(req);
    } catch (err) {
      return fail("unsupported", `could not start "${spec.name}": ${(err as Error).message}`);
    }
    const entry: Entry = { spec, proc, order: ++this.order, stopped: false, exitReported: false };
    this.entries.set(spec.name, entry);
    const timeoutMs = spec.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
    const outcome = await new Promise<{ ready: boolean; matched?: string; why?: "timeout" | "exited" }>((resolve) => {
      let done = false;
      const finish = (v: { ready: boolean; matched?: string; why?: "timeout" | "exited" }) => {
        if (done) return;
        done = true;
        clearInterval(poll);
        clearTimeout(timer);
        off();
        resolve(v);
      };
      const off = proc.onLine((line) => {
        if (pattern?.test(line) && (spec.readyPort === undefined || portsOfProcess(proc.pid).includes(spec.readyPort))) finish({ ready: true, matched: line });
      });
      // Lines printed before the listener was attached.
      const early = pattern ? proc.output.snapshot().find((l) => pattern!.test(l)) : undefined;
      const check = () => {
        if (!proc.running) return finish({ ready: false, why: "exited" });
        const portOk = spec.readyPort === undefined || portsOfProcess(proc.pid).includes(spec.readyPort);
        if (pattern) {
          const seen = early ?? proc.output.snapshot().find((l) => pattern!.test(l));
          if (seen && portOk) finish({ ready: true, matched: seen });
        } else if (spec.readyPort !== undefined) {
          if (portOk) finish({ ready: true });
        } else if (performance.now() - t0 >= SETTLE_MS) {
          finish({ ready: true });
        }
      };
      const poll = setInterval(check, 50);
      const timer = setTimeout(() => finish({ ready: false, why: "timeout" }), timeoutMs);
      void proc.exited.then(() => setTimeout(check, 0));
      check();
    });
    const readyMs = Math.round(performance.now() - t0);
    if (!outcome.ready) {
      if (outcome.why === "timeout") {
        const exit = await proc.stop();
        entry.stopped = true;
        const what = [spec.readyPort !== undefined && `port ${spec.readyPort} listening`, pattern && `output matching /${spec.readyPattern}/`]
          .filter(Boolean)
          .join(" and ");
        return fail("ready_timeout", `"${spec.name}" was not ready after ${timeoutMs} ms (waited for ${what}); it was stopped`, proc.output.snapshot(40), exit);
      }
      // Its last words may still be in the pipe when it has exited.
      await Promise.race([proc.outputEnded, new Promise((r) => setTimeout(r, 500))]);
      // bwrap stopped before running anything: a host socket (or hidden file) it was to mask went away.
      if (proc.setupRaced && attempt < MASK_RACE_ATTEMPTS) {
        this.entries.delete(spec.name);
        return this.start(spec, attempt + 1);
      }
      entry.exitReported = true;
      const exit = proc.exit!;
      return fail("exited", `"${spec.name}" exited before it was ready (${describeExit(exit)})`, proc.output.snapshot(40), exit);
    }
    return { ok: true, name: spec.name, pid: proc.pid, readyMs, ports: portsOfProcess(proc.pid), matched: outcome.matched, lines: proc.output.snapshot(20) };
  }

  /** The process of that name, or an error text naming the known ones. */
  get(name: string): ProcessView | string {
    const e = this.entries.get(name);
    if (!e) {
      const names = [...this.entries.keys()];
      return `no process named "${name.slice(0, 80)}" was started in this run${names.length ? `; known: ${names.join(", ")}` : " (start one with start_process)"}`;
    }
    return this.view(name, e);
  }

  /** Output lines of a process: the newest `tail` (default 50), those matching `grep` when given. */
  output(name: string, opts: { tail?: number; grep?: string } = {}): { lines: string[]; total: number; dropped: number } | string {
    const e = this.entries.get(name);
    if (!e) return this.get(name) as string;
    let lines = e.proc.output.snapshot();
    if (opts.grep !== undefined) {
      let re: RegExp;
      try {
        re = new RegExp(opts.grep);
      } catch (err) {
        return `grep is not a valid regular expression: ${(err as Error).message}`;
      }
      lines = lines.filter((l) => re.test(l));
    }
    const tail = opts.tail ?? 50;
    return { lines: lines.slice(Math.max(0, lines.length - tail)), total: e.proc.output.total, dropped: e.proc.output.dropped };
  }

  /** Stops a process (SIGTERM, then SIGKILL); an error text when unknown. */
  async stop(name: string): Promise<{ view: ProcessView; exit: ProcessExit; wasRunning: boolean } | string> {
    const e = this.entries.get(name);
    if (!e) return this.get(name) as string;
    const wasRunning = e.proc.running;
    if (wasRunning) e.stopped = true;
    const exit = await e.proc.stop();
    return { view: this.view(name, e), exit, wasRunning };
  }

  /** Every process of the run, in start order. */
  list(): ProcessView[] {
    return [...this.entries.entries()].sort((a, b) => a[1].order - b[1].order).map(([n, e]) => this.view(n, e));
  }

  /** Processes that exited on their own since the last call (each handed out once). */
  takeExits(): ProcessView[] {
    const out: ProcessView[] = [];
    for (const [n, e] of this.entries) {
      if (!e.proc.running && !e.stopped && !e.exitReported) {
        e.exitReported = true;
        out.push(this.view(n, e));
      }
    }
    return out;
  }

  /** What the model is shown each step: running processes with ports and last lines, recent exits, notes. */
  describe(lastLines = 3, takeNotes = true): string | null {
    const views = this.list();
    const lines: string[] = [];
    for (const v of views) {
      if (v.status === "stopped") continue;
      if (v.status === "running") {
        lines.push(`- ${v.name}: running (pid ${v.pid}${v.ports.length ? `, listening on ${v.ports.join(", ")}` : ""}) — ${v.command.slice(0, 160)}`);
      } else {
        lines.push(`- ${v.name}: EXITED on its own (${describeExit(v.exit!)}) — ${v.command.slice(0, 160)}`);
      }
      for (const l of v.lastLines.slice(-lastLines)) lines.push(`    | ${l.slice(0, 300)}`);
    }
    const notes = takeNotes ? this.notes.splice(0) : [...this.notes];
    if (!lines.length && !notes.length) return null;
    const level =
      this.sandbox.level === "none"
        ? " (sandbox none: on the host's loopback, reachable from outside the run)"
        : " (the run's own loopback: reachable from your commands as 127.0.0.1)";
    return [`# Background processes${level}`, ...notes, ...lines].join("\n");
  }

  /** Stops every process (the session's teardown covers the isolated levels; at none this is it). */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.entries.values()].map((e) => {
        if (e.proc.running) e.stopped = true;
        return e.proc.stop(500);
      }),
    );
  }

  /** The run ended (finished, paused, stopped): every process stops; a resume restores from the ledger. */
  async endRun(): Promise<void> {
    await this.stopAll();
    this.entries.clear();
    this.restored = false;
  }

  private view(name: string, e: Entry): ProcessView {
    const running = e.proc.running;
    return {
      name,
      command: e.spec.command,
      status: running ? "running" : e.stopped ? "stopped" : "exited",
      pid: e.proc.pid,
      ports: running ? portsOfProcess(e.proc.pid) : [],
      readyPort: e.spec.readyPort,
      readyPattern: e.spec.readyPattern,
      readyTimeoutMs: e.spec.readyTimeoutMs,
      startedAt: e.proc.startedAt,
      order: e.order,
      exit: e.proc.exit,
      lastLines: e.proc.output.snapshot(10),
      cause: e.spec.cause ?? null,
    };
  }
}

/** "exit code 3" / "killed by SIGKILL". */
export function describeExit(x: Pick<ProcessExit, "exitCode" | "signal">): string {
  return x.signal ? `killed by ${x.signal}` : `exit code ${x.exitCode}`;
}

/**
 * TCP ports a process tree listens on: socket inodes held open by the process or a descendant,
 * looked up in the listening sockets of the network namespace they live in.
 */
export function portsOfProcess(pid: number): number[] {
  const tree = [pid, ...descendants(pid).map((d) => d.pid)];
  const inodes = new Set<string>();
  for (const p of tree) {
    let fds: string[] = [];
    try {
      fds = fs.readdirSync(`/proc/${p}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${p}/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {
        // closed meanwhile
      }
    }
  }
  if (!inodes.size) return [];
  const ports = new Set<number>();
  // The deepest process is the command itself, in the run's network namespace.
  for (const p of [...tree].reverse()) {
    let read = false;
    for (const f of ["tcp", "tcp6"]) {
      let text = "";
      try {
        text = fs.readFileSync(`/proc/${p}/net/${f}`, "utf8");
        read = true;
      } catch {
        continue;
      }
      for (const line of text.split("\n").slice(1)) {
        const c = line.trim().split(/\s+/);
        if (c.length > 9 && c[3] === "0A" && inodes.has(c[9]!)) ports.add(parseInt(c[1]!.split(":")[1]!, 16));
      }
    }
    if (read) break;
  }
  return [...ports].sort((a, b) => a - b);
}
