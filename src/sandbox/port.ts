/** Where and how a command runs. */
export interface ExecRequest {
  /** A shell command line (run by bash). */
  command: string;
  /** Absolute working directory inside the workspace. */
  cwd: string;
  timeoutMs: number;
  /** Extra environment on top of the sandbox's allow-listed one (secret-looking names are dropped). */
  env?: Record<string, string>;
  /** Bytes kept of stdout and of stderr each (head and tail). */
  outputCapBytes?: number;
  signal?: AbortSignal;
  /** Called once the process exists, so a crash-safe runner can record it. */
  onStart?: (proc: ProcessInfo) => void | Promise<void>;
}

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
  /** Name of the resource limit that was hit, if any. */
  limit?: string | null;
  /** Set when the command was refused before running. */
  denied?: { rule: string; reason: string } | null;
}

/**
 * Runs shell commands for the agent. Every command of the agent (run_command, run_tests) and of
 * `ledgerloop exec` goes through one Sandbox, so they share policy, limits and feedback.
 */
export interface Sandbox {
  /** Isolation level in use: "bwrap", "unshare" or "none". */
  readonly level: string;
  exec(req: ExecRequest): Promise<ExecResult>;
}
