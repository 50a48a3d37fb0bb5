import fs from "node:fs";

/** The variable every process of a tagged command carries (see `ExecRequest.tag`). */
export const COMMAND_TAG_VAR = "LEDGERLOOP_COMMAND";

/** The fields of /proc/<pid>/stat after the command name (state is [0], ppid [1], start time [19]), or null. */
function statFields(pid: number | string): string[] | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), or null. */
export function readProcStart(pid: number): string | null {
  return statFields(pid)?.[19] ?? null;
}

/** The stat fields of a process that exists, was started at `start` (when given) and has not exited (a zombie has), or null. */
function liveStat(pid: number, start: string | null): string[] | null {
  const f = statFields(pid);
  return f !== null && f[0] !== "Z" && f[0] !== "X" && (start === null || f[19] === start) ? f : null;
}

/** The process exists, was started at `start` (when given) and has not exited (a zombie has). */
export function isRunning(pid: number, start: string | null = null): boolean {
  return liveStat(pid, start) !== null;
}

/** PF_EXITING in the flags of /proc/<pid>/stat: the kernel has begun the process's exit. */
const PF_EXITING = 0x4;

/**
 * The process was started at `start` (when given) and is on its way out or gone: exited, a zombie,
 * or still in the kernel's exit path. A PID namespace's init killed with SIGKILL stays in that path
 * (flags PF_EXITING, state still R, S or D) until every other process of its namespace is gone, so its
 * commands are seen dead before it is.
 */
export function isExiting(pid: number, start: string | null = null): boolean {
  const f = liveStat(pid, start);
  return f === null || (Number(f[6]) & PF_EXITING) !== 0;
}

/** Parent pid and start time of every process on the host, from /proc (processes that vanish mid-scan are skipped). */
function processTable(): Map<number, { ppid: number; start: string | null }> {
  const out = new Map<number, { ppid: number; start: string | null }>();
  let names: string[] = [];
  try {
    names = fs.readdirSync("/proc");
  } catch {
    return out;
  }
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    const f = statFields(n);
    if (f) out.set(Number(n), { ppid: Number(f[1]), start: f[19] ?? null });
  }
  return out;
}

/** Pids (with start times) of all living descendants of `pid`. */
export function descendants(pid: number): Array<{ pid: number; start: string | null }> {
  const table = processTable();
  const children = new Map<number, number[]>();
  for (const [p, { ppid }] of table) {
    const list = children.get(ppid);
    if (list) list.push(p);
    else children.set(ppid, [p]);
  }
  const out: Array<{ pid: number; start: string | null }> = [];
  const queue = [...(children.get(pid) ?? [])];
  for (let i = 0; i < queue.length; i++) {
    const p = queue[i]!;
    out.push({ pid: p, start: table.get(p)!.start });
    queue.push(...(children.get(p) ?? []));
  }
  return out;
}

/**
 * Processes (started at or after `minStart` clock ticks) whose environment contains `entry`
 * ("NAME=value"). Finds a command's daemons that left its process tree (setsid + double fork)
 * when neither a cgroup nor a PID namespace holds them; a process can only evade this by
 * rewriting its own environment.
 */
export function processesWithEnv(entry: string, minStart: number): Array<{ pid: number; start: string | null }> {
  const out: Array<{ pid: number; start: string | null }> = [];
  let names: string[] = [];
  try {
    names = fs.readdirSync("/proc");
  } catch {
    return out;
  }
  const needle = Buffer.from(`\0${entry}\0`);
  for (const n of names) {
    if (!/^\d+$/.test(n) || Number(n) === process.pid) continue;
    const start = readProcStart(Number(n));
    if (start === null || Number(start) < minStart) continue;
    try {
      const env = Buffer.concat([Buffer.from([0]), fs.readFileSync(`/proc/${n}/environ`), Buffer.from([0])]);
      if (env.includes(needle)) out.push({ pid: Number(n), start });
    } catch {
      // exited, or not ours to read
    }
  }
  return out;
}

const taskCounts = new Map<number, { at: number; n: number }>();

/**
 * Tasks (processes and threads) the host already runs as `uid`, cached for a few seconds.
 * RLIMIT_NPROC counts all of them, so a process-count limit expressed through it must sit on top.
 */
export function tasksOfUid(uid: number, maxAgeMs = 5000): number {
  const hit = taskCounts.get(uid);
  if (hit && Date.now() - hit.at < maxAgeMs) return hit.n;
  let n = 0;
  let names: string[] = [];
  try {
    names = fs.readdirSync("/proc");
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (fs.statSync(`/proc/${name}`).uid !== uid) continue;
      n += fs.readdirSync(`/proc/${name}/task`).length;
    } catch {
      // exited
    }
  }
  taskCounts.set(uid, { at: Date.now(), n });
  return n;
}
