import { getEventListeners } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import util from "node:util";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelError } from "../../src/errors.js";
import { createModel } from "../../src/models/factory.js";
import { chatModelFromInstance } from "../../src/models/langchain.js";
import type { ChatMessage, ChatModel, ModelRequest, ToolSpecLike } from "../../src/models/port.js";
import { deadBaseURL, startOpenAIStub, type OpenAIStub } from "../helpers/openai-stub.js";

// Long enough that the shared redactor's sk- pattern would also catch it; we check the exact value.
const API_KEY = "sk-test-4f7Qz9LmXw2Rk8Vt1Nb6Hc3Jd5";

const READ_FILE: ToolSpecLike = {
  name: "read_file",
  description: "Read a file of the workspace.",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, startLine: { type: "integer", minimum: 1 } },
    required: ["path"],
    additionalProperties: false,
  },
};
const FINISH: ToolSpecLike = {
  name: "finish",
  description: "End the task.",
  parameters: { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] },
};

function request(messages: ChatMessage[], tools: ToolSpecLike[] = [READ_FILE, FINISH]): ModelRequest {
  return { node: "decide", turn: 0, messages, tools };
}

const USER_ONLY: ChatMessage[] = [{ role: "user", content: "Add a /health route." }];

async function failure(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ModelError);
    return err as ModelError;
  }
  throw new Error("expected the call to fail");
}

/** Everything an error could show: message, stack, cause chain and own properties. */
function everythingIn(err: unknown): string {
  return `${String(err)}\n${(err as Error).stack ?? ""}\n${util.inspect(err, { depth: 8 })}`;
}

describe("OpenAIChatModel against a stub OpenAI server", () => {
  let stub: OpenAIStub;
  let model: ChatModel;

  beforeEach(async () => {
    stub = await startOpenAIStub();
    // Short backoff: these tests are about what is retried, not how long the waits are.
    model = createModel("openai:test-model", { env: { OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: API_KEY, LEDGERLOOP_MODEL_RETRY_BASE_MS: "20" } });
  });
  afterEach(async () => {
    await stub.close();
  });

  it("sends tools as function specs and the whole conversation in order, and returns the tool call", async () => {
    stub.enqueue({ content: null, tool_calls: [{ id: "call_B", name: "read_file", arguments: '{"path":"src/b.ts","startLine":3}' }] });
    const messages: ChatMessage[] = [
      { role: "system", content: "You are a coding agent." },
      { role: "user", content: "Add a /health route." },
      { role: "assistant", content: "Reading first.", toolCalls: [{ id: "call_A", name: "read_file", args: { path: "src/a.ts" } }] },
      { role: "tool", toolCallId: "call_A", name: "read_file", content: "export const a = 1;" },
    ];
    const res = await model.invoke(request(messages));

    expect(model.name).toBe("openai:test-model");
    expect(res.toolCalls).toEqual([{ id: "call_B", name: "read_file", args: { path: "src/b.ts", startLine: 3 } }]);
    expect(res.content).toBe("");

    expect(stub.requests).toHaveLength(1);
    const body = stub.requests[0]!;
    expect(body.model).toBe("test-model");
    expect(body.stream).toBeFalsy();
    expect(body.tools).toEqual([
      { type: "function", function: { name: "read_file", description: READ_FILE.description, parameters: READ_FILE.parameters } },
      { type: "function", function: { name: "finish", description: FINISH.description, parameters: FINISH.parameters } },
    ]);
    expect(body.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(body.messages[0]).toMatchObject({ role: "system", content: "You are a coding agent." });
    expect(body.messages[1]).toMatchObject({ role: "user", content: "Add a /health route." });
    expect(body.messages[2]).toMatchObject({
      role: "assistant",
      content: "Reading first.",
      tool_calls: [{ id: "call_A", type: "function", function: { name: "read_file", arguments: expect.any(String) } }],
    });
    const replayed = (body.messages[2]!.tool_calls as Array<{ function: { arguments: string } }>)[0]!.function.arguments;
    expect(JSON.parse(replayed)).toEqual({ path: "src/a.ts" });
    expect(body.messages[3]).toMatchObject({ role: "tool", tool_call_id: "call_A", content: "export const a = 1;" });
    expect(stub.headers[0]!.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it("returns malformed arguments as argsText instead of throwing, keeping the model's call order", async () => {
    stub.enqueue({
      content: "Trying.",
      tool_calls: [
        { id: "c1", name: "read_file", arguments: "{not json" },
        { id: "c2", name: "finish", arguments: '{"summary":"done"}' },
      ],
    });
    const res = await model.invoke(request(USER_ONLY));
    expect(res.content).toBe("Trying.");
    expect(res.toolCalls).toEqual([
      { id: "c1", name: "read_file", argsText: "{not json" },
      { id: "c2", name: "finish", args: { summary: "done" } },
    ]);
  });

  it("returns a plain answer with usage mapped to input/output tokens, and sends no tools when none are bound", async () => {
    stub.enqueue({ content: "All tests pass.", usage: { prompt_tokens: 123, completion_tokens: 45 } });
    const res = await model.invoke(request(USER_ONLY, []));
    expect(res).toEqual({ content: "All tests pass.", toolCalls: [], usage: { inputTokens: 123, outputTokens: 45 } });
    expect(stub.requests[0]!.tools).toBeUndefined();
    expect(stub.requests[0]!.messages).toEqual([{ role: "user", content: "Add a /health route." }]);
  });

  it("works without an API key (local servers such as Ollama need none)", async () => {
    const keyless = createModel("openai:test-model", { env: { OPENAI_BASE_URL: stub.url } });
    stub.enqueue({ content: "ok" });
    await expect(keyless.invoke(request(USER_ONLY))).resolves.toMatchObject({ content: "ok" });
  });

  it("streams inside a LangGraph run in messages mode (as Studio does) and still returns calls, order and usage", async () => {
    const State = Annotation.Root({ out: Annotation<string> });
    const graph = new StateGraph(State)
      .addNode("decide", async () => ({ out: JSON.stringify(await model.invoke(request(USER_ONLY))) }))
      .addEdge(START, "decide")
      .addEdge("decide", END)
      .compile();
    stub.enqueue({
      content: "Streaming a longer answer in pieces.",
      tool_calls: [
        { id: "s1", name: "read_file", arguments: '{"path":' },
        { id: "s2", name: "finish", arguments: '{"summary":"all done here"}' },
      ],
      usage: { prompt_tokens: 50, completion_tokens: 9 },
    });
    let messageEvents = 0;
    let out = "";
    for await (const [mode, chunk] of await graph.stream({}, { streamMode: ["messages", "values"] })) {
      if (mode === "messages") messageEvents++;
      else out = (chunk as { out?: string }).out ?? out;
    }
    expect(stub.requests[0]!.stream).toBe(true);
    expect(messageEvents).toBeGreaterThan(1);
    expect(JSON.parse(out)).toEqual({
      content: "Streaming a longer answer in pieces.",
      toolCalls: [
        { id: "s1", name: "read_file", argsText: '{"path":' },
        { id: "s2", name: "finish", args: { summary: "all done here" } },
      ],
      usage: { inputTokens: 50, outputTokens: 9 },
    });
  });

  it("gives up as soon as the caller aborts, without waiting for a slow server", async () => {
    // The server would answer after a minute; the abort comes once the request has reached it (not
    // after a fixed delay, which a loaded machine can outrun before the request is even sent).
    stub.enqueue({ content: "too late", delayMs: 60_000 });
    const ac = new AbortController();
    const pending = model.invoke({ ...request(USER_ONLY), signal: ac.signal });
    pending.catch(() => {});
    const t0 = Date.now();
    while (stub.requests.length === 0 && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 10));
    expect(stub.requests).toHaveLength(1);
    const started = performance.now();
    ac.abort();
    await expect(pending).rejects.toThrow();
    // Far below the server's minute: the call did not wait for the answer.
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(stub.requests).toHaveLength(1);
  });

  it("leaves no listener on the caller's signal after each call (a run's one signal outlives hundreds of calls)", async () => {
    const ac = new AbortController();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 12; i++) {
        stub.enqueue({ content: `answer ${i}` });
        expect((await model.invoke({ ...request(USER_ONLY), signal: ac.signal })).content).toBe(`answer ${i}`);
      }
      // The OpenAI client's own listener stayed on the signal it was given: 12 before the fix.
      expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
      await new Promise((r) => setImmediate(r));
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("stub: answers 404 on other paths and 400 when no reply is queued", async () => {
    const other = await fetch(`${stub.url}/models`);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { message: string } }).error.message).toContain("/v1/models");
    const err = await failure(model.invoke(request(USER_ONLY)));
    expect(err.code).toBe("MODEL_BAD_RESPONSE");
    expect(err.message).toContain("no scripted reply left");
  });

  it("retries HTTP 500 and succeeds on the third attempt", async () => {
    stub.enqueue({ status: 500 }, { status: 500 }, { content: "recovered" });
    const res = await model.invoke(request(USER_ONLY));
    expect(res.content).toBe("recovered");
    expect(stub.requests).toHaveLength(3);
    expect(stub.pending()).toBe(0);
  });

  it("takes its retry count and timeout from LEDGERLOOP_MODEL_RETRIES and LEDGERLOOP_MODEL_TIMEOUT_MS", async () => {
    const env = { OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: API_KEY, LEDGERLOOP_MODEL_RETRIES: "0", LEDGERLOOP_MODEL_TIMEOUT_MS: "300" };
    const strict = createModel("openai:test-model", { env });
    // No retry: the first 500 is the answer (a retry would show as a second request).
    stub.enqueue({ status: 500 });
    expect((await failure(strict.invoke(request(USER_ONLY)))).code).toBe("MODEL_UNAVAILABLE");
    expect(stub.requests).toHaveLength(1);
    // A server slower than the timeout fails the call long before it answers.
    // The answer comes 30 s late and the call gives up well before: the bound leaves a busy machine room.
    stub.enqueue({ content: "too slow", delayMs: 30_000 });
    const started = performance.now();
    const slow = await failure(strict.invoke(request(USER_ONLY)));
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(slow.message).toMatch(/did not answer within 300 ms \(0 retries\).*LEDGERLOOP_MODEL_TIMEOUT_MS/);
    expect(stub.requests).toHaveLength(2);
  });

  it("refuses a model setting from the environment that is not a number in range, naming it", () => {
    const bad: Array<[string, string]> = [
      ["LEDGERLOOP_MODEL_RETRIES", "two"],
      ["LEDGERLOOP_MODEL_RETRIES", "1.5"],
      ["LEDGERLOOP_MODEL_RETRIES", "-1"],
      ["LEDGERLOOP_MODEL_TIMEOUT_MS", "0"],
      ["LEDGERLOOP_MODEL_TIMEOUT_MS", "30s"],
      ["LEDGERLOOP_TEMPERATURE", "hot"],
      ["LEDGERLOOP_TEMPERATURE", "3"],
    ];
    for (const [name, value] of bad) {
      let err: unknown;
      try {
        createModel("openai:test-model", { env: { OPENAI_BASE_URL: stub.url, [name]: value } });
      } catch (e) {
        err = e;
      }
      expect(err, `${name}=${value}`).toMatchObject({ code: "CONFIG_INVALID" });
      expect(String((err as Error).message)).toContain(name);
    }
    // Empty means unset.
    expect(createModel("openai:test-model", { env: { OPENAI_BASE_URL: stub.url, LEDGERLOOP_MODEL_RETRIES: "" } }).name).toBe("openai:test-model");
  });

  it("maps HTTP 400 to MODEL_BAD_RESPONSE without retrying", async () => {
    stub.enqueue({ status: 400, message: "tools[0].function.parameters is not a valid schema" }, { content: "must not be reached" });
    const err = await failure(model.invoke(request(USER_ONLY)));
    expect(err.code).toBe("MODEL_BAD_RESPONSE");
    expect(err.message).toContain(stub.url);
    expect(err.message).toContain("not a valid schema");
    expect(err.message).not.toContain("\n");
    expect(stub.requests).toHaveLength(1);
  });

  it("never shows the API key in an error, even when the server echoes it", async () => {
    stub.enqueue({ status: 401, message: `Incorrect API key provided: ${API_KEY}` });
    const unauthorized = await failure(model.invoke(request(USER_ONLY)));
    expect(unauthorized.code).toBe("MODEL_AUTH");
    expect(unauthorized.message).toContain("Incorrect API key provided: [REDACTED]");

    stub.enqueue({ status: 400, message: `bad request from Bearer ${API_KEY}` });
    const badRequest = await failure(model.invoke(request(USER_ONLY)));

    stub.enqueue(...Array.from({ length: 5 }, () => ({ status: 500, message: `server error for ${API_KEY}` })));
    const serverError = await failure(model.invoke(request(USER_ONLY)));
    expect(serverError.code).toBe("MODEL_UNAVAILABLE");

    for (const err of [unauthorized, badRequest, serverError]) {
      expect(err.message).not.toContain(API_KEY);
      expect(everythingIn(err)).not.toContain(API_KEY);
    }
    // The key was really sent, so its absence above means something.
    expect(stub.headers.every((h) => h.authorization === `Bearer ${API_KEY}`)).toBe(true);
  });
});

describe("OpenAIChatModel against a dead endpoint", () => {
  it("fails with MODEL_UNREACHABLE naming the base URL, within a bounded time", async () => {
    const url = await deadBaseURL();
    const model = createModel("openai:test-model", { env: { OPENAI_BASE_URL: url, OPENAI_API_KEY: API_KEY } });
    const started = performance.now();
    const err = await failure(model.invoke(request(USER_ONLY)));
    const elapsed = performance.now() - started;
    expect(err.code).toBe("MODEL_UNREACHABLE");
    expect(err.message).toContain(url);
    expect(everythingIn(err)).not.toContain(API_KEY);
    // Four retries with our backoff (0.5–1, 1–2, 2–4, 4–8 s) take 7.5–15 s.
    expect(elapsed).toBeLessThan(20_000);
  }, 30_000);
});

describe("createModel", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-models-"));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function writeTrajectory(name: string, value: unknown): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value));
    return file;
  }

  function thrown(fn: () => unknown): ModelError {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ModelError);
      return err as ModelError;
    }
    throw new Error("expected createModel to throw");
  }

  it("rejects an unknown kind or a missing model name with MODEL_UNKNOWN", () => {
    for (const spec of ["bogus:x", "openai:", "scripted:", "gpt-4o"]) {
      const err = thrown(() => createModel(spec, { env: {} }));
      expect(err.code).toBe("MODEL_UNKNOWN");
      expect(err.name).toBe("ModelError");
      expect(err.message).toContain(spec);
    }
  });

  it("a run made with a LangChain model instance says how to give the model again, not 'unknown model'", async () => {
    const { ChatOpenAI } = await import("@langchain/openai");
    // The name openAgent records for the instance: what `ledgerloop resume` later reads back.
    const recorded = chatModelFromInstance(new ChatOpenAI({ model: "gpt-4o-mini", apiKey: "x" })).name;
    expect(recorded).toBe("langchain:ChatOpenAI:gpt-4o-mini");
    const err = thrown(() => createModel(recorded, { env: {} }));
    expect(err.code).toBe("MODEL_UNKNOWN");
    expect(err.message).toContain("openAgent(");
    expect(err.message).toContain("--model");
    expect(err.message).not.toMatch(/^unknown model/);
  });

  it("builds a scripted model named by the resolved file", () => {
    const file = writeTrajectory("ok.json", { decide: [{ content: "hi" }] });
    expect(createModel(`scripted:${file}`).name).toBe(`scripted:${file}`);
  });

  it("names the file when a trajectory is missing or not JSON", () => {
    const missing = thrown(() => createModel("scripted:/nonexistent.json"));
    expect(missing.code).toBe("SCRIPT_INVALID");
    expect(missing.message).toContain("/nonexistent.json");

    const file = writeTrajectory("broken.json", "{ decide: [");
    const broken = thrown(() => createModel(`scripted:${file}`));
    expect(broken.code).toBe("SCRIPT_INVALID");
    expect(broken.message).toContain(file);
  });

  it.each([
    ["an unknown top-level key", { decide: [], bogus: 1 }, "(root)", "bogus"],
    ["an unknown key in a turn", { decide: [{ content: "x", tool_call: [] }] }, "decide.0", "tool_call"],
    ["an unknown key in a tool call", { plan: [{ tool_calls: [{ name: "update_plan", arg: {} }] }] }, "plan.0.tool_calls.0", "arg"],
    ["a tool call without a name", { decide: [{ content: "x" }, { tool_calls: [{ name: "" }] }] }, "decide.1.tool_calls.0.name", ""],
    ["tool call args that are neither object nor string", { decide: [{ tool_calls: [{ name: "finish", args: 3 }] }] }, "decide.0.tool_calls.0.args", ""],
    ["tool_calls that is not a list", { decide: [{ tool_calls: { name: "finish" } }] }, "decide.0.tool_calls", ""],
  ])("rejects %s with SCRIPT_INVALID naming the file and the path", (_label, trajectory, where, key) => {
    const file = writeTrajectory("bad.json", trajectory);
    const err = thrown(() => createModel(`scripted:${file}`));
    expect(err.code).toBe("SCRIPT_INVALID");
    expect(err.message).toContain(file);
    expect(err.message).toContain(`${where}:`);
    if (key) expect(err.message).toContain(`"${key}"`);
  });
});
