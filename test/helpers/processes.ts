import fs from "node:fs";

/** A process as /proc shows it: its pid and its arguments (`cmdline` is them joined by NULs). */
export interface ProcEntry {
  pid: number;
  argv: string[];
  cmdline: string;
}

/**
 * Live processes for which `match` holds, read from /proc: seen from here whatever PID namespace
 * they run in. A zombie (killed, not yet reaped) and this test process do not count; a process that
 * exits meanwhile, or whose files `match` cannot read, is left out.
 */
export function findProcesses(match: (p: ProcEntry) => boolean): number[] {
  const out: number[] = [];
  for (const n of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(n) || Number(n) === process.pid) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${n}/cmdline`, "utf8");
      const stat = fs.readFileSync(`/proc/${n}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z") continue;
      if (match({ pid: Number(n), argv: cmdline.split("\0"), cmdline })) out.push(Number(n));
    } catch {
      // gone meanwhile, or not readable
    }
  }
  return out;
}

/** Live processes whose working directory is `dir` (and whose command line matches `cmdline`, when given). */
export function processesIn(dir: string, cmdline?: RegExp): number[] {
  return findProcesses((p) => (!cmdline || cmdline.test(p.cmdline)) && fs.readlinkSync(`/proc/${p.pid}/cwd`) === dir);
}

/** Waits up to 10 s for {@link processesIn} to find none; returns those still there. */
export async function noProcessesLeft(dir: string, cmdline?: RegExp): Promise<number[]> {
  const end = Date.now() + 10_000;
  let left = processesIn(dir, cmdline);
  while (left.length && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    left = processesIn(dir, cmdline);
  }
  return left;
}
