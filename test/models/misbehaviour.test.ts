/**
 * The model-behaviour contract, the tool-call clauses: what real models send that scripted
 * trajectories never do, played by the OpenAI-compatible stub over real HTTP through openAgent.
 * Each gets error feedback the model reads (or runs correctly), and the run goes on to finish.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { getLedgerEvents, openAgent } from "../../src/index.js";
import { nodeOfRequest, startOpenAIStub, stubToolCall, type OpenAIStub, type StubReply, type StubRequestBody } from "../helpers/openai-stub.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

let stub: OpenAIStub;
let decideReplies: StubReply[];
const saved = { url: process.env.OPENAI_BASE_URL, key: process.env.OPENAI_API_KEY };

beforeEach(async () => {
  decideReplies = [];
  stub = await startOpenAIStub({
    respond: (body) => {
      const node = nodeOfRequest(body);
      if (node === "plan")
        return { tool_calls: [stubToolCall("p1", "update_plan", { subtasks: [{ id: "s1", description: "do it", status: "in_progress" }] })] };
      if (node === "decide") return decideReplies.shift() ?? { tool_calls: [stubToolCall("fin", "finish", { summary: "done" })] };
      return { content: "A lesson." };
    },
  });
  process.env.OPENAI_BASE_URL = stub.url;
  process.env.OPENAI_API_KEY = "sk-test-000000";
});
afterEach(async () => {
  await stub.close();
  for (const [k, v] of [
    ["OPENAI_BASE_URL", saved.url],
    ["OPENAI_API_KEY", saved.key],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const decideBodies = (): StubRequestBody[] => stub.requests.filter((b) => nodeOfRequest(b) === "decide");
/** The tool messages of a request, as the provider receives them. */
const toolMessages = (b: StubRequestBody) => b.messages.filter((m) => m.role === "tool") as unknown as Array<{ tool_call_id: string; content: string }>;

async function run(ws: string) {
  const agent = await openAgent({ workspace: ws, model: "openai:m", maxSteps: 10, retrieval: "lexical", sandbox: "none", approve: "deny" });
  try {
    return await agent.run("Do the task");
  } finally {
    await agent.close();
  }
}

describe("tool calls as real models send them", () => {
  it("two calls under one id in one answer: both run, and each result goes back under its own id", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "alpha-content\n", "b.txt": "beta-content\n" });
    decideReplies = [{ tool_calls: [stubToolCall("call_0", "read_file", { path: "a.txt" }), stubToolCall("call_0", "read_file", { path: "b.txt" })] }];
    expect((await run(ws)).status).toBe("finished");
    const next = decideBodies()[1]!;
    const results = toolMessages(next);
    expect(new Set(results.map((m) => m.tool_call_id)).size).toBe(2);
    const assistant = next.messages.find((m) => m.role === "assistant" && Array.isArray(m.tool_calls)) as unknown as {
      tool_calls: Array<{ id: string; function: { arguments: string } }>;
    };
    for (const call of assistant.tool_calls) {
      const result = results.find((r) => r.tool_call_id === call.id)!;
      expect(result.content).toContain(JSON.parse(call.function.arguments).path === "a.txt" ? "alpha-content" : "beta-content");
    }
  }, 120_000);

  it("an answer cut off by the output limit: the model is told it was cut off, nothing half-written runs, the run goes on", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    decideReplies = [
      { tool_calls: [{ id: "w1", name: "write_file", arguments: '{"path": "big.txt", "content": "the first part of a long fi' }], finish_reason: "length" },
    ];
    expect((await run(ws)).status).toBe("finished");
    expect(fs.existsSync(path.join(ws, "big.txt"))).toBe(false);
    const told = toolMessages(decideBodies()[1]!)
      .map((m) => m.content)
      .join("\n");
    expect(told).toMatch(/cut off at the model's output token limit/);
  }, 120_000);

  it("a tool that does not exist and arguments that are not JSON: error feedback naming the problem, the run goes on", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    decideReplies = [
      { tool_calls: [{ id: "x1", name: "delete_everything", arguments: "{}" }] },
      { tool_calls: [{ id: "x2", name: "read_file", arguments: "{path: a.txt" }] },
    ];
    // Spied before the model is built, so the spy sees what reaches the console past ledgerloop's filter.
    const warn = vi.spyOn(console, "warn");
    try {
      expect((await run(ws)).status).toBe("finished");
      // LangChain's "upgrade your packages" advice for an answer whose only call is not JSON is wrong here: not shown.
      expect(warn.mock.calls.map((c) => String(c[0])).filter((m) => /New LangChain packages/.test(m))).toEqual([]);
    } finally {
      warn.mockRestore();
    }
    const first = toolMessages(decideBodies()[1]!)
      .map((m) => m.content)
      .join("\n");
    expect(first).toMatch(/delete_everything/);
    expect(first).toMatch(/unknown tool|no tool|does not exist/i);
    const second = toolMessages(decideBodies()[2]!)
      .map((m) => m.content)
      .join("\n");
    expect(second).toMatch(/JSON/);
  }, 120_000);

  it("several calls in one answer with one refused by the policy: the others run, in order, each with its result", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    decideReplies = [
      {
        tool_calls: [
          stubToolCall("k1", "write_file", { path: "one.txt", content: "1\n" }),
          stubToolCall("k2", "run_command", { command: "curl -s http://example.com" }),
          stubToolCall("k3", "run_command", { command: "cat one.txt > two.txt" }),
        ],
      },
    ];
    expect((await run(ws)).status).toBe("finished");
    expect(fs.readFileSync(path.join(ws, "two.txt"), "utf8")).toBe("1\n");
    const results = toolMessages(decideBodies()[1]!);
    expect(results.map((r) => r.tool_call_id)).toEqual(["k1", "k2", "k3"]);
    expect(results[1]!.content).toMatch(/^\[(error|refused)/);
  }, 120_000);

  it("reasoning (reasoning_content, or <think> in the text) is kept in the ledger with its decision and never sent back", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    decideReplies = [
      { content: "Reading.", reasoning_content: "SECRET-PLAN-ALPHA: the file is small", tool_calls: [stubToolCall("r1", "read_file", { path: "a.txt" })] },
      { content: "<think>SECRET-PLAN-BETA: now finish</think>Done.", tool_calls: [stubToolCall("r2", "finish", { summary: "read it" })] },
    ];
    const res = await run(ws);
    expect(res.status).toBe("finished");
    const calls = (await getLedgerEvents(res.thread, { workspace: ws })).filter(
      (e) => e.type === "model_call" && (e.payload as { node: string }).node === "decide",
    );
    expect(calls.map((e) => (e.payload as { reasoning?: string }).reasoning)).toEqual(["SECRET-PLAN-ALPHA: the file is small", "SECRET-PLAN-BETA: now finish"]);
    expect(calls.map((e) => (e.payload as { content: string }).content)).toEqual(["Reading.", "Done."]);
    expect(JSON.stringify(stub.requests)).not.toMatch(/SECRET-PLAN/);
  }, 120_000);
});
