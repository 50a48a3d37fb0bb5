import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelError } from "../../src/errors.js";
import { createModel } from "../../src/models/factory.js";
import type { ChatModel, ModelRequest } from "../../src/models/port.js";
import { classifyFault, parseRetryAfter, retryDelay, DEFAULT_RETRY } from "../../src/models/retry.js";
import { startOpenAIStub, type OpenAIStub } from "../helpers/openai-stub.js";

const API_KEY = "sk-test-faults-9Qz2Lm4Xw7Rk1Vt";
const REQ: ModelRequest = { node: "decide", turn: 0, messages: [{ role: "user", content: "hi" }], tools: [] };

async function failure(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ModelError);
    return err as ModelError;
  }
  throw new Error("expected the call to fail");
}

describe("model faults against the stub over HTTP", () => {
  let stub: OpenAIStub;
  const model = (extra: Record<string, string> = {}): ChatModel =>
    createModel("openai:test-model", { env: { OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: API_KEY, LEDGERLOOP_MODEL_RETRY_BASE_MS: "20", ...extra } });
  beforeEach(async () => {
    stub = await startOpenAIStub();
  });
  afterEach(async () => {
    await stub.close();
  });

  it("reads cached input tokens from the usage (prompt_tokens_details.cached_tokens)", async () => {
    stub.enqueue({ content: "ok", usage: { prompt_tokens: 1200, completion_tokens: 30, cached_tokens: 1024 } });
    const res = await model().invoke(REQ);
    expect(res.usage).toEqual({ inputTokens: 1200, outputTokens: 30, cachedInputTokens: 1024 });
  });

  it("429 with Retry-After: 1 waits that second, once, then succeeds", async () => {
    stub.enqueue({ status: 429, headers: { "retry-after": "1" }, code: "rate_limit_exceeded" }, { content: "after the wait" });
    // A backoff of 60 s would show if the header were ignored: the wait must come from Retry-After.
    const res = await model({ LEDGERLOOP_MODEL_RETRY_BASE_MS: "60000" }).invoke(REQ);
    expect(res.content).toBe("after the wait");
    expect(stub.requests).toHaveLength(2);
    const gap = stub.times[1]! - stub.times[0]!;
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(gap).toBeLessThan(10_000);
  }, 30_000);

  it("Retry-After as an HTTP date is honoured too", async () => {
    const at = new Date(Date.now() + 2_000).toUTCString();
    stub.enqueue({ status: 503, headers: { "retry-after": at } }, { content: "back" });
    const res = await model({ LEDGERLOOP_MODEL_RETRY_BASE_MS: "60000" }).invoke(REQ);
    expect(res.content).toBe("back");
    // HTTP dates have whole seconds: the wait is 1-2 s.
    expect(stub.times[1]! - stub.times[0]!).toBeGreaterThanOrEqual(900);
  }, 30_000);

  it("503 until the retries run out is MODEL_UNAVAILABLE after retries+1 attempts", async () => {
    stub.enqueue(...Array.from({ length: 3 }, () => ({ status: 503, message: "overloaded" })), { content: "not reached" });
    const err = await failure(model({ LEDGERLOOP_MODEL_RETRIES: "2" }).invoke(REQ));
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toMatch(/unavailable \(HTTP 503\) \(3 attempts\)/);
    expect(stub.requests).toHaveLength(3);
  });

  it("429 until the retries run out is MODEL_RATE_LIMITED; a Retry-After too long to wait gives up at once", async () => {
    stub.enqueue({ status: 429 }, { status: 429 });
    expect((await failure(model({ LEDGERLOOP_MODEL_RETRIES: "1" }).invoke(REQ))).code).toBe("MODEL_RATE_LIMITED");
    expect(stub.requests).toHaveLength(2);
    stub.enqueue({ status: 429, headers: { "retry-after": "3600" } }, { content: "not reached" });
    const long = await failure(model().invoke(REQ));
    expect(long.code).toBe("MODEL_RATE_LIMITED");
    expect(long.message).toContain("Retry-After 3600 s");
    expect(stub.requests).toHaveLength(3);
  });

  it("401 and 403 stop at once, named as a key problem; 400 is not retried", async () => {
    stub.enqueue({ status: 401, message: "Incorrect API key provided" }, { content: "not reached" });
    const e401 = await failure(model().invoke(REQ));
    expect(e401.code).toBe("MODEL_AUTH");
    expect(e401.message).toMatch(/HTTP 401: the API key is missing or wrong.*OPENAI_API_KEY/);
    expect(stub.requests).toHaveLength(1);
    await stub.close();
    stub = await startOpenAIStub();
    stub.enqueue({ status: 403, message: "model not allowed" });
    expect((await failure(model().invoke(REQ))).code).toBe("MODEL_AUTH");
    stub.enqueue({ status: 400, message: "bad schema" }, { content: "not reached" });
    expect((await failure(model().invoke(REQ))).code).toBe("MODEL_BAD_RESPONSE");
    expect(stub.requests).toHaveLength(2);
  });

  it("a dropped connection and a 500 are retried", async () => {
    stub.enqueue({ status: 0, drop: true }, { status: 500 }, { content: "third time" });
    expect((await model().invoke(REQ)).content).toBe("third time");
    expect(stub.requests).toHaveLength(3);
  });

  it("a context-length error is MODEL_CONTEXT_LENGTH and is not retried as such", async () => {
    stub.enqueue(
      {
        status: 400,
        code: "context_length_exceeded",
        message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
      },
      { content: "not reached" },
    );
    expect((await failure(model().invoke(REQ))).code).toBe("MODEL_CONTEXT_LENGTH");
    expect(stub.requests).toHaveLength(1);
  });

  it("a missing API key for OpenAI is named before any call; a local server needs none", () => {
    let err: unknown;
    try {
      createModel("openai:gpt-4o-mini", { env: {} });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "MODEL_NO_API_KEY" });
    expect(String((err as Error).message)).toContain("OPENAI_API_KEY is not set");
    expect(createModel("openai:llama", { env: { OPENAI_BASE_URL: stub.url } }).name).toBe("openai:llama");
  });
});

describe("retry arithmetic", () => {
  it("parses Retry-After seconds and dates, and backs off exponentially with jitter", () => {
    expect(parseRetryAfter("2")).toBe(2000);
    expect(parseRetryAfter("0.5")).toBe(500);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter("soon")).toBeUndefined();
    const p = { ...DEFAULT_RETRY, random: () => 1 };
    expect([1, 2, 3].map((a) => retryDelay(a, { kind: "unavailable" }, p))).toEqual([1000, 2000, 4000]);
    expect(retryDelay(1, { kind: "unavailable" }, { ...p, random: () => 0 })).toBe(500);
    expect(retryDelay(9, { kind: "unavailable" }, p)).toBe(60_000);
    expect(retryDelay(3, { kind: "rate_limited", retryAfterMs: 1500 }, p)).toBe(1500);
  });

  it("classifies errors without a status by their text", () => {
    expect(classifyFault(Object.assign(new Error("Request timed out."), { name: "TimeoutError" })).kind).toBe("unavailable");
    expect(classifyFault(new Error("Connection error."), undefined)).toMatchObject({ kind: "unavailable", unreachable: true });
    expect(classifyFault(Object.assign(new Error("x"), { status: 502 })).kind).toBe("unavailable");
    expect(classifyFault(Object.assign(new Error("nope"), { status: 404 })).kind).toBe("bad_request");
  });
});
