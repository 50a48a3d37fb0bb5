import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChromaServer } from "../../src/retrieval/chroma-server.js";
import { createRetriever, type CodeHit, type Retriever } from "../../src/retrieval/hybrid.js";
import type { RetrieverOptions } from "../../src/retrieval/retriever-types.js";
import { startOpenAIStub, type OpenAIStub, type StubEmbeddingsOptions } from "../helpers/openai-stub.js";
import { createRedactor } from "../../src/secrets.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { startTestChroma } from "./helpers/chroma.js";

let chroma: ChromaServer;
const open: Retriever[] = [];
const stubs: OpenAIStub[] = [];
const savedEnv = { ...process.env };

beforeAll(async () => {
  chroma = await startTestChroma();
}, 60_000);
afterAll(async () => {
  for (const r of open.splice(0)) await r.close();
  for (const s of stubs.splice(0)) await s.close();
  await chroma?.release();
  process.env = savedEnv;
  cleanupTemp();
});

/** 150 small files (a chunk each), so an index sends several embedding requests (64 files a batch). */
function files(): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < 150; i++) {
    out[`src/mod${i}.ts`] = Array.from({ length: 2 }, (_, j) => `export function handler${i}x${j}(req: Request) {\n  return route${i}(req, ${j});\n}\n`).join(
      "\n",
    );
  }
  return out;
}

async function setup(o: StubEmbeddingsOptions, ws = tempWorkspace(undefined, files()), extra: Partial<RetrieverOptions> = {}) {
  const log: NonNullable<StubEmbeddingsOptions["log"]> = [];
  const stub = await startOpenAIStub({ embeddings: { log, ...o } });
  stubs.push(stub);
  process.env.LEDGERLOOP_EMBEDDINGS_BASE_URL = stub.url;
  process.env.LEDGERLOOP_MODEL_RETRIES = "0";
  const warnings: string[] = [];
  const r = await createRetriever({
    workspace: ws,
    stateDir: path.join(ws, ".ledgerloop"),
    chromaUrl: chroma.url,
    embedder: "openai:stub-embed",
    onWarning: (m) => warnings.push(m),
    history: false,
    ...extra,
  });
  open.push(r);
  return { ws, r, log, warnings, stub };
}

const inputs = (log: NonNullable<StubEmbeddingsOptions["log"]>) => log.flatMap((x) => (Array.isArray(x.input) ? x.input : [x.input]));

describe("hybrid retriever with an OpenAI-compatible embeddings endpoint", () => {
  it("stores vectors from the endpoint and searches with them; a re-index of a lost collection costs no request (cache)", async () => {
    const { ws, r, log, warnings } = await setup({ dimensions: 32 });
    const rep = await r.index();
    expect(rep.vectorsMissing).toBe(0);
    expect(rep.vectorized).toBeGreaterThanOrEqual(150);
    expect((await r.stats()).vector).toMatchObject({ state: "ok", embedder: "openai:stub-embed:32", dimensions: 32 });
    const hits = (await r.search("handler7x1 route7", 5)) as CodeHit[];
    expect(hits[0]?.path).toBe("src/mod7.ts");
    expect(hits[0]?.sources.vector).toBeGreaterThan(0);
    await r.close();
    // A new Chroma (its data lost): every chunk is stored again, but from the cache, not the endpoint.
    const other = await startTestChroma();
    try {
      log.length = 0;
      const r2 = await createRetriever({
        workspace: ws,
        stateDir: path.join(ws, ".ledgerloop"),
        chromaUrl: other.url,
        embedder: "openai:stub-embed",
        onWarning: (m) => warnings.push(m),
        history: false,
      });
      open.push(r2);
      const rep2 = await r2.index();
      expect(rep2.vectorized).toBe(rep.vectorized);
      expect(inputs(log)).toEqual(["dimension probe"]);
      await r2.close();
    } finally {
      await other.release();
    }
    expect(warnings).toEqual([]);
  }, 120_000);

  it("never sends a secret in a workspace file or a query to the endpoint", async () => {
    const key = "sk-proj-EmbedLeak5Qw8Rt2Yu6Io3Pa9Sd";
    const ws = tempWorkspace(undefined, {
      "src/client.ts": `// talks to the billing API\nexport const apiKey = "${key}";\nexport function charge(amount: number) {\n  return fetch("/charge", { headers: { authorization: apiKey } });\n}\n`,
      "src/util.ts": "export function add(a: number, b: number) {\n  return a + b;\n}\n",
    });
    const log: NonNullable<StubEmbeddingsOptions["log"]> = [];
    const stub = await startOpenAIStub({ embeddings: { log, dimensions: 32 } });
    stubs.push(stub);
    process.env.LEDGERLOOP_EMBEDDINGS_BASE_URL = stub.url;
    const redactor = createRedactor([]);
    const r = await createRetriever({
      workspace: ws,
      stateDir: path.join(ws, ".ledgerloop"),
      chromaUrl: chroma.url,
      embedder: "openai:stub-embed",
      redact: (t) => redactor.redact(t),
      history: false,
    });
    open.push(r);
    const rep = await r.index();
    expect(rep.vectorsMissing).toBe(0);
    await r.search(`where is ${key} used to charge`, 5);
    const sent = inputs(log);
    expect(sent.some((t) => t.includes("charge"))).toBe(true);
    expect(sent.filter((t) => t.includes(key))).toEqual([]);
    // The code itself still ranks: the redaction keeps the rest of the chunk.
    expect(((await r.search("billing charge apiKey", 3)) as CodeHit[])[0]?.path).toBe("src/client.ts");
  }, 120_000);

  it("finishes the index on the n-gram side when the endpoint dies mid-index, and says what lacks vectors", async () => {
    // Request 0 is the probe, 1 the first batch; the server dies on the second batch.
    const { r, warnings } = await setup({ fault: (n) => (n === 2 ? "die" : undefined) });
    const rep = await r.index();
    expect(rep.indexed).toBe(150);
    expect(rep.vectorsMissing).toBeGreaterThan(0);
    expect(rep.vectorsMissing).toBe(150 - 64); // the first batch was stored
    expect(warnings.join("\n")).toMatch(/the n-gram index is complete; \d+ file\(s\) have no vectors yet \(embedder openai:stub-embed at /);
    const st = await r.stats();
    expect(st.vector.state).toBe("degraded");
    expect(st.files).toBe(150);
    const hits = await r.search("handler12x1", 3);
    expect(hits[0]?.path).toBe("src/mod12.ts");
  }, 120_000);

  it("a wrong-dimension answer is a clear error naming the model, and search goes on without vectors", async () => {
    const { r, warnings } = await setup({ fault: (n) => (n === 1 ? "wrong-dimension" : undefined) });
    const rep = await r.index();
    expect(rep.vectorsMissing).toBe(150);
    expect(warnings.join("\n")).toMatch(
      /vector search is unavailable \(embedder openai:stub-embed at \S+: answer 0 has 63 dimensions, the model gave 64 before/,
    );
    const hits = await r.search("handler3x1", 3);
    expect(hits[0]?.path).toBe("src/mod3.ts");
    expect(hits[0]?.sources.vector).toBeUndefined();
  }, 120_000);

  it("an endpoint that is down at start: the retriever starts without vectors and says why", async () => {
    const { r, warnings } = await setup({ fault: () => "garbage" });
    const rep = await r.index();
    expect(rep.indexed).toBe(150);
    expect((await r.stats()).vector.state).toBe("degraded");
    expect(warnings.join("\n")).toMatch(/embedder openai:stub-embed at .*not a vector of numbers/);
  }, 120_000);

  it("an endpoint that answers a web page at start is asked again: once it answers, vectors come back and the files indexed meanwhile get them", async () => {
    let down = true;
    const { r, warnings, stub } = await setup({ fault: () => (down ? "html" : undefined) }, undefined, { vectorRetryMs: 200 });
    const rep = await r.index();
    expect(rep.indexed).toBe(150);
    let st = await r.stats();
    // The configured embedder, not the stand-in kept while it is down.
    expect(st.vector).toMatchObject({ state: "degraded", embedder: "openai:stub-embed", dimensions: null });
    // What came back is named, not the client's TypeError.
    expect(warnings.join("\n")).toContain(
      `the answer is not an embeddings response (POST ${stub.url}/embeddings answered 200 text/html; charset=utf-8: "<html><body>Proxy login required</body></html>"); is the base URL the API root`,
    );
    expect(warnings.join("\n")).not.toMatch(/Cannot read properties/);
    // Still down: asked again in the background, and a search never waits for it.
    await new Promise((res) => setTimeout(res, 300));
    expect((await r.search("handler3x1", 3))[0]?.path).toBe("src/mod3.ts");

    down = false;
    let vectorized = 0;
    for (let i = 0; i < 100 && st.vector.state !== "ok"; i++) {
      await new Promise((res) => setTimeout(res, 250));
      vectorized += (await r.refresh([])).vectorized;
      st = await r.stats();
    }
    expect(st.vector).toMatchObject({ state: "ok", embedder: "openai:stub-embed:64", dimensions: 64 });
    expect(warnings.filter((w) => /vector search is available again \(.*embedder openai:stub-embed:64\)/.test(w))).toHaveLength(1);
    // The files indexed while it was down were embedded on the refresh that found it back.
    expect(vectorized).toBe(150);
    const hits = await r.search("handler12x1 route12", 3);
    expect(hits[0]?.path).toBe("src/mod12.ts");
    expect(hits[0]?.sources.vector).toBeGreaterThan(0);
  }, 120_000);

  it("closes at once while an endpoint it is reviving hangs on the dimension probe (the request is cancelled, not retried)", async () => {
    let hangFrom = Infinity;
    const { r, log } = await setup({ fault: (n) => (n >= hangFrom ? "hang" : n < hangFrom - 1 ? "html" : undefined) }, undefined, { vectorRetryMs: 200 });
    process.env.LEDGERLOOP_MODEL_RETRIES = "2"; // retries as configured by default: a cancelled probe must not be sent again
    try {
      await r.index();
      expect((await r.stats()).vector.state).toBe("degraded");
      // From the next request: the quick check answers, then the probe of the real client hangs.
      hangFrom = log.length + 1;
      for (let i = 0; i < 200 && log.length <= hangFrom; i++) {
        await r.refresh([]);
        await new Promise((res) => setTimeout(res, 100));
      }
      expect(log.length).toBe(hangFrom + 1);
      // The client would wait 60 s for it; closing cancels it (20 s leaves room for a loaded machine).
      const closed = await Promise.race([r.close().then(() => "closed"), new Promise((res) => setTimeout(() => res("still waiting"), 20_000))]);
      expect(closed).toBe("closed");
      await new Promise((res) => setTimeout(res, 500));
      expect(log.length).toBe(hangFrom + 1);
    } finally {
      process.env.LEDGERLOOP_MODEL_RETRIES = "0";
    }
  }, 120_000);

  it("a model whose dimension changed gets a new collection, never a mixed one", async () => {
    const ws = tempWorkspace(undefined, files());
    const a = await setup({ dimensions: 32 }, ws);
    await a.r.index();
    await a.r.close();
    const b = await setup({ dimensions: 24 }, ws);
    const rep = await b.r.index();
    expect(rep.vectorized).toBeGreaterThanOrEqual(150); // all re-embedded into the new space
    expect((await b.r.stats()).vector).toMatchObject({ state: "ok", embedder: "openai:stub-embed:24", dimensions: 24 });
    expect(b.warnings).toEqual([]);
    const hits = (await b.r.search("handler9x1", 3)) as CodeHit[];
    expect(hits[0]?.sources.vector).toBeGreaterThan(0);
  }, 120_000);
});
