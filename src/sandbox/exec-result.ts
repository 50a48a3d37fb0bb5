import type { LimitName } from "./limits.js";

// What running a command gives back, apart from the Sandbox port (port.ts re-exports both) so that
// the spawning code can name them without importing the port, which names the background process.

export interface ProcessInfo {
  pid: number;
  /** The command runs in its own process group; killing -pgid kills all of it. */
  pgid: number;
  /** Process start time (clock ticks since boot, from /proc), to recognise the same process later. */
  procStart: string | null;
}

/** What happened, as data: nothing here is thrown for a failing command. */
export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
  /** Some output was cut to respect the cap. */
  truncated: boolean;
  /** The isolation level the command ran under. */
  isolation: string;
  /** Name of the resource limit that was hit, if any ("timeout" when the wall clock ran out). */
  limit?: LimitName | null;
  /** Resources the whole command used, where the machine can measure them (cgroups). */
  usage?: { cpuMs: number | null; memoryPeakBytes: number | null };
  /** Set when the command was refused before running. */
  denied?: { rule: string; reason: string } | null;
  /** What the workspace guard undid after the command (a `.git` it created, a config it changed…). */
  violations?: string[];
  /** The run's sandbox session ended while the command ran, and took the command with it. */
  sessionEnded?: boolean;
  /** It died by SIGKILL, and its cgroups show that no limit of the sandbox sent it (see the executor). */
  limitsRuledOut?: boolean;
}
