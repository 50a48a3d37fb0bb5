/**
 * ledgerloop as an MCP *client*: one connection to one configured server. A stdio server is a
 * child process started through the run's sandbox (same isolation wrapper as a command, network
 * only when its risk is `network` and the run may use the network); an HTTP server is reached with
 * the SDK's streamable HTTP transport. Failures are values (`McpFailure`), never throws, so a tool
 * can hand them to the model.
 */
import { spawn, type ChildProcess } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig, McpStdioServerConfig } from "../config.js";
import { errorMessage } from "../errors.js";
import { commandEnv } from "../sandbox/executor.js";
import { bwrapArgv, DEFAULT_HIDDEN_HOST, DEFAULT_HIDDEN_IN_HOME, hiddenPaths, protectedPaths, shQuote, unshareArgv, unshareEnv, wrapperArgv, type Tools, type UidPlan, type WrapInput } from "../sandbox/isolation.js";
import { DEFAULT_LIMITS, rlimitScript } from "../sandbox/limits.js";
import type { Sandbox } from "../sandbox/port.js";

export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

/** What the model reads when a server cannot answer; `errorClass` says which way it failed. */
export interface McpFailure {
  errorClass: "mcp_server_unavailable" | "mcp_timeout" | "mcp_server_died" | "mcp_protocol_error";
  message: string;
}

/** A sandbox that can tell how it wraps a command (the configured one does: executor.ts). */
interface WrappingSandbox extends Sandbox {
  report?: { tools: Tools; disableUserns: boolean } | null;
  uidFor?(workspace: string): UidPlan;
}

/** argv (and env) that start `line` the way the sandbox starts a command, at its level. */
export function sandboxedArgv(sandbox: Sandbox, o: { workspace: string; cwd: string; line: string; env: Record<string, string>; allowNetwork: boolean }): { argv: string[]; env: Record<string, string>; isolation: string } {
  const sb = sandbox as WrappingSandbox;
  const env = { ...o.env };
  const rlimits = rlimitScript({ ...DEFAULT_LIMITS, cpuSeconds: 24 * 3600 });
  if (sb.level === "bwrap" || sb.level === "unshare") {
    if (!sb.report || !sb.uidFor) throw new Error(`the sandbox at level ${sb.level} cannot wrap a long-running server (no isolation report)`);
    const uid = sb.uidFor(o.workspace);
    const input: WrapInput = {
      command: o.line,
      cwd: o.cwd,
      workspace: o.workspace,
      env,
      allowNetwork: o.allowNetwork,
      protect: protectedPaths(o.workspace),
      writable: [],
      hidden: hiddenPaths([os.homedir(), uid.home], [...DEFAULT_HIDDEN_IN_HOME, ...DEFAULT_HIDDEN_HOST], o.workspace),
      uid,
      seccompFd: null,
      tools: sb.report.tools,
      disableUserns: sb.report.disableUserns,
    };
    const inner = sb.level === "bwrap" ? bwrapArgv(input) : unshareArgv(input);
    const finalEnv = sb.level === "unshare" ? unshareEnv(env, uid) : env;
    return { argv: wrapperArgv(sb.report.tools.sh, [], rlimits, inner), env: finalEnv, isolation: sb.level };
  }
  return { argv: wrapperArgv("/bin/sh", [], rlimits, ["bash", "-c", o.line]), env, isolation: "none" };
}

/**
 * The SDK's stdio transport over a process we start ourselves (through the sandbox wrapper),
 * which StdioClientTransport cannot do: it spawns its command directly.
 */
class SpawnedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private proc: ChildProcess | null = null;
  private readonly buffer = new ReadBuffer();
  stderrTail = "";

  constructor(private readonly spec: { argv: string[]; env: Record<string, string>; cwd: string }) {}

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const [cmd, ...args] = this.spec.argv;
      const proc = spawn(cmd!, args, { cwd: this.spec.cwd, env: this.spec.env, stdio: ["pipe", "pipe", "pipe"], detached: true });
      this.proc = proc;
      proc.on("error", (err) => {
        reject(err);
        this.onerror?.(err);
      });
      proc.on("spawn", () => resolve());
      proc.on("close", () => {
        this.proc = null;
        this.onclose?.();
      });
      proc.stdin!.on("error", (err) => this.onerror?.(err));
      proc.stdout!.on("data", (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let msg: JSONRPCMessage | null;
          try {
            msg = this.buffer.readMessage();
          } catch (err) {
            this.onerror?.(err as Error);
            continue;
          }
          if (!msg) break;
          this.onmessage?.(msg);
        }
      });
      proc.stderr!.on("data", (d: Buffer) => {
        this.stderrTail = (this.stderrTail + d.toString()).slice(-2000);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (!this.proc?.stdin?.writable) return resolve();
      if (this.proc.stdin.write(serializeMessage(message))) resolve();
      else this.proc.stdin.once("drain", resolve);
    });
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  async close(): Promise<void> {
    const p = this.proc;
    if (!p?.pid) return;
    // The server and whatever it started: its own process group (detached).
    try {
      process.kill(-p.pid, "SIGTERM");
    } catch {
      // gone
    }
    const t = setTimeout(() => {
      try {
        process.kill(-p.pid!, "SIGKILL");
      } catch {
        // gone
      }
    }, 2000);
    t.unref();
  }
}

export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

export interface McpCallResult {
  isError: boolean;
  text: string;
}

/** One configured MCP server: started on first use, started again after it died. */
export class McpConnection {
  private client: Client | null = null;
  private transport: SpawnedStdioTransport | StreamableHTTPClientTransport | null = null;
  private connecting: Promise<Client> | null = null;
  /** How the last start ended, for `doctor`. */
  isolation = "";
  readonly timeoutMs: number;
  /** Starting is not a call: a server that is slow to come up (a cold npx, a busy machine) is not hung. */
  readonly startTimeoutMs: number;

  constructor(
    readonly name: string,
    readonly config: McpServerConfig,
    private readonly env: { sandbox: Sandbox; workspace: string; allowNetwork: boolean },
  ) {
    this.timeoutMs = config.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS;
    this.startTimeoutMs = config.startTimeoutMs ?? Math.max(this.timeoutMs, DEFAULT_MCP_TIMEOUT_MS);
  }

  /** The client, connected (starting the server if needed). Throws McpStartError. */
  async connect(): Promise<Client> {
    if (this.client) return this.client;
    this.connecting ??= this.start().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async start(): Promise<Client> {
    const client = new Client({ name: "ledgerloop", version: "1.0.0" });
    let transport: SpawnedStdioTransport | StreamableHTTPClientTransport;
    if ("url" in this.config) {
      transport = new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers: this.config.headers ?? {} } });
      this.isolation = "http";
    } else {
      const c = this.config as McpStdioServerConfig;
      const cwd = c.cwd ? path.join(this.env.workspace, c.cwd) : this.env.workspace;
      const line = [c.command, ...(c.args ?? [])].map(shQuote).join(" ");
      // The runner's environment is scrubbed as for commands; what the config names is the server's.
      let wrapped: ReturnType<typeof sandboxedArgv>;
      try {
        wrapped = sandboxedArgv(this.env.sandbox, {
          workspace: this.env.workspace,
          cwd,
          line: `exec ${line}`,
          env: { ...commandEnv(), ...(c.env ?? {}) },
          allowNetwork: this.env.allowNetwork && c.risk === "network",
        });
      } catch (err) {
        throw new McpStartError(`MCP server "${this.name}" failed to start: ${errorMessage(err)}`);
      }
      this.isolation = wrapped.isolation;
      transport = new SpawnedStdioTransport({ argv: wrapped.argv, env: wrapped.env, cwd });
    }
    this.transport = transport;
    try {
      await client.connect(transport, { timeout: this.startTimeoutMs });
    } catch (err) {
      await transport.close().catch(() => {});
      this.transport = null;
      const tail = transport instanceof SpawnedStdioTransport && transport.stderrTail.trim() ? `; its stderr: ${transport.stderrTail.trim().slice(-500)}` : "";
      throw new McpStartError(`MCP server "${this.name}" failed to start: ${errorMessage(err)}${tail}`);
    }
    // The SDK's own close handler (on the transport) fails the pending requests; this one forgets the client.
    client.onclose = () => {
      if (this.client === client) this.client = null;
    };
    this.client = client;
    return client;
  }

  /** The server's tools as it lists them. */
  async listTools(): Promise<McpToolInfo[]> {
    const client = await this.connect();
    const r = await client.listTools(undefined, { timeout: this.startTimeoutMs });
    return r.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as Record<string, unknown> }));
  }

  /** Calls a tool; a server that cannot answer is an McpFailure, not a throw. */
  async call(tool: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<McpCallResult | McpFailure> {
    let client: Client;
    try {
      client = await this.connect();
    } catch (err) {
      return { errorClass: "mcp_server_unavailable", message: errorMessage(err) };
    }
    try {
      const r = (await client.callTool({ name: tool, arguments: args }, undefined, { timeout: this.timeoutMs, signal })) as {
        content?: Array<{ type: string; text?: string }>;
        structuredContent?: unknown;
        isError?: boolean;
      };
      const parts = (r.content ?? []).map((c) => (c.type === "text" ? (c.text ?? "") : `[${c.type} content]`));
      if (!parts.length && r.structuredContent !== undefined) parts.push(JSON.stringify(r.structuredContent));
      return { isError: Boolean(r.isError), text: parts.join("\n") };
    } catch (err) {
      const msg = errorMessage(err);
      if (/timed out|timeout/i.test(msg)) {
        // A hung server is not trusted with the next call: it is stopped and started afresh then.
        await this.close();
        return { errorClass: "mcp_timeout", message: `MCP server "${this.name}" did not answer ${tool} within ${this.timeoutMs} ms (it was stopped; the next call starts it again)` };
      }
      if (/closed|EPIPE|ECONNRESET|not connected/i.test(msg) || !this.client) {
        this.client = null;
        const tail = this.transport instanceof SpawnedStdioTransport && this.transport.stderrTail.trim() ? `; its stderr: ${this.transport.stderrTail.trim().slice(-500)}` : "";
        return { errorClass: "mcp_server_died", message: `MCP server "${this.name}" stopped while running ${tool}: ${msg}${tail} (the next call starts it again)` };
      }
      return { errorClass: "mcp_protocol_error", message: `MCP server "${this.name}" refused ${tool}: ${msg}` };
    }
  }

  /** Stops the server (a stdio one with its whole process group). */
  async close(): Promise<void> {
    const c = this.client;
    const t = this.transport;
    this.client = null;
    this.transport = null;
    await t?.close().catch(() => {});
    await c?.close().catch(() => {});
  }
}

export class McpStartError extends Error {
  override name = "McpStartError";
}

/** True when a server's tools must be treated as `network` whatever the config says: an HTTP server off this machine. */
export function remoteServer(config: McpServerConfig): boolean {
  if (!("url" in config)) return false;
  const host = new URL(config.url).hostname;
  return !(host === "localhost" || host === "::1" || host === "[::1]" || /^127\./.test(host));
}
