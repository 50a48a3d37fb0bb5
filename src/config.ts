/**
 * `ledgerloop.config.json`: per-workspace settings the user writes. One top-level key per concern
 * (today: `sandbox`); add a section by adding a key to `LedgerloopConfig`. Unknown keys are errors,
 * so a typo never silently turns a setting off.
 *
 * The file lives in the workspace, which commands and tools can write: the command policy protects
 * it (see policy-paths.ts), and it is read once when a run starts, never re-read mid-run.
 */
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { PriceTable } from "./economics/prices.js";
import { ConfigError, errorMessage } from "./errors.js";
import { configFingerprint } from "./ledger/governing.js";
import { resolvePolicy, withAllowed, type SandboxPolicy } from "./sandbox/policy.js";
import { BUILTIN_TOOL_NAMES, TOOL_RISKS } from "./tool-catalogue.js";

export const CONFIG_FILE = "ledgerloop.config.json";

const isRegExp = (s: string): boolean => {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
};

/** A deny or ask rule: matches a command by program, arguments and/or a regular expression. */
export const PolicyRuleConfig = z
  .strictObject({
    /** Rule id reported with the decision (default `user.deny.<n>` / `user.ask.<n>`). */
    id: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "use letters, digits, `.`, `_` or `-`")
      .optional(),
    /** Program name(s) or path(s); `*` and `?` are wildcards. */
    program: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    /** Arguments that must all be present, in any order; `*` and `?` are wildcards. */
    args: z.array(z.string().min(1)).optional(),
    /** A regular expression tested against the command's text. */
    pattern: z.string().min(1).refine(isRegExp, "is not a valid regular expression").optional(),
    /** What the model is told. */
    reason: z.string().trim().min(1, "give the reason the model is told"),
  })
  .refine((r) => r.program !== undefined || r.pattern !== undefined, { message: "a rule needs `program` or `pattern` (or both)" });
export type PolicyRuleConfig = z.infer<typeof PolicyRuleConfig>;

/** `sandbox.policy`: merged over the built-in policy (lists are added, scalars replace). */
export const PolicyConfig = z.strictObject({
  /** Decision for programs no rule knows. */
  default: z.enum(["ask", "deny"]).optional(),
  /**
   * Allowed commands: a program, or a program and leading arguments (`"docker compose ps"`), `*`
   * wildcards. To allow something the built-in policy refuses, name the arguments (`"git push"`).
   */
  allow: z.array(z.string().trim().min(1)).optional(),
  deny: z.array(PolicyRuleConfig).optional(),
  ask: z.array(PolicyRuleConfig).optional(),
  /** Programs inside the workspace (`./configure`) run freely ("allow", default) or need approval ("ask"). */
  workspacePrograms: z.enum(["allow", "ask"]).optional(),
  /** Absolute directories commands may write below, besides the workspace and /tmp. */
  writablePaths: z
    .array(
      z
        .string()
        .refine((p) => path.isAbsolute(p), "must be an absolute path")
        .refine((p) => path.resolve(p) !== "/", "cannot be `/`"),
    )
    .optional(),
  /** Workspace-relative paths or globs commands may not write, besides .git/, .ledgerloop/ and this file. */
  protectedPaths: z
    .array(
      z
        .string()
        .min(1)
        .refine((p) => !path.isAbsolute(p) && !p.split("/").includes(".."), "must be a path inside the workspace, relative to it"),
    )
    .optional(),
});
export type PolicyConfig = z.infer<typeof PolicyConfig>;

/** `sandbox`: how commands run. */
export const SandboxConfig = z.strictObject({
  /** Commands may use the network: network tools and package installs are allowed rather than asked. */
  network: z.boolean().optional(),
  policy: PolicyConfig.optional(),
});
export type SandboxConfig = z.infer<typeof SandboxConfig>;

/** A tool's risk as the config names it (the type, `ToolRisk`, is the catalogue's: tool-catalogue.ts). */
export const ToolRisk = z.enum(TOOL_RISKS);

/** Why a JSON schema cannot describe a tool's arguments, or null when it can. */
export function toolInputSchemaProblem(schema: Record<string, unknown>): string | null {
  if (schema.type !== "object")
    return `must be a JSON schema of type "object" (the arguments are one JSON object), got type ${JSON.stringify(schema.type ?? null)}`;
  try {
    z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    return null;
  } catch (err) {
    return `is not a valid JSON schema: ${errorMessage(err)}`;
  }
}

/** A project tool: a shell command the model can call, its JSON arguments on stdin and in the environment. */
export const ProjectToolConfig = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,63}$/, "use lowercase letters, digits and `_`, starting with a letter (at most 64)")
    .refine((n) => !n.startsWith("mcp__"), "names starting with `mcp__` are kept for tools from MCP servers")
    // The registry of the agent (agent/tools/index.ts) offers exactly the catalogue's names.
    .refine((n) => !(BUILTIN_TOOL_NAMES as readonly string[]).includes(n), { error: (i) => `"${String(i.input)}" is a built-in tool; choose another name` }),
  /** What the model reads: what the tool does, when to use it, what it returns. */
  description: z.string().trim().min(1, "describe the tool for the model"),
  /** A bash command line run in the workspace root through the sandbox, like run_command. */
  command: z.string().trim().min(1),
  /** JSON schema of the arguments (default: no arguments). */
  input: z
    .record(z.string(), z.unknown())
    .superRefine((schema, ctx) => {
      const problem = toolInputSchemaProblem(schema);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .optional(),
  risk: ToolRisk.default("exec"),
  /** allow: run when the policy allows or asks; ask: always ask first; deny: never offered. Default: the policy decides. */
  approve: z.enum(["allow", "ask", "deny"]).optional(),
  timeoutMs: z
    .number()
    .int()
    .min(100)
    .max(30 * 60 * 1000)
    .optional(),
});
export type ProjectToolConfig = z.infer<typeof ProjectToolConfig>;

/** Risk and approval of one tool of an MCP server, over the server's. */
export const McpToolConfig = z.strictObject({
  risk: ToolRisk.optional(),
  /** allow: run without asking; ask: pause for approval first; deny: never offered. */
  approve: z.enum(["allow", "ask", "deny"]).optional(),
});
export type McpToolConfig = z.infer<typeof McpToolConfig>;

const mcpCommon = {
  /** What the server's tools may affect (default "exec"); a tool's own entry wins. */
  risk: ToolRisk.default("exec"),
  /** Default "ask"... unless the risk is "read": read tools run without asking. */
  approve: z.enum(["allow", "ask", "deny"]).optional(),
  /** Risk and approval per tool, by the server's own tool name. */
  tools: z.record(z.string().min(1), McpToolConfig).optional(),
  /** How long one call may take before it is a timeout. */
  timeoutMs: z
    .number()
    .int()
    .min(100)
    .max(30 * 60 * 1000)
    .optional(),
  /** How long starting the server (connecting, listing its tools) may take (default: timeoutMs, at least 60 s). */
  startTimeoutMs: z
    .number()
    .int()
    .min(100)
    .max(30 * 60 * 1000)
    .optional(),
};

/** An MCP server started as a child process (stdio), through the run's sandbox. */
export const McpStdioServerConfig = z.strictObject({
  command: z.string().trim().min(1),
  args: z.array(z.string()).optional(),
  /** Environment of the server, added to the sandbox's scrubbed one. */
  env: z.record(z.string(), z.string()).optional(),
  /** Working directory, relative to the workspace (default: the workspace). */
  cwd: z
    .string()
    .min(1)
    .refine((p) => !path.isAbsolute(p) && !p.split("/").includes(".."), "must be a path inside the workspace, relative to it")
    .optional(),
  ...mcpCommon,
});
export type McpStdioServerConfig = z.infer<typeof McpStdioServerConfig>;

/** An MCP server reached over streamable HTTP. */
export const McpHttpServerConfig = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string(), z.string()).optional(),
  ...mcpCommon,
});
export type McpHttpServerConfig = z.infer<typeof McpHttpServerConfig>;

/** `mcpServers.<name>`: the shape Claude Code, Cursor, Codex and Cline read, plus risk and approve. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;
// Chosen by its fields (`url` → HTTP, else stdio) rather than a plain union, so that an unknown
// field or a wrong type is reported at its own path, not as "no union member matched".
export const McpServerConfig = z.unknown().transform((value, ctx): McpServerConfig => {
  const http = Boolean(value && typeof value === "object" && "url" in value);
  const r = (http ? McpHttpServerConfig : McpStdioServerConfig).safeParse(value);
  if (r.success) return r.data;
  for (const issue of r.error.issues) {
    const known =
      issue.code === "unrecognized_keys" && issue.path.length === 0
        ? ` (known for ${http ? "an HTTP" : "a stdio"} server: ${Object.keys((http ? McpHttpServerConfig : McpStdioServerConfig).shape).join(", ")})`
        : "";
    ctx.addIssue({ ...issue, message: `${issue.message}${known}` } as Parameters<typeof ctx.addIssue>[0]);
  }
  return z.NEVER;
});

/** Server names: they become part of tool names (`mcp__<server>__<tool>`). */
export const MCP_SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

export const LedgerloopConfig = z.strictObject({
  /** Editors' JSON schema hint; ignored. */
  $schema: z.string().optional(),
  sandbox: SandboxConfig.optional(),
  /** Model prices (USD per 1M tokens) over the built-in defaults, for cost accounting. */
  prices: PriceTable.optional(),
  /** The model plan, summarize and reflect use when neither --summary-model nor the run context names one. */
  summaryModel: z.string().min(1).optional(),
  /** Tools of this project (shell commands) offered to the model beside the built-in ones. */
  tools: z
    .array(ProjectToolConfig)
    .superRefine((tools, ctx) => {
      const seen = new Map<string, number>();
      tools.forEach((t, i) => {
        const first = seen.get(t.name);
        if (first !== undefined) ctx.addIssue({ code: "custom", path: [i, "name"], message: `"${t.name}" is already the name of tools[${first}]` });
        else seen.set(t.name, i);
      });
    })
    .optional(),
  /** MCP servers whose tools the model gets as `mcp__<server>__<tool>`. */
  mcpServers: z
    .record(
      z
        .string()
        .regex(MCP_SERVER_NAME, "a server name uses letters, digits, `_` or `-` (at most 32), and contains no `__`")
        .refine((n) => !n.includes("__"), "a server name may not contain `__`"),
      McpServerConfig,
    )
    .optional(),
});
export type LedgerloopConfig = z.infer<typeof LedgerloopConfig>;

/** Validates a parsed config value; throws ConfigError naming the bad field. */
export function parseConfig(value: unknown, source = CONFIG_FILE): LedgerloopConfig {
  const r = LedgerloopConfig.safeParse(value);
  if (r.success) return r.data;
  throw new ConfigError(`${source}: ${describeIssues(r.error)}`, { cause: r.error });
}

/**
 * Reads `<workspace>/ledgerloop.config.json` (or `file`, relative to the workspace). A missing
 * default file means no settings; a missing explicit file, bad JSON or a bad field is a ConfigError.
 */
export function loadConfig(workspace: string, file?: string): LedgerloopConfig {
  return readConfig(workspace, file).config;
}

/** {@link loadConfig}, plus the fingerprint of exactly the bytes read (see ledger/governing.ts). */
export function readConfig(workspace: string, file?: string): { config: LedgerloopConfig; sha: string } {
  const p = file ? path.resolve(workspace, file) : path.join(workspace, CONFIG_FILE);
  let text: string;
  try {
    text = fs.readFileSync(p, "utf8");
  } catch (err) {
    if (!file && (err as NodeJS.ErrnoException).code === "ENOENT") return { config: {}, sha: configFingerprint(null) };
    throw new ConfigError(`cannot read ${p}: ${errorMessage(err)}`, { cause: err });
  }
  return { config: parseJsonConfig(text, p), sha: configFingerprint(text) };
}

function parseJsonConfig(text: string, p: string): LedgerloopConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${p} is not valid JSON: ${errorMessage(err)}`, { cause: err });
  }
  return parseConfig(json, p);
}

/** The command policy a config asks for, merged over the defaults; `allowNetwork` (a CLI flag) wins over `sandbox.network`. */
export function policyFromConfig(config: LedgerloopConfig, opts: { allowNetwork?: boolean } = {}): SandboxPolicy {
  return resolvePolicy(config.sandbox?.policy ?? {}, { allowNetwork: opts.allowNetwork ?? config.sandbox?.network ?? false });
}

/**
 * The command policy of a workspace as runs and `ledgerloop exec` apply it: its config file (read
 * now, once) over the defaults, network as asked or as the file says, plus extra allowed commands.
 */
export function commandPolicy(
  workspace: string,
  opts: { allowNetwork?: boolean; allow?: string[] } = {},
): { policy: SandboxPolicy; allowNetwork: boolean; configSha: string; config: LedgerloopConfig } {
  const { config, sha } = readConfig(workspace);
  const allowNetwork = opts.allowNetwork ?? config.sandbox?.network ?? false;
  return { policy: withAllowed(policyFromConfig(config, { allowNetwork }), opts.allow ?? []), allowNetwork, configSha: sha, config };
}

// ---- error messages that name the field ----

function fieldPath(segments: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const s of segments) out += typeof s === "number" ? `[${s}]` : `${out ? "." : ""}${String(s)}`;
  return out || "(top level)";
}

/** The object keys the schema accepts at a path, for "unknown key" messages. */
function knownKeys(segments: ReadonlyArray<PropertyKey>): string[] {
  let schema: unknown = LedgerloopConfig;
  const unwrap = (s: unknown): unknown => {
    let cur = s as { def?: { type?: string; innerType?: unknown; element?: unknown } };
    while (cur?.def && (cur.def.type === "optional" || cur.def.type === "default" || cur.def.type === "nullable")) cur = cur.def.innerType as typeof cur;
    return cur;
  };
  for (const seg of segments) {
    const s = unwrap(schema) as { shape?: Record<string, unknown>; def?: { type?: string; element?: unknown; options?: unknown[] } };
    if (typeof seg === "number" && s?.def?.type === "array") schema = s.def.element;
    else if (typeof seg === "string" && s?.shape) schema = s.shape[seg];
    else return [];
  }
  const s = unwrap(schema) as { shape?: Record<string, unknown> };
  return s?.shape ? Object.keys(s.shape) : [];
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const where = fieldPath(issue.path);
      if (issue.code === "unrecognized_keys") {
        const known = knownKeys(issue.path);
        const keys = issue.keys.map((k) => `"${k}"`).join(", ");
        return `${where}: unknown key${issue.keys.length > 1 ? "s" : ""} ${keys}${known.length ? ` (known: ${known.join(", ")})` : ""}`;
      }
      let msg = issue.message;
      if (/received undefined$/.test(msg)) msg = `is required (${msg.replace(/^Invalid input: /, "").replace(/, received undefined$/, "")})`;
      return `${where}: ${msg}`;
    })
    .join("; ");
}
