import type { BackgroundProcess } from "./background.js";
import type { ServerProcess } from "./server-process.js";
import type { Limits } from "./limits.js";

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
  /**
   * A name, known before the command starts, that its processes carry (as `LEDGERLOOP_COMMAND`).
   * A runner restarted after a crash finds what survived by it, even when the crash came before
   * `onStart` could record the process (see `killOrphan`).
   */
  tag?: string;
  /**
   * Workspace root: bound read-write by the isolating levels (everything else is read-only).
   * Defaults to the sandbox's workspace option, else `cwd`.
   */
  workspace?: string;
  /** Let this command reach the network (overrides the sandbox's default; no effect at level "none"). */
  allowNetwork?: boolean;
  /** Per-command limits over the sandbox's. */
  limits?: Partial<Limits>;
}

export type { ExecResult, ProcessInfo } from "./exec-result.js";
import type { ExecResult, ProcessInfo } from "./exec-result.js";

/**
 * Runs shell commands for the agent. Every command of the agent (run_command, run_tests) and of
 * `ledgerloop exec` goes through one Sandbox, so they share policy, limits and feedback.
 */
export interface Sandbox {
  /** Isolation level in use: "bwrap", "unshare" or "none". */
  readonly level: string;
  /** Why this level, and how each limit is enforced (what `ledgerloop doctor` prints). */
  readonly reasons?: readonly string[];
  exec(req: ExecRequest): Promise<ExecResult>;
  /**
   * Starts a long-lived process of the run (same wrapper, limits and isolation as `exec`) without
   * waiting for it. Sandboxes without it cannot run background processes.
   */
  startBackground?(req: BackgroundRequest): Promise<BackgroundProcess>;
  /**
   * Starts a long-lived process the runtime talks to over stdin/stdout (an MCP server), wrapped
   * exactly like a command at this level; requests to it go through its `around`. Sandboxes
   * without it cannot run one.
   */
  startServer?(req: ServerRequest): Promise<ServerProcess>;
  /** TCP ports listening where the run's processes listen (the session's loopback, or the host's at "none"). */
  listeningPorts?(): Set<number>;
  /** Ends the run's session and every process in it; resolves to how long that took (ms), null if there was none. */
  closeSession?(): Promise<number | null>;
}

/** A background process to start: an ExecRequest without a timeout or output cap. */
export type BackgroundRequest = Omit<ExecRequest, "timeoutMs" | "outputCapBytes" | "signal" | "onStart">;

/** A server to start: a background request, plus the environment its configuration gives it. */
export type ServerRequest = BackgroundRequest & {
  /** Variables from the user's configuration, kept even where their names look secret (an API key the server needs). */
  ownEnv?: Record<string, string>;
};
