import fs from "node:fs";
import { VectorStoreError } from "./errors.js";

// Processes and files around the embedded Chroma server: whether a pid is alive and is a Chroma
// server on a given data directory (so a recycled pid is never signalled), stopping one, the
// cross-process lock that serialises starts, and reading a failed server's log.

export async function stopPid(pid: number): Promise<void> {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  if (!(await waitForExit(pid, 5_000))) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

export async function waitForExit(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return true;
    await sleep(50);
  }
  return !isAlive(pid);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  // A zombie (exited, not yet reaped by its parent) is not a server.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return true;
  }
}

/** Whether pid is a Chroma server on dataDir (so a recycled pid is never signalled). Non-Linux: `unknown`. */
export function isChromaProcess(pid: number, dataDir: string, unknown = process.platform !== "linux"): boolean {
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    const at = cmdline.indexOf("--path");
    return cmdline.includes("run") && at >= 0 && cmdline[at + 1] === dataDir;
  } catch {
    return unknown;
  }
}

/** Pids of every Chroma server running on `dataDir` (Linux; elsewhere none are found). */
export function chromaProcessesOn(dataDir: string): number[] {
  const out: number[] = [];
  for (const name of safeReaddir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    if (isAlive(Number(name)) && isChromaProcess(Number(name), dataDir, false)) out.push(Number(name));
  }
  return out;
}

export function readTail(file: string): string {
  try {
    const text = fs.readFileSync(file, "utf8");
    // Drop the ASCII-art banner and colour codes; keep the last meaningful lines.
    const lines = text
      .replace(/\x1b\[[0-9;]*m/g, "")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !/^[(#\s]+$/.test(l));
    const errors = lines.filter((l) => /error|panic|failed|cannot|in use/i.test(l));
    return (errors.length ? errors.slice(0, 3) : lines.slice(-3)).join(" | ").slice(0, 500) || "no output";
  } catch {
    return "no log";
  }
}

export function safeReaddir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** A crude cross-process lock (exclusive create), with stale-holder detection by pid. */
export async function lock(file: string, timeoutMs: number): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = fs.openSync(file, "wx");
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => fs.rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      let holder = 0;
      let age = 0;
      try {
        holder = Number(fs.readFileSync(file, "utf8").trim() || "0");
        age = Date.now() - fs.statSync(file).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      // An empty file is a holder between create and write, unless it has been so for a while.
      if ((holder && !isAlive(holder)) || (!holder && age > 2_000)) {
        fs.rmSync(file, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new VectorStoreError("VECTOR_SERVER_START", `timed out waiting for ${file} (held by pid ${holder})`);
      await sleep(100);
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
