import { z } from "zod";
import { readConfig, toolInputSchemaProblem, type McpServerConfig } from "../../config.js";
import { McpConnection, remoteServer, type McpToolInfo } from "../../mcp/client.js";
import type { PolicyVerdict } from "../../sandbox/policy.js";
import type { Sandbox } from "../../sandbox/port.js";
import type { LedgerEvent } from "../../state.js";
import type { Ledger } from "../../ledger/port.js";
import type { ToolRisk } from "../../tool-catalogue.js";
import { TOOLS } from "./index.js";
import { defineTool, registerTool, toolError, type RegisteredTool, type ToolResult } from "./tool.js";

/** Names the model may call (OpenAI-compatible function names). */
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The name the model sees for a server's tool. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

interface McpPolicy {
  server: string;
  tool: string;
  risk: ToolRisk;
  approve: "allow" | "ask" | "deny";
}

const POLICIES = new WeakMap<RegisteredTool, McpPolicy>();

/** Risk and approval of one of a server's tools: the tool's own entry over the server's; an HTTP server off this machine is `network`. */
export function mcpPolicyOf(server: string, config: McpServerConfig, tool: string): McpPolicy {
  const own = config.tools?.[tool];
  const risk: ToolRisk = remoteServer(config) ? "network" : (own?.risk ?? config.risk);
  // Reading needs no approval by default; anything else asks first unless configured otherwise.
  const approve = own?.approve ?? config.approve ?? (risk === "read" ? "allow" : "ask");
  return { server, tool, risk, approve };
}

/**
 * The verdict on a call of an MCP tool, which has no command line for the policy to judge: its
 * `approve` decides (act.ts asks for "ask" exactly as for a command). Undefined for other tools.
 */
export function mcpVerdict(tool: RegisteredTool | undefined): PolicyVerdict | undefined {
  const p = tool && POLICIES.get(tool);
  if (!p) return undefined;
  const why = `the MCP tool ${p.tool} of server "${p.server}" (risk ${p.risk}) is configured with approve "${p.approve}"`;
  return { decision: p.approve, rule: "mcp.approve", reason: why, parts: [] };
}

function resultOf(name: string, r: Awaited<ReturnType<McpConnection["call"]>>): ToolResult {
  if ("errorClass" in r) return toolError(r.message, r.errorClass);
  const text = r.text.length > 64 * 1024 ? `${r.text.slice(0, 64 * 1024)}\n(output cut at 64 KiB)` : r.text;
  return r.isError ? toolError(`${name} reported an error: ${text}`, "mcp_tool_error") : { status: "ok", output: text || "(no output)" };
}

function mcpTool(conn: McpConnection, info: McpToolInfo, policy: McpPolicy, schema: z.ZodType): RegisteredTool {
  const name = mcpToolName(conn.name, info.name);
  const tool = registerTool(
    defineTool({
      name,
      description: `${info.description?.trim() || `Tool ${info.name}`} (from the MCP server "${conn.name}", risk ${policy.risk})`,
      schema,
      risk: policy.risk,
      approve: policy.approve,
      source: `mcp:${conn.name}`,
      idempotent: policy.risk === "read",
      // What an approval request shows (see act.ts): the call, not a command line.
      async command(args) {
        return `${name} ${JSON.stringify(args ?? {})}`;
      },
      async run(args, ctx) {
        const v = ctx.checked?.verdict;
        if (v && (v.decision === "deny" || (v.decision === "ask" && !ctx.approved))) {
          return toolError(
            v.decision === "ask" ? `${name} needs approval, which it did not get: ${v.reason}` : `${name} is refused: ${v.reason}`,
            "policy_denied",
          );
        }
        return resultOf(name, await conn.call(info.name, (args ?? {}) as Record<string, unknown>, ctx.signal));
      },
    }),
  );
  POLICIES.set(tool, policy);
  return tool;
}

/** A tool of a server that did not start: every call reads why (the names come from the config's `tools`). */
function unavailableTool(conn: McpConnection, toolName: string, policy: McpPolicy, why: string): RegisteredTool {
  return registerTool(
    defineTool({
      name: mcpToolName(conn.name, toolName),
      description: `Tool ${toolName} of the MCP server "${conn.name}", which is not available: ${why}`,
      schema: z.looseObject({}),
      risk: policy.risk,
      approve: policy.approve,
      source: `mcp:${conn.name}`,
      idempotent: true,
      async run() {
        // Perhaps it starts now (a transient failure): then the call goes through.
        try {
          await conn.connect();
        } catch {
          return toolError(why, "mcp_server_unavailable");
        }
        return resultOf(toolName, await conn.call(toolName, {}));
      },
    }),
  );
}

/** The MCP tools of one workspace's config: offered ones, withheld ones (and why), problems, per-server status. */
export interface McpToolSet {
  offered: RegisteredTool[];
  withheld: Array<{ tool: RegisteredTool; why: string }>;
  /** Servers that did not start, tools skipped for a bad schema or name: each names its server. */
  problems: string[];
  servers: Array<{ name: string; ok: boolean; tools: number; detail: string }>;
  connections: McpConnection[];
  close(): Promise<void>;
}

/**
 * Starts every configured server (through `sandbox`), lists its tools and turns them into tools the
 * model can call, validated like the built-in ones. `taken` holds names already in use.
 */
export async function loadMcpTools(
  servers: Record<string, McpServerConfig>,
  opts: { sandbox: Sandbox; workspace: string; allowNetwork: boolean; taken?: Iterable<string> },
): Promise<McpToolSet> {
  const taken = new Set<string>([...TOOLS.map((t) => t.name), ...(opts.taken ?? [])]);
  const set: McpToolSet = {
    offered: [],
    withheld: [],
    problems: [],
    servers: [],
    connections: [],
    async close() {
      await Promise.all(set.connections.map((c) => c.close()));
    },
  };
  await Promise.all(
    Object.entries(servers).map(async ([name, config]) => {
      const conn = new McpConnection(name, config, opts);
      set.connections.push(conn);
      let infos: McpToolInfo[];
      try {
        infos = await conn.listTools();
      } catch (err) {
        const why = (err as Error).message;
        set.problems.push(why);
        set.servers.push({ name, ok: false, tools: 0, detail: why });
        for (const t of Object.keys(config.tools ?? {})) {
          const p = mcpPolicyOf(name, config, t);
          if (p.approve !== "deny") set.offered.push(unavailableTool(conn, t, p, why));
        }
        return;
      }
      let count = 0;
      for (const info of infos) {
        const full = mcpToolName(name, info.name);
        if (!FUNCTION_NAME.test(full)) {
          set.problems.push(
            `MCP server "${name}": tool "${info.name.slice(0, 80)}" skipped: ${full.length > 64 ? "its full name is longer than 64 characters" : "its name has characters a model cannot call (letters, digits, _ and - only)"}`,
          );
          continue;
        }
        if (taken.has(full)) {
          set.problems.push(`MCP server "${name}": tool "${info.name}" skipped: ${full} is already the name of another tool`);
          continue;
        }
        const problem = toolInputSchemaProblem(info.inputSchema ?? {});
        if (problem) {
          set.problems.push(`MCP server "${name}": tool "${info.name}" skipped: its input schema ${problem}`);
          continue;
        }
        taken.add(full);
        const schema = z.fromJSONSchema(info.inputSchema as Parameters<typeof z.fromJSONSchema>[0]);
        const policy = mcpPolicyOf(name, config, info.name);
        const tool = mcpTool(conn, info, policy, schema);
        count++;
        if (policy.approve === "deny") set.withheld.push({ tool, why: 'approve is "deny"' });
        else if (policy.risk === "network" && !opts.allowNetwork) set.withheld.push({ tool, why: "risk network needs --allow-network (or sandbox.network)" });
        else set.offered.push(tool);
      }
      set.servers.push({ name, ok: true, tools: count, detail: `${count} tool${count === 1 ? "" : "s"}, ${conn.isolation}` });
    }),
  );
  // The order of the config, whatever order the servers answered in.
  const order = Object.keys(servers);
  const rank = (n: string) => order.indexOf(n.split("__")[1] ?? "");
  set.offered.sort((a, b) => rank(a.name) - rank(b.name));
  set.servers.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
  return set;
}

// ---- per runtime ----

interface RuntimeLike {
  workspace: string;
  sandbox: Sandbox;
  settings?: { allowNetwork?: boolean };
  progress?: (e: { node: string; step: number; text: string }) => void;
  close(): Promise<void>;
}

const BY_RUNTIME = new WeakMap<object, Promise<RegisteredTool[]>>();
const RECORDINGS = new WeakMap<object, { ledger: Ledger; head: string }>();

/**
 * Makes a replay runtime answer MCP calls from the recorded run's ledger instead of starting any
 * server: the n-th call of a tool gets the n-th recorded result of that tool.
 */
export function answerMcpFromRecording(rt: object, recording: { ledger: Ledger; head: string }): void {
  RECORDINGS.set(rt, recording);
}

async function recordedTools(rec: { ledger: Ledger; head: string }): Promise<RegisteredTool[]> {
  const events = await rec.ledger.branch(rec.head, { types: ["agent_action", "environment_feedback"] });
  const actions = new Map(events.filter((e) => e.type === "agent_action").map((e) => [e.id, e as LedgerEvent<"agent_action">]));
  const queues = new Map<string, Array<LedgerEvent<"environment_feedback">>>();
  for (const e of events) {
    if (e.type !== "environment_feedback" || !e.causedBy) continue;
    const a = actions.get(e.causedBy);
    if (!a || !a.payload.tool.startsWith("mcp__")) continue;
    const q = queues.get(a.payload.tool) ?? [];
    q.push(e as LedgerEvent<"environment_feedback">);
    queues.set(a.payload.tool, q);
  }
  // Tools the recording called but never got a result from (paused, invalid) still exist for the model.
  for (const a of actions.values()) if (a.payload.tool.startsWith("mcp__") && !queues.has(a.payload.tool)) queues.set(a.payload.tool, []);
  return [...queues].map(([name, q]) => {
    return registerTool(
      defineTool({
        name,
        description: `${name} (answered from the recorded run: no MCP server is started in a replay)`,
        schema: z.looseObject({}),
        // A replay reads the recording and starts nothing.
        risk: "read",
        approve: "allow",
        source: `mcp:${name.split("__")[1]}`,
        idempotent: true,
        async run() {
          const fb = q.shift();
          if (!fb) return toolError(`${name} has no recorded result left to replay`, "replay_missing");
          const p = fb.payload;
          return { status: p.status === "ok" ? "ok" : "error", output: p.output, errorClass: p.errorClass ?? null };
        },
      }),
    );
  });
}

/**
 * The MCP tools a runtime's runs offer, loaded once per runtime from the workspace's config; the
 * servers stop when the runtime closes. A server that fails to start is reported, and the run goes on.
 */
export function mcpToolsOf(rt: RuntimeLike, taken: Iterable<string> = []): Promise<RegisteredTool[]> {
  let p = BY_RUNTIME.get(rt);
  if (!p) {
    const rec = RECORDINGS.get(rt);
    p = rec
      ? recordedTools(rec)
      : (async () => {
          const { config } = readConfig(rt.workspace);
          const servers = config.mcpServers ?? {};
          if (!Object.keys(servers).length) return [];
          const allowNetwork = rt.settings?.allowNetwork ?? config.sandbox?.network ?? false;
          const set = await loadMcpTools(servers, { sandbox: rt.sandbox, workspace: rt.workspace, allowNetwork, taken });
          const close = rt.close.bind(rt);
          rt.close = async () => {
            await set.close();
            await close();
          };
          for (const problem of set.problems) rt.progress?.({ node: "mcp", step: 0, text: problem });
          return set.offered;
        })();
    BY_RUNTIME.set(rt, p);
  }
  return p;
}
