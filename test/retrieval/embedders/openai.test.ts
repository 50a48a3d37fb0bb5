import http from "node:http";
import type { AddressInfo } from "node:net";
import { Database } from "../../../src/sqlite/driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handleDoctor } from "../../../src/cli/doctor.js";
import { createEmbedder } from "../../../src/retrieval/embedders/factory.js";
import { createOpenAIEmbedder, embeddingsBaseURL } from "../../../src/retrieval/embedders/openai.js";
import { sqliteEmbeddingCache } from "../../../src/retrieval/embedding-cache.js";
import { EmbedderError } from "../../../src/retrieval/errors.js";
import { deadBaseURL, startOpenAIStub, type OpenAIStub, type StubEmbeddingsOptions } from "../../helpers/openai-stub.js";
import { embedderConformance } from "./conformance.js";

const stubs: OpenAIStub[] = [];
async function stub(o: StubEmbeddingsOptions = {}) {
  const log: NonNullable<StubEmbeddingsOptions["log"]> = [];
  const s = await startOpenAIStub({ embeddings: { log, ...o } });
  stubs.push(s);
  return { s, log };
}
afterAll(async () => {
  for (const s of stubs.splice(0)) await s.close();
});

let conformanceURL = "";
beforeAll(async () => {
  conformanceURL = (await stub({ dimensions: 48 })).s.url;
});
embedderConformance("openai: (stub endpoint)", () => createOpenAIEmbedder({ model: "stub-embed", baseURL: conformanceURL }));

const inputsOf = (log: NonNullable<StubEmbeddingsOptions["log"]>) => log.flatMap((r) => (Array.isArray(r.input) ? r.input : [r.input]));

describe("openai embedder", () => {
  it("learns the dimension from the endpoint, batches requests, and never sends a cached text again", async () => {
    const { s, log } = await stub({ dimensions: 32 });
    const e = await createOpenAIEmbedder({ model: "nomic-embed-text", baseURL: s.url, batchSize: 64 });
    expect(e.id).toBe("openai:nomic-embed-text:32");
    expect(e.dimensions).toBe(32);
    const db = new Database(":memory:");
    e.attachCache(sqliteEmbeddingCache(() => db));
    const texts = Array.from({ length: 150 }, (_, i) => `function handler${i}() { return ${i}; }`);
    log.length = 0;
    const first = await e.embedDocuments(texts);
    expect(log.map((r) => (r.input as string[]).length)).toEqual([64, 64, 22]);
    expect(log.every((r) => r.model === "nomic-embed-text")).toBe(true);
    // A second embedder on the same cache (a new process, a fork) sends only what is new.
    const again = await createOpenAIEmbedder({ model: "nomic-embed-text", baseURL: s.url });
    again.attachCache(sqliteEmbeddingCache(() => db));
    log.length = 0;
    const second = await again.embedDocuments([...texts.slice(0, 100), "a brand new chunk"]);
    expect(inputsOf(log)).toEqual(["a brand new chunk"]);
    for (let i = 0; i < 100; i++) for (let j = 0; j < 32; j++) expect(second[i]![j]).toBeCloseTo(first[i]![j]!, 5);
    db.close();
  });

  it("retries a failed request, as chat calls are retried", async () => {
    const { s, log } = await stub({ fault: (n) => (n === 1 ? 503 : undefined) });
    const e = await createOpenAIEmbedder({ model: "m", baseURL: s.url, maxRetries: 2 });
    const [v] = await e.embedDocuments(["retry me"]);
    expect(v).toHaveLength(64);
    expect(log).toHaveLength(3); // probe, the 503, the retry
  }, 30_000);

  it("names the model when the endpoint answers garbage or the wrong dimension", async () => {
    const { s } = await stub({ fault: (n) => (n === 1 ? "garbage" : n === 2 ? "wrong-dimension" : undefined) });
    const e = await createOpenAIEmbedder({ model: "bge-small", baseURL: s.url, maxRetries: 0 });
    await expect(e.embedDocuments(["a", "b"])).rejects.toThrow(
      /embedder openai:bge-small at .*answer 0 is not a vector of numbers \(got the string "not a vector"\)/,
    );
    await expect(e.embedDocuments(["c"])).rejects.toThrow(/embedder openai:bge-small .*answer 0 has 63 dimensions, the model gave 64 before/);
    await expect(e.embedDocuments(["c"])).resolves.toHaveLength(1);
  });

  it("fails clearly, naming the model and the URL, when nothing answers", async () => {
    const url = await deadBaseURL();
    const err = await createOpenAIEmbedder({ model: "text-embedding-3-small", baseURL: url, maxRetries: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbedderError);
    expect((err as EmbedderError).code).toBe("EMBEDDER_FAILED");
    expect((err as Error).message).toContain(`embedder openai:text-embedding-3-small at ${url}: the endpoint is unreachable (`);
    // The connection's own code, which the client's "Connection error." hides, and what to check.
    expect((err as Error).message).toMatch(/ECONNREFUSED\); check LEDGERLOOP_EMBEDDINGS_BASE_URL \(or OPENAI_BASE_URL\) and that the server is running$/);
  });

  it("says what to check when the endpoint refuses the key, serves no such model, or answers a web page", async () => {
    const refused = (await stub({ fault: () => 401 })).s;
    await expect(createOpenAIEmbedder({ model: "m", baseURL: refused.url, maxRetries: 0 })).rejects.toThrow(
      /embedder openai:m at \S+: the endpoint refused the request \(HTTP 401: .*\); check LEDGERLOOP_EMBEDDINGS_API_KEY \(or OPENAI_API_KEY\)$/,
    );
    const missing = (await stub({ fault: () => 404 })).s;
    await expect(createOpenAIEmbedder({ model: "m", baseURL: missing.url, maxRetries: 0 })).rejects.toThrow(
      /embedder openai:m at \S+: HTTP 404 \(.*\): the model is not served there, or the base URL is not the API root \(often ending in \/v1\)$/,
    );
    const page = (await stub({ fault: () => "html" })).s;
    await expect(createOpenAIEmbedder({ model: "m", baseURL: page.url, maxRetries: 0 })).rejects.toThrow(
      `embedder openai:m at ${page.url}: the answer is not an embeddings response (POST ${page.url}/embeddings answered 200 text/html; charset=utf-8: "<html><body>Proxy login required</body></html>")`,
    );
  });

  it("never quotes the API key an endpoint echoes back", async () => {
    const key = "sk-test-echoed-key-0123456789";
    const echo = http.createServer((req, res) => {
      req.resume();
      // A refusal (an API error) and a page (not an embeddings answer), both repeating the key.
      if (req.headers["x-echo"] === undefined && req.url?.endsWith("/refuse/embeddings")) {
        res.writeHead(401, { "content-type": "application/json" });
        return void res.end(JSON.stringify({ error: { message: `invalid key ${key}`, type: "invalid_request_error" } }));
      }
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<p>${String(req.headers.authorization)}</p>`);
    });
    await new Promise<void>((res) => echo.listen(0, "127.0.0.1", res));
    const base = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
    try {
      const refused = await createOpenAIEmbedder({ model: "m", baseURL: `${base}/refuse`, apiKey: key, maxRetries: 0 }).catch((e: Error) => e);
      const page = await createOpenAIEmbedder({ model: "m", baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 }).catch((e: Error) => e);
      expect((refused as Error).message).toMatch(/refused the request \(HTTP 401: .*invalid key \[REDACTED\]/);
      expect((page as Error).message).toContain("<p>Bearer [REDACTED]</p>");
      for (const e of [refused, page]) expect(JSON.stringify({ m: (e as Error).message, c: String((e as Error).cause ?? "") })).not.toContain(key);
    } finally {
      echo.close();
    }
  });

  it("is named openai:<model> in the factory; the base URL comes from LEDGERLOOP_EMBEDDINGS_BASE_URL, else OPENAI_BASE_URL", async () => {
    await expect(createEmbedder("openai:")).rejects.toThrow(/names no model/);
    expect(embeddingsBaseURL({ OPENAI_BASE_URL: "http://a/v1" })).toBe("http://a/v1");
    expect(embeddingsBaseURL({ OPENAI_BASE_URL: "http://a/v1", LEDGERLOOP_EMBEDDINGS_BASE_URL: "http://b/v1" })).toBe("http://b/v1");
  });

  it("doctor --embedder openai:<model> checks the endpoint: dimensions when it answers, the reason when it does not", async () => {
    const { s } = await stub({ dimensions: 40 });
    const saved = { ...process.env };
    try {
      process.env.LEDGERLOOP_EMBEDDINGS_BASE_URL = s.url;
      process.env.LEDGERLOOP_MODEL_RETRIES = "0";
      const ok = await handleDoctor({ embedder: "openai:nomic-embed-text" });
      expect(ok.checks.find((c) => c.name === "embedder")).toEqual({
        name: "embedder",
        ok: true,
        detail: "openai:nomic-embed-text:40: answers with 40-dimensional vectors",
      });
      process.env.LEDGERLOOP_EMBEDDINGS_BASE_URL = await deadBaseURL();
      const bad = await handleDoctor({ embedder: "openai:nomic-embed-text" });
      const c = bad.checks.find((x) => x.name === "embedder")!;
      expect(c.ok).toBe(false);
      expect(c.detail).toMatch(/embedder openai:nomic-embed-text at http:\/\/127\.0\.0\.1:\d+\/v1: the endpoint is unreachable/);
    } finally {
      process.env = saved;
    }
  }, 60_000);
});
