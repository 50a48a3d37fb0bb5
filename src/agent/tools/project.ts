import { z } from "zod";
import { readConfig, type ProjectToolConfig } from "../../config.js";
import type { PolicyVerdict } from "../../sandbox/policy.js";
import { commandResult, runToolCommand } from "./command.js";
import { defineTool, registerTool, type RegisteredTool } from "./tool.js";

/** Environment variable that carries the JSON arguments (they arrive on stdin too). */
export const TOOL_INPUT_ENV = "LEDGERLOOP_TOOL_INPUT";

/** `LL_ARG_<NAME>` for each top-level argument: strings as they are, anything else as JSON. */
export function argEnv(args: Record<string, unknown>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined) continue;
    env[`LL_ARG_${k.toUpperCase().replace(/[^A-Z0-9_]/g, "_")}`] = typeof v === "string" ? v : JSON.stringify(v);
  }
  return env;
}

/** The command line run for a call: the arguments are piped to the project's command on stdin. */
export function projectCommandLine(command: string): string {
  return `printf '%s' "$${TOOL_INPUT_ENV}" | (\n${command}\n)`;
}

/**
 * A tool from `ledgerloop.config.json` → `tools`: its JSON schema validated like a built-in tool's
 * zod schema, the command run through the sandbox engine (policy, approvals, limits, structured
 * feedback) exactly like run_command, with the arguments as JSON on stdin, in
 * $LEDGERLOOP_TOOL_INPUT and as LL_ARG_<NAME> (names that look secret are dropped by the sandbox).
 */
export function projectTool(cfg: ProjectToolConfig): RegisteredTool {
  const schema = z.fromJSONSchema((cfg.input ?? { type: "object", properties: {}, additionalProperties: false }) as Parameters<typeof z.fromJSONSchema>[0]);
  const line = projectCommandLine(cfg.command);
  return registerTool(
    defineTool({
      name: cfg.name,
      description: cfg.description,
      schema,
      // Only a read-only command may run again after a crash interrupted it.
      risk: cfg.risk,
      approve: cfg.approve ?? "policy",
      source: "project",
      idempotent: cfg.risk === "read",
      async command() {
        return line;
      },
      async run(args, ctx) {
        const json = JSON.stringify(args ?? {});
        const fb = await runToolCommand(ctx, line, {
          timeoutMs: cfg.timeoutMs ?? ctx.commandTimeoutMs,
          env: { ...argEnv((args ?? {}) as Record<string, unknown>), [TOOL_INPUT_ENV]: json, LEDGERLOOP_TOOL_NAME: cfg.name },
        });
        return commandResult(fb);
      },
    }),
  );
}

/**
 * The project tools a run offers: `deny` ones never, `network` ones only when the run may use the
 * network. Returns the offered tools and, for `ledgerloop tools`, why the others are not.
 */
export function projectTools(
  configs: readonly ProjectToolConfig[],
  opts: { allowNetwork: boolean },
): { offered: RegisteredTool[]; withheld: Array<{ config: ProjectToolConfig; why: string }> } {
  const offered: RegisteredTool[] = [];
  const withheld: Array<{ config: ProjectToolConfig; why: string }> = [];
  for (const c of configs) {
    if (c.approve === "deny") withheld.push({ config: c, why: 'approve is "deny"' });
    else if (c.risk === "network" && !opts.allowNetwork) withheld.push({ config: c, why: "risk network needs --allow-network (or sandbox.network)" });
    else offered.push(projectTool(c));
  }
  return { offered, withheld };
}

/**
 * The policy's verdict on a project tool's command, adjusted by its `approve`: "ask" always asks
 * first, "allow" runs what the policy would ask about (a policy denial stays a denial).
 */
export function adjustVerdict(tool: RegisteredTool | undefined, v: PolicyVerdict): PolicyVerdict {
  if (!tool || tool.source !== "project") return v;
  if (tool.approve === "ask" && v.decision === "allow")
    return { ...v, decision: "ask", rule: "tool.approve", reason: `the project tool ${tool.name} is configured with approve "ask"` };
  if (tool.approve === "allow" && v.decision === "ask")
    return { ...v, decision: "allow", rule: "tool.approve", reason: `the project tool ${tool.name} is configured with approve "allow"` };
  return v;
}

const BY_RUNTIME = new WeakMap<object, RegisteredTool[]>();

/**
 * The project tools a runtime's runs offer, read once per runtime from the workspace's config (the
 * file the run started under: act refuses to go on under a changed one, see ledger/governing.ts).
 */
export function projectToolsOf(rt: { workspace: string; settings?: { allowNetwork?: boolean } }): RegisteredTool[] {
  let tools = BY_RUNTIME.get(rt);
  if (!tools) {
    const { config } = readConfig(rt.workspace);
    tools = projectTools(config.tools ?? [], { allowNetwork: rt.settings?.allowNetwork ?? config.sandbox?.network ?? false }).offered;
    BY_RUNTIME.set(rt, tools);
  }
  return tools;
}
