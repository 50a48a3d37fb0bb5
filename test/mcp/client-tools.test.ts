import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import path from "node:path";
import { buildSync } from "esbuild";
import { Command } from "@langchain/langgraph";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createCodingAgent } from "../../src/agent/graph.js";
import { replay } from "../../src/runs/time-travel.js";
import { handleTools } from "../../src/cli/tools.js";
import { parseConfig } from "../../src/config.js";
import { createSandbox } from "../../src/sandbox/executor.js";
import type { LedgerEvent } from "../../src/state.js";
import { loadMcpTools, mcpPolicyOf } from "../../src/agent/tools/mcp.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cli } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// A real MCP server (test/fixtures/mcp/demo-server.mjs, on the SDK) is started over stdio by the
// runtime, through the run's sandbox (bwrap here when available), and counts the calls it answers
// in calls.log: what a run (and a replay) really asked of it.

const SERVER = path.resolve(__dirname, "../fixtures/mcp/demo-server.mjs");
/** The server and the SDK in one file, so that it runs from the workspace alone (see the fixture's header). */
let bundled: Uint8Array | null = null;
function serverBundle(): Uint8Array {
  bundled ??= buildSync({
    entryPoints: [SERVER],
    bundle: true,
    platform: "node",
    format: "esm",
    write: false,
    logLevel: "silent",
    // CommonJS dependencies of the SDK call require(); an ES module has none of its own.
    banner: { js: 'import { createRequire as __ll_cr } from "node:module"; const require = __ll_cr(import.meta.url);' },
  }).outputFiles[0]!.contents;
  return bundled;
}

function serverEntry(ws: string, extra: Record<string, unknown> = {}) {
  return {
    command: process.execPath,
    args: ["server.mjs"],
    env: { CALLS_LOG: path.join(ws, "calls.log") },
    risk: "exec",
    timeoutMs: 20_000,
    tools: { echo: { risk: "read" }, hang: { risk: "read" } },
    ...extra,
  };
}

function mcpWorkspace(extra: Record<string, unknown> = {}): string {
  const ws = tempWorkspace(undefined, { "a.txt": "a\n", ".gitignore": "calls.log\n" });
  fs.writeFileSync(path.join(ws, "server.mjs"), serverBundle());
  fs.writeFileSync(path.join(ws, "ledgerloop.config.json"), JSON.stringify({ mcpServers: { demo: serverEntry(ws, extra) } }));
  return ws;
}

const calls = (ws: string): string[] =>
  fs.existsSync(path.join(ws, "calls.log")) ? fs.readFileSync(path.join(ws, "calls.log"), "utf8").trim().split("\n").filter(Boolean) : [];
const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });
const fbOf = (es: LedgerEvent[]) => es.filter((e): e is LedgerEvent<"environment_feedback"> => e.type === "environment_feedback");

let agents: TestAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.map((a) => a.close()));
  agents = [];
});
afterAll(() => cleanupTemp());

const cfg = { configurable: { thread_id: "t1" }, durability: "sync" as const, recursionLimit: 100 };

describe("tools from an MCP server in a run", () => {
  it("a read tool runs at once, an exec tool pauses for approval under ask; both are action → feedback pairs", async () => {
    const ws = mcpWorkspace();
    const script = {
      decide: [call("mcp__demo__echo", { text: "hello" }), call("mcp__demo__touch", { name: "made.txt" }), call("finish", { summary: "done" })],
    };
    const a = await testAgent(ws, script, { approve: "ask" });
    agents.push(a);
    const agent = createCodingAgent({ runtime: a.rt });
    await agent.invoke({ goal: "x" }, cfg);
    const paused = await agent.getState(cfg);
    const request = paused.tasks.flatMap((t) => t.interrupts)[0]!.value as { kind: string; tool: string; command: string; rule: string };
    expect(request).toMatchObject({ kind: "approval", tool: "mcp__demo__touch", rule: "mcp.approve", command: 'mcp__demo__touch {"name":"made.txt"}' });
    // Paused before the call: the server answered the echo only.
    expect(calls(ws)).toEqual(['echo {"text":"hello"}']);
    expect(fs.existsSync(path.join(ws, "made.txt"))).toBe(false);

    await agent.invoke(new Command({ resume: { decision: "approve" } }), cfg);
    expect((await agent.getState(cfg)).values).toMatchObject({ status: "finished" });
    expect(calls(ws)).toEqual(['echo {"text":"hello"}', 'touch {"name":"made.txt"}']);
    // The server ran in the workspace (its cwd) and could write there.
    expect(fs.readFileSync(path.join(ws, "made.txt"), "utf8")).toBe("made by mcp\n");
    const events = await a.events();
    const [echo, touch] = fbOf(events);
    expect(echo!.payload).toMatchObject({ tool: "mcp__demo__echo", status: "ok", output: "echo: hello" });
    expect(touch!.payload).toMatchObject({ tool: "mcp__demo__touch", status: "ok", output: "created made.txt" });
    const chain = await a.rt.ledger.causalChain(touch!.id);
    expect(chain.map((e) => e.type)).toEqual(["model_call", "agent_action", "environment_feedback"]);
    const approval = events.find((e): e is LedgerEvent<"approval"> => e.type === "approval")!;
    expect(approval.payload).toMatchObject({ decision: "approved", by: "user", rule: "mcp.approve" });
    expect(approval.causedBy).toBe(touch!.causedBy);
    // The model read the tool's result.
    expect(
      a
        .decidePrompt(2)
        .map((m) => String(m.content))
        .join("\n"),
    ).toMatch(/echo: hello/);
  }, 120_000);

  it("a rejected exec tool never reaches the server; the model reads why", async () => {
    const ws = mcpWorkspace();
    const script = { decide: [call("mcp__demo__touch", { name: "no.txt" }), call("finish", { summary: "done" })] };
    const a = await testAgent(ws, script, { approve: "deny" });
    agents.push(a);
    expect((await a.run("x")).status).toBe("finished");
    const [fb] = fbOf(await a.events());
    expect(fb!.payload).toMatchObject({ status: "error", errorClass: "policy_denied" });
    expect(fb!.payload.output).toMatch(/needs approval, which it did not get/);
    expect(calls(ws)).toEqual([]);
  }, 120_000);

  it("a server killed mid-call and a hung one are feedback; the server is started again and the run goes on", async () => {
    const ws = mcpWorkspace({ timeoutMs: 3000 });
    const script = {
      decide: [
        call("mcp__demo__die", {}),
        call("mcp__demo__echo", { text: "back" }),
        call("mcp__demo__hang", {}),
        call("mcp__demo__echo", { text: "again" }),
        call("finish", { summary: "done" }),
      ],
    };
    const a = await testAgent(ws, script, { approve: "auto" });
    agents.push(a);
    expect((await a.run("x")).status).toBe("finished");
    const fbs = fbOf(await a.events()).map((e) => e.payload);
    expect(fbs[0]).toMatchObject({ tool: "mcp__demo__die", status: "error", errorClass: "mcp_server_died" });
    expect(fbs[0]!.output).toMatch(/MCP server "demo" stopped while running die/);
    expect(fbs[1]).toMatchObject({ status: "ok", output: "echo: back" });
    expect(fbs[2]).toMatchObject({ tool: "mcp__demo__hang", status: "error", errorClass: "mcp_timeout" });
    expect(fbs[2]!.output).toMatch(/did not answer hang within 3000 ms/);
    expect(fbs[3]).toMatchObject({ status: "ok", output: "echo: again" });
  }, 120_000);

  it("a server slow to start is waited for longer than one call (startTimeoutMs, at least 60 s by default); past it, it failed to start", async () => {
    // Calls may take 3 s; the server takes 4 s to answer at all.
    const slow = (extra: Record<string, unknown>) => mcpWorkspace({ timeoutMs: 3000, env: { START_DELAY_MS: "4000" }, ...extra });
    const ws = slow({});
    const a = await testAgent(ws, { decide: [call("mcp__demo__echo", { text: "late" }), call("finish", { summary: "done" })] }, { approve: "auto" });
    agents.push(a);
    expect((await a.run("x")).status).toBe("finished");
    expect(fbOf(await a.events())[0]!.payload).toMatchObject({ status: "ok", output: "echo: late" });

    const ws2 = slow({ startTimeoutMs: 300 });
    const progress: string[] = [];
    const b = await testAgent(ws2, { decide: [call("mcp__demo__echo", { text: "late" }), call("finish", { summary: "done" })] }, { approve: "auto" });
    b.rt.progress = (e) => progress.push(e.text);
    agents.push(b);
    expect((await b.run("x")).status).toBe("finished");
    expect(progress.join("\n")).toMatch(/MCP server "demo" failed to start: .*timed out/i);
    expect(fbOf(await b.events())[0]!.payload).toMatchObject({ status: "error", errorClass: "mcp_server_unavailable" });
  }, 120_000);

  it("a server that fails to start is reported and the run goes on; its configured tools say why", async () => {
    const ws = mcpWorkspace({ args: ["no-such-server.mjs"], timeoutMs: 5000 });
    const progress: string[] = [];
    const script = { decide: [call("mcp__demo__echo", {}), call("finish", { summary: "done" })] };
    const a = await testAgent(ws, script, { approve: "auto" });
    a.rt.progress = (e) => progress.push(e.text);
    agents.push(a);
    expect((await a.run("x")).status).toBe("finished");
    expect(progress.join("\n")).toMatch(/MCP server "demo" failed to start/);
    const [fb] = fbOf(await a.events());
    expect(fb!.payload).toMatchObject({ tool: "mcp__demo__echo", status: "error", errorClass: "mcp_server_unavailable" });
    expect(fb!.payload.output).toMatch(/no-such-server\.mjs/);
  }, 120_000);

  it("replay answers the MCP calls from the ledger: the same results, zero calls to the server", async () => {
    const ws = mcpWorkspace();
    const script = { decide: [call("mcp__demo__echo", { text: "r" }), call("mcp__demo__touch", { name: "r.txt" }), call("finish", { summary: "done" })] };
    const a = await testAgent(ws, script, { approve: "auto" });
    agents.push(a);
    expect((await a.run("x")).status).toBe("finished");
    expect(calls(ws)).toHaveLength(2);
    // In a test temp dir, so cleanupTemp removes it (replay's default is a new temp dir left for the user).
    const r = await replay(a.rt, "t1", { workspace: path.join(tempWorkspace(), "replay") });
    try {
      expect(r.divergences).toEqual([]);
      expect(r.status).toBe("finished");
      expect(calls(ws)).toHaveLength(2);
      expect(calls(r.workspace)).toEqual([]);
      const replayed = fbOf(await r.runtime.ledger.list(r.thread)).filter((e) => e.payload.tool.startsWith("mcp__"));
      expect(replayed.map((e) => e.payload.output)).toEqual(["echo: r", "created r.txt"]);
    } finally {
      await r.runtime.close();
    }
  }, 120_000);
});

describe("through the CLI", () => {
  // Real processes: the pause survives the first one, the server starts again in the second, and
  // each process exits when its run ends (its servers stopped with it).
  it("run pauses on the exec tool, resume --approve calls it, and both processes exit", () => {
    const ws = mcpWorkspace();
    const traj = path.join(ws, "..", `mcp-${path.basename(ws)}.json`);
    fs.writeFileSync(
      traj,
      JSON.stringify({
        decide: [call("mcp__demo__echo", { text: "cli" }), call("mcp__demo__touch", { name: "cli.txt" }), call("finish", { summary: "done" })],
      }),
    );
    const first = cli(["run", "task", "-w", ws, "--model", `scripted:${traj}`, "--thread", "M", "--json", "-q"], { timeoutMs: 120_000 });
    expect(first.signal).toBeNull();
    expect(first.code, first.stderr).toBe(1);
    expect(JSON.parse(first.stdout)).toMatchObject({
      status: "awaiting_approval",
      pending: { kind: "approval", tool: "mcp__demo__touch", rule: "mcp.approve" },
    });
    expect(calls(ws)).toEqual(['echo {"text":"cli"}']);
    const done = cli(["resume", "M", "-w", ws, "--approve", "--json", "-q"], { timeoutMs: 120_000 });
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ status: "finished" });
    expect(calls(ws)).toEqual(['echo {"text":"cli"}', 'touch {"name":"cli.txt"}']);
    expect(fs.existsSync(path.join(ws, "cli.txt"))).toBe(true);
    fs.rmSync(traj, { force: true });
  }, 240_000);
});

describe("the server inside the sandbox", () => {
  it("a server kept in /tmp outside the workspace is not found in the sandbox, and the failure says why", async () => {
    const probe = createSandbox({ level: "auto" });
    if (probe.level === "none") return void console.warn("skipped: level none keeps the host's /tmp (no bwrap/unshare here)");
    const ws = mcpWorkspace();
    const elsewhere = fs.mkdtempSync("/tmp/ll-mcp-");
    try {
      const script = path.join(elsewhere, "server.mjs");
      fs.writeFileSync(script, serverBundle());
      const servers = { demo: parseConfig({ mcpServers: { demo: { ...serverEntry(ws), args: [script], timeoutMs: 5000 } } }).mcpServers!.demo! };
      const set = await loadMcpTools(servers, { sandbox: createSandbox({ level: probe.level, workspace: ws }), workspace: ws, allowNetwork: false });
      try {
        expect(set.problems.join("\n")).toContain(
          `note: ${script} is outside the workspace under /run, /tmp, /dev/shm, which the sandbox (${probe.level}) replaces with private, empty directories`,
        );
      } finally {
        await set.close();
      }
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 120_000);

  it("reaches the network only when its risk is network and the run allows it", async () => {
    const probe = createSandbox({ level: "auto" });
    if (probe.level === "none") return void console.warn("skipped: level none cannot take the network away (no bwrap/unshare here)");
    const listener = net.createServer((s) => s.end()).listen(0, "127.0.0.1");
    await new Promise((r) => listener.once("listening", r));
    const port = (listener.address() as net.AddressInfo).port;
    try {
      const ws = mcpWorkspace();
      const reach = async (risk: string, allowNetwork: boolean) => {
        const servers = { demo: parseConfig({ mcpServers: { demo: { ...serverEntry(ws), env: { REACH: "1" }, risk, tools: {} } } }).mcpServers!.demo! };
        const set = await loadMcpTools(servers, { sandbox: createSandbox({ level: probe.level, workspace: ws }), workspace: ws, allowNetwork });
        try {
          const tool = [...set.offered, ...set.withheld.map((w) => w.tool)].find((t) => t.name === "mcp__demo__reach")!;
          const bound = tool.bind({ port });
          if (!bound.ok) throw new Error("reach's arguments were refused");
          return (await bound.call.run({} as never)).output;
        } finally {
          await set.close();
        }
      };
      expect(await reach("exec", true)).toMatch(/^unreachable/);
      expect(await reach("network", false)).toMatch(/^unreachable/);
      expect(await reach("network", true)).toBe("reached");
    } finally {
      listener.close();
    }
  }, 120_000);

  it("a secret in a tool's result (from the server's configured env) is redacted in the ledger; so is one in the arguments", async () => {
    const secret = "sk-proj-Zq8vN3xW1tY7uP0aR5sD2fG9hJ4kL6mB";
    const ws = mcpWorkspace();
    const file = path.join(ws, "ledgerloop.config.json");
    const config = JSON.parse(fs.readFileSync(file, "utf8"));
    config.mcpServers.demo.env.ECHO_EXTRA = ` token ${secret}`;
    fs.writeFileSync(file, JSON.stringify(config));
    const other = "sk-proj-Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0KkLl";
    const script = { decide: [call("mcp__demo__echo", { text: `key ${other}` }), call("finish", { summary: "done" })] };
    const a = await testAgent(ws, script, { approve: "auto" });
    agents.push(a);
    expect((await a.run("x")).status).toBe("finished");
    const events = await a.events();
    const text = JSON.stringify(events);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(other);
    // The server answered with the secret (it reached the server's env), and the ledger kept a marker.
    expect(fbOf(events)[0]!.payload.output).toMatch(/^echo: key \[REDACTED\]:openai token \[REDACTED\]:openai$/);
    // Arguments are redacted when the action is written, before the call: the server never saw that one.
    expect(calls(ws)[0]).not.toContain(other);
  }, 120_000);
});

describe("loading and listing", () => {
  it("ledgerloop tools lists the server's tools with source mcp:<server> and risk; a broken schema is reported with the server's name", async () => {
    const ws = mcpWorkspace({ env: { BAD_SCHEMA: "1" }, tools: { echo: { risk: "read" }, hang: { approve: "deny" } } });
    const rows = await handleTools({ workspace: ws });
    const mcp = rows.filter((r) => r.source.startsWith("mcp:"));
    expect(mcp.map((r) => [r.name, r.source, r.risk, r.approve, r.offered])).toEqual([
      ["mcp__demo__echo", "mcp:demo", "read", "allow", true],
      ["mcp__demo__touch", "mcp:demo", "exec", "ask", true],
      ["mcp__demo__die", "mcp:demo", "exec", "ask", true],
      ["mcp__demo__hang", "mcp:demo", "exec", "deny", false],
    ]);
    expect(mcp[0]!.parameters).toMatchObject({ type: "object", properties: { text: { type: "string" } }, required: ["text"] });
    expect(rows.some((r) => r.name.includes("broken"))).toBe(false);

    const set = await loadMcpTools(parseConfig(JSON.parse(fs.readFileSync(path.join(ws, "ledgerloop.config.json"), "utf8"))).mcpServers!, {
      sandbox: createSandbox({ level: "none", workspace: ws }),
      workspace: ws,
      allowNetwork: false,
      taken: ["mcp__demo__die"],
    });
    try {
      expect(set.problems).toEqual([
        'MCP server "demo": tool "die" skipped: mcp__demo__die is already the name of another tool',
        'MCP server "demo": tool "broken" skipped: its input schema is not a valid JSON schema: Unsupported type: 42',
      ]);
      expect(set.servers).toEqual([{ name: "demo", ok: true, tools: 3, detail: "3 tools, none" }]);
      // Arguments are validated like a built-in tool's before the server sees them.
      const echo = set.offered.find((t) => t.name === "mcp__demo__echo")!;
      expect(echo.schema.safeParse({ text: 3 }).success).toBe(false);
    } finally {
      await set.close();
    }
  }, 120_000);

  it("a network tool is not offered without --allow-network", async () => {
    const ws = mcpWorkspace({ risk: "network", tools: {} });
    const rows = (await handleTools({ workspace: ws })).filter((r) => r.source === "mcp:demo");
    expect(rows.every((r) => !r.offered && /--allow-network/.test(r.why ?? ""))).toBe(true);
    expect(rows).toHaveLength(4);
    const allowed = (await handleTools({ workspace: ws, allowNetwork: true })).filter((r) => r.source === "mcp:demo");
    expect(allowed.every((r) => r.offered && r.risk === "network")).toBe(true);
  }, 120_000);
});

describe("a streamable HTTP server", () => {
  it("is listed and called with its configured headers; one off this machine counts as network", async () => {
    const seen: string[] = [];
    // Stateless: a fresh SDK server and transport per request, as the SDK's examples do.
    const httpServer = http.createServer(async (req, res) => {
      seen.push(String(req.headers["x-team"]));
      const server = new Server({ name: "web", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: [
          { name: "lookup", description: "Looks a word up.", inputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] } },
        ],
      }));
      server.setRequestHandler(CallToolRequestSchema, async (r) => ({ content: [{ type: "text", text: `${String(r.params.arguments?.word)}: a word` }] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on("close", () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((r) => httpServer.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(httpServer.address() as net.AddressInfo).port}/mcp`;
    try {
      const ws = tempWorkspace();
      const servers = parseConfig({ mcpServers: { web: { url, headers: { "X-Team": "blue" }, risk: "read" } } }).mcpServers!;
      const set = await loadMcpTools(servers, { sandbox: createSandbox({ level: "none", workspace: ws }), workspace: ws, allowNetwork: false });
      try {
        expect(set.servers).toEqual([{ name: "web", ok: true, tools: 1, detail: "1 tool, http" }]);
        const lookup = set.offered.find((t) => t.name === "mcp__web__lookup")!;
        const bound = lookup.bind({ word: "ledger" });
        if (!bound.ok) throw new Error("lookup's arguments were refused");
        expect(await bound.call.run({} as never)).toMatchObject({ status: "ok", output: "ledger: a word" });
      } finally {
        await set.close();
      }
      expect(seen.length).toBeGreaterThan(1);
      expect(new Set(seen)).toEqual(new Set(["blue"]));
    } finally {
      httpServer.close();
    }
    expect(mcpPolicyOf("web", { url: "https://mcp.example.com/mcp", risk: "read" }, "lookup")).toMatchObject({ risk: "network" });
    expect(mcpPolicyOf("web", { url: "http://127.0.0.1:9/mcp", risk: "read" }, "lookup")).toMatchObject({ risk: "read", approve: "allow" });
  }, 120_000);
});

describe("doctor", () => {
  it("has a line per MCP server: its tools and isolation, or why it did not start", async () => {
    const { handleDoctor } = await import("../../src/cli/doctor.js");
    const ws = mcpWorkspace({ env: { BAD_SCHEMA: "1" } });
    const file = path.join(ws, "ledgerloop.config.json");
    const config = JSON.parse(fs.readFileSync(file, "utf8"));
    config.mcpServers.gone = { command: process.execPath, args: ["missing.mjs"], timeoutMs: 5000 };
    fs.writeFileSync(file, JSON.stringify(config));
    const r = await handleDoctor({ workspace: ws });
    const demo = r.checks.find((c) => c.name === "mcp:demo")!;
    expect(demo).toMatchObject({ ok: true });
    expect(demo.detail).toMatch(new RegExp(`^4 tools, ${r.sandbox.level}; tool "broken" skipped: its input schema is not a valid JSON schema`));
    const gone = r.checks.find((c) => c.name === "mcp:gone")!;
    expect(gone.ok).toBe(false);
    expect(gone.detail).toMatch(/MCP server "gone" failed to start: .*missing\.mjs/s);
  }, 120_000);
});

describe("bad mcpServers config is refused with the field's path", () => {
  const bad = (servers: unknown) => () => parseConfig({ mcpServers: servers });
  it.each([
    [{ fs: { command: "node", argz: [] } }, /mcpServers\.fs: unknown key "argz"/],
    [{ fs: { command: "node", args: "x" } }, /mcpServers\.fs\.args: .*expected array/],
    [{ fs: { command: "node", risk: "danger" } }, /mcpServers\.fs\.risk: /],
    [{ fs: { command: "node", tools: { t: { approve: "maybe" } } } }, /mcpServers\.fs\.tools\.t\.approve: /],
    [{ fs: { command: "node", tools: { t: { timeout: 1 } } } }, /mcpServers\.fs\.tools\.t: unknown key "timeout"/],
    [{ web: { url: "http://127.0.0.1:1/mcp", headers: { a: 1 } } }, /mcpServers\.web\.headers\.a: .*expected string/],
    [{ web: { url: "http://127.0.0.1:1/mcp", command: "x" } }, /mcpServers\.web: unknown key "command"/],
    [{ web: { url: "ftp://x" } }, /mcpServers\.web\.url: /],
    [{ fs: { args: [] } }, /mcpServers\.fs\.command: is required/],
    [{ a__b: { command: "node" } }, /mcpServers\.a__b/],
    [{ fs: { command: "node", cwd: "../out" } }, /mcpServers\.fs\.cwd: must be a path inside the workspace/],
  ])("%j", (servers, message) => {
    expect(bad(servers)).toThrow(message);
  });

  it("a project tool may not take an MCP tool's name", () => {
    expect(() => parseConfig({ tools: [{ name: "mcp__demo__echo", description: "d", command: "true" }] })).toThrow(
      /tools\[0\]\.name: .*kept for tools from MCP servers/,
    );
  });
});
