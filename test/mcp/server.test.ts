import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, cli, jsonLines } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// `ledgerloop mcp` is a real child process (the CLI from its sources) spoken to by the SDK's own
// client over stdio: what Claude Code, Cursor or Codex would do with it in their mcpServers config.

let ws = "";
let thread = "";
const clients: Client[] = [];

beforeAll(() => {
  ws = path.join(tempWorkspace(), "demo");
  const r = cli(["demo", "-w", ws, "--json", "-q"], { timeoutMs: 180_000 });
  expect(r.code, r.stderr).toBe(0);
  thread = jsonLines<{ thread: string }>(r.stdout)[0]!.thread;
}, 200_000);

afterAll(async () => {
  for (const c of clients) await c.close();
  cleanupTemp();
});

async function connect(extra: string[] = []): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "-w", ws, ...extra],
    env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === "string")),
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (d: Buffer) => (err += d.toString()));
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => err };
}

type Text = { content: Array<{ type: string; text: string }>; isError?: boolean };
async function call<T = unknown>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const r = (await client.callTool({ name, arguments: args })) as Text;
  if (r.isError) throw new Error(`tool ${name} failed: ${r.content[0]?.text}`);
  return JSON.parse(r.content[0]!.text) as T;
}

describe("ledgerloop mcp (stdio) with the SDK's client", () => {
  let client: Client;
  beforeAll(async () => {
    client = (await connect()).client;
  }, 60_000);

  it("offers the memory tools, read-only: no record_decision without --allow-writes", async () => {
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(["context_of_step", "decisions", "ledger_query", "lessons", "report", "search", "threads"]);
    const search = (await client.listTools()).tools.find((t) => t.name === "search")!;
    expect(search.inputSchema.required).toEqual(["query"]);
    expect(search.annotations?.readOnlyHint).toBe(true);
  });

  it("search answers with the code the hybrid retriever finds", async () => {
    const r = await call<{ results: Array<{ kind: string; path?: string }> }>(client, "search", { query: "collectHealth", k: 5 });
    expect(r.results.length).toBeGreaterThan(0);
    expect(r.results[0]).toMatchObject({ kind: "code", path: "dashboard/aggregate.js" });
  }, 60_000);

  it("ledger_query returns the same events as `ledgerloop ledger --json`, filtered by type and file", async () => {
    const viaCli = jsonLines<{ id: string }>(cli(["ledger", thread, "-w", ws, "--json", "--type", "decision,environment_feedback"]).stdout);
    const viaMcp = await call<{ total: number; events: Array<{ id: string; type: string }> }>(client, "ledger_query", {
      thread,
      types: ["decision", "environment_feedback"],
    });
    expect(viaMcp.events.map((e) => e.id)).toEqual(viaCli.map((e) => e.id));
    expect(viaMcp.events.some((e) => e.type === "decision")).toBe(true);
    const byFile = await call<{ events: Array<{ type: string; payload: { tool?: string } }> }>(client, "ledger_query", {
      thread,
      file: "services/orders/server.js",
    });
    expect(byFile.events.length).toBeGreaterThan(0);
    const last = await call<{ total: number; events: unknown[] }>(client, "ledger_query", { thread, limit: 3 });
    expect(last.events).toHaveLength(3);
    expect(last.total).toBeGreaterThan(3);
  });

  it("bad input is a tool error naming the problem, and the server stays up", async () => {
    const r = (await client.callTool({ name: "ledger_query", arguments: { thread, types: ["nonsense"] } })) as Text;
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text).toMatch(/unknown event type "nonsense"; known: task_spec/);
    const u = (await client.callTool({ name: "report", arguments: { thread: "no-such-run" } })) as Text;
    expect(u.isError).toBe(true);
    expect(u.content[0]!.text).toMatch(/unknown thread "no-such-run"/);
    const s = (await client.callTool({ name: "search", arguments: { k: 3 } })) as Text;
    expect(s.isError).toBe(true);
    expect(s.content[0]!.text).toMatch(/query/);
    expect((await call<unknown[]>(client, "threads", {})).length).toBe(1);
  });

  it("context_of_step, decisions, lessons and report answer from the run", async () => {
    const ctx = await call<{ step: number; items: Array<{ section: string }>; messages: unknown[] }>(client, "context_of_step", { thread, step: 1 });
    expect(ctx.step).toBe(1);
    expect(ctx.items.some((i) => i.section === "goal")).toBe(true);
    expect(ctx.messages.length).toBeGreaterThan(0);
    const decisions = await call<Array<{ text: string; step: number }>>(client, "decisions", { thread });
    const report = await call<{ status: string; decisions: Array<{ text: string }> }>(client, "report", { thread });
    expect(report.status).toBe("finished");
    expect(decisions.map((d) => d.text)).toEqual(report.decisions.map((d) => d.text));
    expect(decisions.length).toBeGreaterThan(0);
    const lessons = await call<Array<{ text: string }>>(client, "lessons", {});
    expect(Array.isArray(lessons)).toBe(true);
  });

  it("record_decision (with --allow-writes) appends a redacted decision once per key", async () => {
    const { client: w } = await connect(["--allow-writes"]);
    expect((await w.listTools()).tools.map((t) => t.name)).toContain("record_decision");
    const secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0";
    const first = await call<{ id: string; external: boolean }>(w, "record_decision", {
      thread,
      text: `Use a shared health helper (key ${secret})`,
      key: "k1",
    });
    const again = await call<{ id: string }>(w, "record_decision", { thread, text: `Use a shared health helper (key ${secret})`, key: "k1" });
    expect(again.id).toBe(first.id);
    expect(first.external).toBe(true);
    const decisions = await call<Array<{ id: string; text: string; external?: boolean }>>(w, "decisions", { thread });
    const mine = decisions.find((d) => d.id === first.id)!;
    expect(mine.text).toMatch(/^Use a shared health helper/);
    expect(mine.text).not.toContain(secret);
    const viaCli = jsonLines<{ id: string }>(cli(["ledger", thread, "-w", ws, "--json", "--type", "decision"]).stdout);
    expect(viaCli.filter((e) => e.id === first.id)).toHaveLength(1);
    // The read-only server refuses the tool altogether.
    const r = (await client.callTool({ name: "record_decision", arguments: { thread, text: "x" } })) as Text;
    expect(r.isError).toBe(true);
  }, 60_000);

  it("cancel_run and requeue_run on a workspace's SQLite state answer that they need --state", async () => {
    const { client: w } = await connect(["--allow-writes"]);
    expect((await w.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(["cancel_run", "requeue_run"]));
    for (const [name, args] of [
      ["cancel_run", { thread }],
      ["requeue_run", { thread, from: "1f0abc" }],
    ] as const) {
      const r = (await w.callTool({ name, arguments: args })) as Text;
      expect(r.isError).toBe(true);
      expect(r.content[0]!.text).toBe(
        `${name} works on the PostgreSQL queue the workers use; this server reads a workspace's SQLite state, which has none: start it with \`ledgerloop mcp --state postgres://… --allow-writes\` (or set LEDGERLOOP_STATE_URL)`,
      );
    }
    // The server is still up.
    expect((await call<Array<{ thread: string }>>(w, "threads", {})).map((t) => t.thread)).toEqual([thread]);
  }, 60_000);

  it("a workspace without state fails before the handshake, saying so", () => {
    const empty = tempWorkspace();
    const r = cli(["mcp", "-w", empty]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no ledgerloop state in .*start a run with `ledgerloop run`/);
  });
});
