/**
 * The model-behaviour contract, first clause: a model that answers in prose (no tool call, empty,
 * or null content) gets a bounded outcome. Every decide call is a step, so maxSteps bounds model
 * calls; proseStreakLimit such answers in a row stop the run as `no_progress`, recorded once in the
 * ledger with its reason, and a resume goes on. Played by the OpenAI-compatible stub over real HTTP,
 * through the CLI and through openAgent.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { getLedgerEvents, listThreads, openAgent } from "../../src/index.js";
import { cliAsync } from "../helpers/cli.js";
import { nodeOfRequest, startOpenAIStub, stubToolCall, type OpenAIStub, type StubReply } from "../helpers/openai-stub.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

let stub: OpenAIStub;
let decideReplies: StubReply[];
let decideCalls: number;

beforeEach(async () => {
  decideCalls = 0;
  decideReplies = [];
  stub = await startOpenAIStub({
    respond: (body) => {
      const node = nodeOfRequest(body);
      if (node === "plan")
        return { tool_calls: [stubToolCall("p1", "update_plan", { subtasks: [{ id: "s1", description: "do it", status: "in_progress" }] })] };
      if (node === "decide") {
        decideCalls++;
        return decideReplies.shift() ?? { content: "I think the task is basically done, no need for tools." };
      }
      return { content: "A lesson." };
    },
  });
});
afterEach(async () => stub.close());

// openAgent reads the endpoint from the environment, as a script's process would.
const saved = { url: process.env.OPENAI_BASE_URL, key: process.env.OPENAI_API_KEY };
beforeEach(() => {
  process.env.OPENAI_BASE_URL = stub.url;
  process.env.OPENAI_API_KEY = "sk-test-000000";
});
afterEach(() => {
  for (const [k, v] of [
    ["OPENAI_BASE_URL", saved.url],
    ["OPENAI_API_KEY", saved.key],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const env = () => ({ OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: "sk-test-000000" });

describe("a model that answers in prose", () => {
  it("CLI: the third prose answer in a row stops the run as no_progress (exit 7), recorded once with its reason", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    // A streak limit above maxSteps: the step budget is what stops it.
    const r = await cliAsync(
      ["run", "Do the task", "-w", ws, "--model", "openai:m", "--max-steps", "5", "--thread", "P", "--json", "-q", "--sandbox", "none"],
      {
        env: env(),
        timeoutMs: 120_000,
      },
    );
    expect(decideCalls).toBe(3);
    const out = JSON.parse(r.stdout) as { status: string; steps: number };
    expect(out.status).toBe("no_progress");
    expect(out.steps).toBe(3);
    expect(r.code).toBe(7);
    const ended = (await getLedgerEvents("P", { workspace: ws })).filter((e) => e.type === "run_status");
    expect(ended).toHaveLength(1);
    expect(ended[0]!.payload).toMatchObject({ status: "no_progress", steps: 3 });
    expect(String((ended[0]!.payload as { reason?: string }).reason)).toMatch(/without a tool call 3 times in a row/);
    const threads = await listThreads({ workspace: ws });
    expect(threads.find((t) => t.thread === "P")?.status).toBe("no_progress");
  }, 180_000);

  it("openAgent: maxSteps below the streak limit stops at maxSteps model calls, whatever the answers (empty and null included)", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    decideReplies = [{ content: "" }, { content: null }, { content: "thinking..." }, { content: "" }, { content: "" }, { content: "" }];
    const agent = await openAgent({ workspace: ws, model: "openai:m", maxSteps: 4, proseStreakLimit: 10, retrieval: "lexical", sandbox: "none" });
    try {
      const res = await agent.run("Do the task");
      expect(res.status).toBe("max_steps");
      expect(decideCalls).toBe(4);
      const ended = (await getLedgerEvents(res.thread, { workspace: ws })).filter((e) => e.type === "run_status");
      expect(ended.map((e) => (e.payload as { status: string }).status)).toEqual(["max_steps"]);
    } finally {
      await agent.close();
    }
  }, 180_000);

  it("the model is told why nothing happened, a tool call resets the streak, and resume goes on after no_progress", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    decideReplies = [
      { content: "Let me think." },
      { content: "", tool_calls: [stubToolCall("c1", "read_file", { path: "a.txt" })] },
      { content: "Still thinking." },
      { content: "Hmm." },
    ];
    const agent = await openAgent({ workspace: ws, model: "openai:m", maxSteps: 20, proseStreakLimit: 2, retrieval: "lexical", sandbox: "none" });
    try {
      const first = await agent.run("Do the task");
      expect(first.status).toBe("no_progress");
      // prose, tool call (streak reset), prose, prose → stopped at 4 calls, not 2.
      expect(decideCalls).toBe(4);
      const decideBodies = stub.requests.filter((b) => nodeOfRequest(b) === "decide");
      expect(JSON.stringify(decideBodies[1]!.messages)).toMatch(/You answered without calling a tool/);
      decideReplies = [{ content: "ok", tool_calls: [stubToolCall("c9", "finish", { summary: "done" })] }];
      const again = await agent.resume(first.thread);
      expect(again.status).toBe("finished");
      expect(decideCalls).toBe(5);
      const statuses = (await getLedgerEvents(first.thread, { workspace: ws }))
        .filter((e) => e.type === "run_status")
        .map((e) => (e.payload as { status: string }).status);
      expect(statuses).toEqual(["no_progress", "finished"]);
    } finally {
      await agent.close();
    }
  }, 180_000);

  it("a LangChain chat model instance (ChatOpenAI on the same server) gets the same outcome", async () => {
    const ws = tempWorkspace(undefined, { "a.txt": "a\n" });
    const { ChatOpenAI } = await import("@langchain/openai");
    const model = new ChatOpenAI({ model: "m", apiKey: "sk-test-000000", configuration: { baseURL: stub.url }, maxRetries: 0 });
    const agent = await openAgent({ workspace: ws, model, maxSteps: 10, proseStreakLimit: 2, retrieval: "lexical", sandbox: "none" });
    try {
      const res = await agent.run("Do the task");
      expect(res.status).toBe("no_progress");
      expect(decideCalls).toBe(2);
      const ended = (await getLedgerEvents(res.thread, { workspace: ws })).filter((e) => e.type === "run_status");
      expect(ended.map((e) => (e.payload as { status: string }).status)).toEqual(["no_progress"]);
    } finally {
      await agent.close();
    }
  }, 180_000);
});
