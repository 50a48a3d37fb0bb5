import { z } from "zod";
import type { CodeSearcher } from "../src/retrieval/port.js";
import type { PolicyVerdict, SandboxPolicy } from "../src/sandbox/policy.js";
import type { ProcessInfo, Sandbox } from "../src/sandbox/port.js";
import type { ProcessManager } from "../src/sandbox/processes.js";
import type { ActionEffect, FileChanges, TestCounts } from "../src/state.js";

export type { CodeSearcher };

/** What a tool may use. Built once per run by the runtime. */
export interface ToolContext {
  /** Absolute, realpath'd workspace root. */
  workspace: string;
  sandbox: Sandbox;
  searcher: CodeSearcher;
  commandTimeoutMs: number;
  testTimeoutMs: number;
  outputCapBytes: number;
  signal?: AbortSignal;
  /** Reports the process of a command as soon as it exists (crash recovery records it). */
  onProcessStart?: (p: ProcessInfo) => void | Promise<void>;
  /** A name the command's processes carry, so crash recovery finds them even if unrecorded. */
  commandTag?: string;
  /** The guard `prepare` returned on the first attempt, when this is a re-run after a crash. */
  guard?: string | null;
  /** The command policy every shell command is checked against. */
  policy?: SandboxPolicy;
  /**
   * The command line `command()` produced and the policy's verdict on it (which the user, when
   * asked, approved) just before the run: the tool runs exactly this, and the policy is not
   * evaluated a second time.
   */
  checked?: { command: string; verdict: PolicyVerdict };
  /** This call's command needed approval and got it. */
  approved?: boolean;
  /** The run's background processes (start_process & co.). */
  processes?: ProcessManager;
  /** The ledger id of the action being run (the cause of what its processes do later). */
  actionId?: string;
}

export type ToolEffect = ActionEffect;

/** The structured result of one tool call; failures the model can act on are results, not throws. */
export interface ToolResult {
  status: "ok" | "error";
  /** What the model reads. */
  output: string;
  exitCode?: number | null;
  signal?: string | null;
  stdout?: string;
  stderr?: string;
  truncated?: boolean;
  filesChanged?: FileChanges;
  tests?: TestCounts | null;
  errorClass?: string | null;
  sandbox?: string;
  command?: string;
  effects?: ToolEffect[];
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  /** Model-facing: what the tool does, when to use it, and what it returns. */
  description: string;
  schema: S;
  /**
   * Safe to run again after a crash interrupted it. Non-idempotent tools that were interrupted are
   * reported as such to the model and not re-run.
   */
  idempotent: boolean;
  /** The shell command this call would run, for the policy and approval check made before it starts. */
  command?(args: z.infer<S>, ctx: ToolContext): Promise<string | null>;
  /** Taken before the first attempt and handed back on a re-run (see edit_file). */
  prepare?(args: z.infer<S>, ctx: ToolContext): Promise<string | null>;
  run(args: z.infer<S>, ctx: ToolContext): Promise<ToolResult>;
}

/** Identity helper that keeps the schema's type on `run`. */
export function defineTool<S extends z.ZodType>(def: ToolDefinition<S>): ToolDefinition<S> {
  return def;
}

/** A recoverable failure, returned to the model. */
export function toolError(output: string, errorClass: string | null = null): ToolResult {
  return { status: "error", output, errorClass };
}
