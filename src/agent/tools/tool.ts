import { z } from "zod";
import type { ToolApproval, ToolRisk } from "../../tool-catalogue.js";
import type { CodeSearcher } from "../../retrieval/port.js";
import type { PolicyVerdict, SandboxPolicy } from "../../sandbox/policy.js";
import type { ProcessInfo, Sandbox } from "../../sandbox/port.js";
import type { ProcessManager } from "../../sandbox/processes.js";
import type { CommandLimit, CommandUsage, StoppedBy } from "../../events.js";
import type { ActionEffect, FileChanges, TestCounts } from "../../state.js";
import type { WorkspaceTracker } from "../../workspace/tracker.js";

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
  /** The workspace's walk tracker: commands take their before/after walks through it (one walk per step). */
  files?: WorkspaceTracker;
  /** The run's background processes (start_process & co.). */
  processes?: ProcessManager;
  /** The ledger id of the action being run (the cause of what its processes do later). */
  actionId?: string;
}

/** What `command()` may use: it runs before the call starts (policy check, approval), with no sandbox. */
export type CommandContext = Pick<ToolContext, "workspace">;

export type ToolEffect = ActionEffect;

/** The structured result of one tool call; failures the model can act on are results, not throws. */
export interface ToolResult {
  /** "interrupted": its command was killed from outside (the run was stopped, or the run's sandbox session ended). */
  status: "ok" | "error" | "interrupted";
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
  /** Commands: what ended it when it did not end by itself, the limit when that was one, and what it used. */
  stoppedBy?: StoppedBy | null;
  limit?: CommandLimit | null;
  usage?: CommandUsage;
  effects?: ToolEffect[];
}

/** Where a tool the model gets comes from: built in, the project's config (`tools`), or an MCP server. */
export type ToolSource = "built-in" | "project" | `mcp:${string}`;

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  /**
   * What a call may affect: read, write (the workspace or the run's records), exec (runs commands),
   * network. Decides permissions (a network tool needs --allow-network); `ledgerloop tools`, the
   * policy and the trace spans all read it here (a built-in tool's comes from tool-catalogue.ts).
   */
  risk: ToolRisk;
  /** Who decides whether a call runs (default "policy"); act.ts and `ledgerloop tools` read it here. */
  approve?: ToolApproval;
  /** Default "built-in". */
  source?: ToolSource;
  /** Model-facing: what the tool does, when to use it, and what it returns. */
  description: string;
  schema: S;
  /**
   * Safe to run again after a crash interrupted it. Non-idempotent tools that were interrupted are
   * reported as such to the model and not re-run.
   */
  idempotent: boolean;
  /**
   * What a call may change in the workspace, so the step's one walk can be kept across it: "nothing"
   * (reads only, or only .git/ and the ledger), "reported" (exactly the paths of its result's
   * `filesChanged`), or unset: anything, and the next reader walks the tree again.
   */
  writes?: "nothing" | "reported";
  /** The shell command this call would run, for the policy and approval check made before it starts. */
  command?(args: z.infer<S>, ctx: CommandContext): Promise<string | null>;
  /** Taken before the first attempt and handed back on a re-run (see edit_file). */
  prepare?(args: z.infer<S>, ctx: ToolContext): Promise<string | null>;
  run(args: z.infer<S>, ctx: ToolContext): Promise<ToolResult>;
}

/** Identity helper that keeps the schema's type on `run` (and the name's literal type, which the registry checks). */
export function defineTool<S extends z.ZodType, N extends string = string>(def: ToolDefinition<S> & { name: N }): ToolDefinition<S> & { name: N } {
  return def;
}

/** A tool call whose arguments passed the tool's own schema, bound to them: runs without a cast. */
export interface BoundCall {
  /** The shell command the call would run (for the policy and approval), or null when it runs none. */
  command(ctx: CommandContext): Promise<string | null>;
  /** The guard to record before the first attempt (see edit_file), or null. */
  prepare(ctx: ToolContext): Promise<string | null>;
  run(ctx: ToolContext): Promise<ToolResult>;
}

/**
 * A tool as the registry holds it: the definition's metadata, its argument type kept inside `bind`
 * (which parses with the tool's own schema), so one list holds tools of different argument types.
 */
export interface RegisteredTool {
  readonly name: string;
  readonly risk: ToolRisk;
  readonly approve: ToolApproval;
  readonly source: ToolSource;
  readonly description: string;
  readonly schema: z.ZodType;
  readonly idempotent: boolean;
  readonly writes?: "nothing" | "reported";
  /** The tool runs a shell command, which the policy checks (and may ask approval for) before it starts. */
  readonly runsCommand: boolean;
  /**
   * Parses `args` with the tool's schema. decide parses the model's arguments with it and records the
   * result; act binds that record again, so a schema must accept its own output (schemas.test.ts).
   */
  bind(args: unknown): { ok: true; args: unknown; call: BoundCall } | { ok: false; issues: readonly z.core.$ZodIssue[] };
}

/** Puts a tool definition in registry form (tools/index.ts lists them). */
export function registerTool<S extends z.ZodType, N extends string = string>(def: ToolDefinition<S> & { name: N }): RegisteredTool & { readonly name: N } {
  return {
    name: def.name,
    risk: def.risk,
    approve: def.approve ?? "policy",
    source: def.source ?? "built-in",
    description: def.description,
    schema: def.schema,
    idempotent: def.idempotent,
    writes: def.writes,
    runsCommand: def.command !== undefined,
    bind(raw) {
      const parsed = def.schema.safeParse(raw);
      if (!parsed.success) return { ok: false, issues: parsed.error.issues };
      const args = parsed.data;
      return {
        ok: true,
        args,
        call: {
          command: async (ctx) => (def.command ? def.command(args, ctx) : null),
          prepare: async (ctx) => (def.prepare ? def.prepare(args, ctx) : null),
          run: (ctx) => def.run(args, ctx),
        },
      };
    },
  };
}

/** A recoverable failure, returned to the model. */
export function toolError(output: string, errorClass: string | null = null): ToolResult {
  return { status: "error", output, errorClass };
}
