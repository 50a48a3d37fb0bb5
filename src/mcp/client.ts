/**
 * ledgerloop as an MCP *client*: one connection to one configured server. A stdio server is
 * started by the run's sandbox exactly as a command (Sandbox.startServer: same isolation, read-only
 * protected paths, seccomp filter, PID namespace; network only when its risk is `network` and the
 * run may use the network), and every request to it runs inside the workspace guard, whose repairs
 * the model reads with the result. An HTTP server is reached with the SDK's streamable HTTP
 * transport. Failures are values (`McpFailure`), never throws, so a tool can hand them to the model.
 */
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig, McpStdioServerConfig } from "../config.js";
import { errorMessage } from "../errors.js";
import { MASK_RACE_ATTEMPTS, pathsInPrivateDirs, PRIVATE_DIRS, shQuote } from "../sandbox/isolation.js";
import type { Sandbox } from "../sandbox/port.js";
import type { ServerProcess } from "../sandbox/server-process.js";

export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

/** What the model reads when a server cannot answer; `errorClass` says which way it failed. */
export interface McpFailure {
  errorClass: "mcp_server_unavailable" | "mcp_timeout" | "mcp_server_died" | "mcp_protocol_error";
  message: string;
}

/** The SDK's newline-delimited JSON-RPC framing of stdio (loaded with the SDK). */
type StdioFraming = typeof import("@modelcontextprotocol/sdk/shared/stdio.js");

/**
 * The SDK's stdio transport over a server the sandbox started (Sandbox.startServer), which
 * StdioClientTransport cannot do: it spawns its command directly.
 */
class SandboxedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer: InstanceType<StdioFraming["ReadBuffer"]>;
  private readonly serialize: StdioFraming["serializeMessage"];
  private closed = false;
  stderrTail = "";
  /** The start of its stderr: where a sandbox that failed to set up says why. */
  stderrHead = "";

  constructor(
    readonly server: ServerProcess,
    framing: StdioFraming,
  ) {
    this.buffer = new framing.ReadBuffer();
    this.serialize = framing.serializeMessage;
  }

  async start(): Promise<void> {
    const s = this.server;
    s.onError((err) => this.onerror?.(err));
    void s.exited.then(() => {
      if (this.closed) return;
      this.closed = true;
      this.onclose?.();
    });
    s.stdin.on("error", (err) => this.onerror?.(err));
    s.stdout.on("data", (chunk: Buffer) => {
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
    s.stderr.on("data", (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString()).slice(-2000);
      if (this.stderrHead.length < 2000) this.stderrHead = (this.stderrHead + d.toString()).slice(0, 2000);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      const stdin = this.server.stdin;
      if (!stdin.writable) return resolve();
      if (stdin.write(this.serialize(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Ends the server and everything it started; resolves once they are gone. */
  async close(): Promise<void> {
    await this.server.stop();
    if (!this.closed) {
      this.closed = true;
      this.onclose?.();
    }
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
  private transport: SandboxedStdioTransport | StreamableHTTPClientTransport | null = null;
  private connecting: Promise<Client> | null = null;
  /** What the guard undid around the server's requests that the model has not read yet. */
  private readonly notes: string[] = [];
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
    // The SDK (with its schemas) loads when a server is first used: most runs configure none.
    const [{ Client }, { StreamableHTTPClientTransport }, framing] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/index.js"),
      import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
      import("@modelcontextprotocol/sdk/shared/stdio.js"),
    ]);
    for (let attempt = 1; ; attempt++) {
      const client = new Client({ name: "ledgerloop", version: "1.0.0" });
      let server: ServerProcess | null = null;
      let transport: SandboxedStdioTransport | StreamableHTTPClientTransport;
      if ("url" in this.config) {
        transport = new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers: this.config.headers ?? {} } });
        this.isolation = "http";
      } else {
        const c = this.config as McpStdioServerConfig;
        const cwd = c.cwd ? path.join(this.env.workspace, c.cwd) : this.env.workspace;
        const line = [c.command, ...(c.args ?? [])].map(shQuote).join(" ");
        const sandbox = this.env.sandbox;
        if (!sandbox.startServer) throw new McpStartError(`MCP server "${this.name}" failed to start: this sandbox (${sandbox.level}) cannot run a server`);
        try {
          // Wrapped as a command at the run's level; the runner's environment is scrubbed as for
          // commands, and what the config names is the server's.
          server = await sandbox.startServer({
            command: `exec ${line}`,
            cwd,
            workspace: this.env.workspace,
            ownEnv: c.env ?? {},
            allowNetwork: this.env.allowNetwork && c.risk === "network",
            limits: { cpuSeconds: 24 * 3600 },
          });
        } catch (err) {
          throw new McpStartError(`MCP server "${this.name}" failed to start: ${errorMessage(err)}`);
        }
        this.isolation = sandbox.level;
        transport = new SandboxedStdioTransport(server, framing);
      }
      this.transport = transport;
      try {
        // Starting runs the server's code too: the guard watches it as it watches a call.
        await this.guarded(transport, () => client.connect(transport, { timeout: this.startTimeoutMs }));
      } catch (err) {
        await transport.close().catch(() => {});
        this.transport = null;
        if (server && transport instanceof SandboxedStdioTransport) {
          // Its exit and its last words may still be on their way.
          const s = server;
          const ended = Promise.all([s.exited, s.stderr.closed ? null : new Promise((r) => s.stderr.once("close", r))]);
          await Promise.race([ended, new Promise((r) => setTimeout(r, 500))]);
          // bwrap stopped before the server ran: a host socket (or hidden file) it was to mask went away.
          if (attempt < MASK_RACE_ATTEMPTS && server.setupRaced(transport.stderrHead)) continue;
        }
        const tail =
          transport instanceof SandboxedStdioTransport && transport.stderrTail.trim() ? `; its stderr: ${transport.stderrTail.trim().slice(-500)}` : "";
        throw new McpStartError(`MCP server "${this.name}" failed to start: ${errorMessage(err)}${tail}${this.hiddenNote()}${this.noteText()}`);
      }
      // The SDK's own close handler (on the transport) fails the pending requests; this one forgets the client.
      client.onclose = () => {
        if (this.client === client) this.client = null;
      };
      this.client = client;
      return client;
    }
  }

  /**
   * Why a stdio server may not have been found: paths of its command line that an isolating level
   * hides (a server kept in /tmp runs on the host, not in the sandbox, whose /tmp is private).
   */
  private hiddenNote(): string {
    if ("url" in this.config || this.isolation === "none") return "";
    const c = this.config as McpStdioServerConfig;
    const hidden = pathsInPrivateDirs([c.command, ...(c.args ?? [])], this.env.workspace);
    if (hidden.length === 0) return "";
    return (
      `; note: ${hidden.join(", ")} ${hidden.length === 1 ? "is" : "are"} outside the workspace under ${PRIVATE_DIRS.join(", ")}, ` +
      `which the sandbox (${this.isolation}) replaces with private, empty directories: keep the server elsewhere or in the workspace`
    );
  }

  /** The server's tools as it lists them. */
  async listTools(): Promise<McpToolInfo[]> {
    const client = await this.connect();
    const t = this.transport;
    const r = await this.guarded(t, () => client.listTools(undefined, { timeout: this.startTimeoutMs }));
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
      const t = this.transport;
      const r = (await this.guarded(t, () => client.callTool({ name: tool, arguments: args }, undefined, { timeout: this.timeoutMs, signal }))) as {
        content?: Array<{ type: string; text?: string }>;
        structuredContent?: unknown;
        isError?: boolean;
      };
      const parts = (r.content ?? []).map((c) => (c.type === "text" ? (c.text ?? "") : `[${c.type} content]`));
      if (!parts.length && r.structuredContent !== undefined) parts.push(JSON.stringify(r.structuredContent));
      return { isError: Boolean(r.isError), text: parts.join("\n") + this.noteText() };
    } catch (err) {
      const msg = errorMessage(err);
      if (/timed out|timeout/i.test(msg)) {
        // A hung server is not trusted with the next call: it is stopped and started afresh then.
        await this.close();
        return {
          errorClass: "mcp_timeout",
          message: `MCP server "${this.name}" did not answer ${tool} within ${this.timeoutMs} ms (it was stopped; the next call starts it again)${this.noteText()}`,
        };
      }
      if (/closed|EPIPE|ECONNRESET|not connected/i.test(msg) || !this.client) {
        this.client = null;
        const tail =
          this.transport instanceof SandboxedStdioTransport && this.transport.stderrTail.trim()
            ? `; its stderr: ${this.transport.stderrTail.trim().slice(-500)}`
            : "";
        return {
          errorClass: "mcp_server_died",
          message: `MCP server "${this.name}" stopped while running ${tool}: ${msg}${tail} (the next call starts it again)${this.noteText()}`,
        };
      }
      return { errorClass: "mcp_protocol_error", message: `MCP server "${this.name}" refused ${tool}: ${msg}${this.noteText()}` };
    }
  }

  /** Runs one request to a stdio server inside its guard (see ServerProcess.around); an HTTP server's process is not ours. */
  private guarded<T>(t: SandboxedStdioTransport | StreamableHTTPClientTransport | null, fn: () => Promise<T>): Promise<T> {
    return t instanceof SandboxedStdioTransport ? t.server.around(fn, this.notes) : fn();
  }

  /** What the guard and the set-id clean-up undid since the model was last told, as lines to append (and forgets them). */
  private noteText(): string {
    const t = this.transport;
    if (t instanceof SandboxedStdioTransport) this.notes.push(...t.server.drainNotes());
    const notes = this.notes.splice(0);
    return notes.length ? `\n${notes.map((n) => `ledgerloop: ${n}`).join("\n")}` : "";
  }

  /**
   * Stops the server; a stdio one with every process it started, and resolves once they are gone
   * (what its end undid is told with the next call's result).
   */
  async close(): Promise<void> {
    const c = this.client;
    const t = this.transport;
    this.client = null;
    this.transport = null;
    await t?.close().catch(() => {});
    if (t instanceof SandboxedStdioTransport) this.notes.push(...t.server.drainNotes());
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
