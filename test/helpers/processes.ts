import fs from "node:fs";

/**
 * Live processes whose working directory is `dir` (and whose command line matches `cmdline`, when
 * given), read from /proc: seen from here whatever PID namespace they run in. A zombie (killed, not
 * yet reaped) does not count.
 */
export function processesIn(dir: string, cmdline?: RegExp): number[] {
  const out: number[] = [];
  for (const n of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    try {
      if (cmdline && !cmdline.test(fs.readFileSync(`/proc/${n}/cmdline`, "utf8"))) continue;
      if (/\) Z /.test(fs.readFileSync(`/proc/${n}/stat`, "utf8"))) continue;
      if (fs.readlinkSync(`/proc/${n}/cwd`) === dir) out.push(Number(n));
    } catch {
      // gone meanwhile, or not readable
    }
  }
  return out;
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
