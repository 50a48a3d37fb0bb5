import fs from "node:fs";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, describe, expect, it } from "vitest";
import { TOOLS } from "../../src/agent/tools/index.js";
import { cli, cliAsync, jsonLines } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

// The project's command: reads its JSON arguments from stdin and says what it got where.
const WC = `import fs from "node:fs";
const stdin = fs.readFileSync(0, "utf8");
const args = JSON.parse(stdin);
const words = fs.readFileSync(args.path, "utf8").split(/\\s+/).filter(Boolean).length;
console.log(JSON.stringify({ stdin, env: process.env.LEDGERLOOP_TOOL_INPUT, argPath: process.env.LL_ARG_PATH, argVerbose: process.env.LL_ARG_VERBOSE, tool: process.env.LEDGERLOOP_TOOL_NAME, words }));
`;

const TOOLS_CONFIG = [
  {
    name: "word_count",
    description: "Count the words of a file. Returns JSON with the count.",
    command: "node scripts/wc.mjs",
    input: { type: "object", properties: { path: { type: "string" }, verbose: { type: "boolean" } }, required: ["path"], additionalProperties: false },
    risk: "read",
  },
  { name: "deploy", description: "Deploy the site.", command: "echo deployed", risk: "exec", approve: "ask" },
  { name: "fetch_docs", description: "Fetch the docs.", command: "echo fetched", risk: "network" },
];

function workspace(tools: unknown = TOOLS_CONFIG): string {
  return tempWorkspace(undefined, {
    "README.md": "one two three four\n",
    "scripts/wc.mjs": WC,
    "ledgerloop.config.json": JSON.stringify({ tools }),
  });
}

function script(decide: Array<{ name: string; args: unknown }>): string {
  const file = path.join(tempWorkspace(), "t.json");
  fs.writeFileSync(file, JSON.stringify({ decide: decide.map((c) => ({ content: "", tool_calls: [c] })) }));
  return file;
}

function events(ws: string, thread: string): Array<{ type: string; payload: Record<string, unknown> }> {
  const db = new Database(path.join(ws, ".ledgerloop/state.db"), { readonly: true });
  const rows = db.prepare("SELECT type, payload FROM ll_events WHERE thread_id = ? ORDER BY seq").all(thread) as Array<{ type: string; payload: string }>;
  db.close();
  return rows.map((r) => ({ type: r.type, payload: JSON.parse(r.payload) as Record<string, unknown> }));
}

describe("project tools (ledgerloop.config.json → tools)", () => {
  // The built-in tools' facts (names a project tool may not take, risks) are checked against the
  // registry in tool-facts.test.ts.
  it("a scripted run calls one: its JSON arguments arrive on stdin and in the environment; bad arguments are feedback", async () => {
    const ws = workspace();
    const t = script([
      { name: "word_count", args: { path: "README.md", verbose: true } },
      { name: "word_count", args: { path: 5 } },
      { name: "fetch_docs", args: {} },
      { name: "finish", args: { summary: "counted" } },
    ]);
    const requests = path.join(tempWorkspace(), "requests.jsonl");
    const r = await cliAsync(["run", "count words", "-w", ws, "--model", `scripted:${t}`, "--json", "-q"], {
      timeoutMs: 120_000,
      env: { LEDGERLOOP_RECORD_REQUESTS: requests },
    });
    expect(r.code, r.stderr).toBe(0);
    // The model is offered the built-in tools, then the project's (not the withheld network one).
    const decide = jsonLines<{ node: string; toolNames: string[] }>(fs.readFileSync(requests, "utf8")).find((q) => q.node === "decide")!;
    expect(decide.toolNames).toEqual([...TOOLS.map((x) => x.name), "word_count", "deploy"]);
    const thread = (JSON.parse(r.stdout) as { thread: string }).thread;
    const ev = events(ws, thread);
    const actions = ev.filter((e) => e.type === "agent_action").map((e) => e.payload);
    const feedback = ev.filter((e) => e.type === "environment_feedback").map((e) => e.payload);
    expect(feedback[0]).toMatchObject({ tool: "word_count", status: "ok", exitCode: 0 });
    const got = JSON.parse(String(feedback[0]!.stdout).trim()) as Record<string, unknown>;
    expect(got).toEqual({
      stdin: '{"path":"README.md","verbose":true}',
      env: '{"path":"README.md","verbose":true}',
      argPath: "README.md",
      argVerbose: "true",
      tool: "word_count",
      words: 4,
    });
    expect(String(feedback[0]!.command)).toContain("node scripts/wc.mjs");
    expect(actions[1]!.invalid).toMatch(/^Invalid arguments for word_count: path: /);
    expect(feedback[1]).toMatchObject({ tool: "word_count", status: "rejected", errorClass: "invalid_call" });
    // A network tool is not offered without --allow-network: the model is told it does not exist.
    expect(actions[2]!.invalid).toMatch(/^Unknown tool "fetch_docs"\. Available tools: read_file, .*finish, word_count, deploy\.$/);
    // The run log and the tool span know the tool's risk.
    const log = jsonLines<{ event: string; tool?: string; risk?: string }>(fs.readFileSync(path.join(ws, ".ledgerloop/logs", `${thread}.jsonl`), "utf8"));
    expect(log.find((l) => l.event === "tool_run" && l.tool === "word_count")?.risk).toBe("read");
  }, 150_000);

  it('approve "ask" pauses the run for approval before the command runs, like an asked command', async () => {
    const ws = workspace();
    const t = script([
      { name: "deploy", args: {} },
      { name: "finish", args: { summary: "x" } },
    ]);
    const r = await cliAsync(["run", "deploy", "-w", ws, "--model", `scripted:${t}`, "--approve", "ask", "--json", "-q"], { timeoutMs: 120_000 });
    const out = JSON.parse(r.stdout) as { thread: string; status: string };
    expect(out.status, r.stderr).toBe("awaiting_approval");
    const approval = events(ws, out.thread)
      .filter((e) => e.type === "run_status")
      .at(-1)!.payload;
    expect(approval).toMatchObject({ status: "awaiting_approval" });
    expect(String(approval.reason)).toContain("echo deployed");
    expect(events(ws, out.thread).some((e) => e.type === "environment_feedback")).toBe(false);
  }, 150_000);

  it("ledgerloop tools lists every tool the model gets, as it sees it, with source and risk", () => {
    const ws = workspace();
    const r = cli(["tools", "-w", ws, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const rows = jsonLines<{
      name: string;
      source: string;
      risk: string;
      approve: string;
      offered: boolean;
      why?: string;
      parameters: Record<string, unknown>;
    }>(r.stdout);
    expect(rows.map((t) => t.name)).toEqual([...TOOLS.map((t) => t.name), "word_count", "deploy", "fetch_docs"]);
    expect(rows.find((t) => t.name === "run_command")).toMatchObject({ source: "built-in", risk: "exec", offered: true });
    expect(rows.find((t) => t.name === "read_file")).toMatchObject({ source: "built-in", risk: "read" });
    const wc = rows.find((t) => t.name === "word_count")!;
    expect(wc).toMatchObject({ source: "project", risk: "read", approve: "policy", offered: true });
    expect(wc.parameters).toMatchObject({ type: "object", properties: { path: { type: "string" }, verbose: { type: "boolean" } }, required: ["path"] });
    expect(rows.find((t) => t.name === "fetch_docs")).toMatchObject({ offered: false, why: expect.stringMatching(/--allow-network/) });
    const net = jsonLines<{ name: string; offered: boolean }>(cli(["tools", "-w", ws, "--json", "--allow-network"]).stdout);
    expect(net.find((t) => t.name === "fetch_docs")?.offered).toBe(true);
    const text = cli(["tools", "-w", ws]).stdout;
    expect(text).toMatch(/^word_count +project +read +\{path: string, verbose\?: boolean\}\n {4}Count the words of a file\./m);
  });

  it.each([
    [[{ name: "read_file", description: "x", command: "true" }], /tools\[0\]\.name: "read_file" is a built-in tool; choose another name/],
    [
      [
        { name: "a", description: "x", command: "true" },
        { name: "a", description: "y", command: "true" },
      ],
      /tools\[1\]\.name: "a" is already the name of tools\[0\]/,
    ],
    [
      [{ name: "a", description: "x", command: "true", input: { type: "object", properties: { n: { type: "bogus" } } } }],
      /tools\[0\]\.input: is not a valid JSON schema: Unsupported type: bogus/,
    ],
    [[{ name: "a", description: "x", command: "true", risk: "nuclear" }], /tools\[0\]\.risk: Invalid option/],
    [
      [{ name: "a", description: "x", command: "true", cmd: "x" }],
      /tools\[0\]: unknown key "cmd" \(known: name, description, command, input, risk, approve, timeoutMs\)/,
    ],
  ])("bad config %# is refused with the path of the field, before a run starts", (tools, message) => {
    const ws = workspace(tools);
    const r = cli(["tools", "-w", ws]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    const run = cli(["run", "x", "-w", ws, "--model", `scripted:${script([])}`, "--json"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(fs.existsSync(path.join(ws, ".ledgerloop/state.db")) ? events(ws, "x") : []).toEqual([]);
  });
});
