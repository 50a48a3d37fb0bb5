// Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, vLLM, LM Studio,
// llama.cpp server) through @langchain/openai. Every answer is checked (a list of finite numbers of
// the collection's length), and vectors are cached by content hash so unchanged chunks are never
// sent twice, across re-indexes, rewinds and forks of the same state dir.
import { createHash } from "node:crypto";
import { OpenAIEmbeddings } from "@langchain/openai";
import { errorMessage } from "../../errors.js";
import { classifyFault } from "../../models/retry.js";
import { withoutKey } from "../../secrets.js";
import { EmbedderError } from "../errors.js";
import type { Embedder } from "./port.js";

/** Stores vectors by (embedder id, content hash); the retriever backs it with a table in index.db. */
export interface EmbeddingCache {
  get(space: string, hashes: string[]): Map<string, number[]>;
  put(space: string, entries: Array<{ hash: string; vector: number[] }>): void;
}

export interface OpenAIEmbedderOptions {
  model: string;
  /** Base URL ending in /v1 (default $LEDGERLOOP_EMBEDDINGS_BASE_URL, else $OPENAI_BASE_URL, else OpenAI's). */
  baseURL?: string;
  apiKey?: string;
  /** Texts per request (default 64). */
  batchSize?: number;
  /** Retries of a failed request (default $LEDGERLOOP_MODEL_RETRIES, else 2), as chat calls get. */
  maxRetries?: number;
  timeoutMs?: number;
  /** Characters of a text sent (longer ones are cut: every model has an input limit). */
  maxChars?: number;
  /**
   * When it aborts, every request under way (the dimension probe too) is cancelled and none is sent
   * again: a retriever closing while an endpoint it is reviving hangs does not wait for the timeout.
   */
  signal?: AbortSignal;
}

/** `fetch` whose requests also end when `signal` aborts. */
function cancelledBy(signal: AbortSignal): typeof fetch {
  return (input, init) => fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal });
}

/** Where `openai:` embeddings are fetched from, by the documented precedence. */
export function embeddingsBaseURL(env: NodeJS.ProcessEnv = process.env): string {
  return env.LEDGERLOOP_EMBEDDINGS_BASE_URL || env.OPENAI_BASE_URL || "https://api.openai.com/v1";
}

/** The key sent to the endpoint: local servers often need none, but the client insists on one. */
function embeddingsApiKey(env: NodeJS.ProcessEnv = process.env): string {
  return env.LEDGERLOOP_EMBEDDINGS_API_KEY ?? env.OPENAI_API_KEY ?? "none";
}

/** The embeddings route under a base URL. */
function embeddingsURL(baseURL: string): string {
  return `${baseURL.replace(/\/+$/, "")}/embeddings`;
}

/** An embedder that knows its cache once the retriever has opened index.db. */
export interface CachingEmbedder extends Embedder {
  attachCache(cache: EmbeddingCache): void;
}

/**
 * Connects to the endpoint: one probe request learns the model's dimension (and fails clearly when
 * the endpoint is down, refuses the model, or answers something that is not a vector).
 */
export async function createOpenAIEmbedder(opts: OpenAIEmbedderOptions): Promise<CachingEmbedder> {
  const model = opts.model;
  const name = `openai:${model}`;
  const baseURL = opts.baseURL ?? embeddingsBaseURL();
  const retries =
    opts.maxRetries ??
    (Number(process.env.LEDGERLOOP_MODEL_RETRIES) >= 0 && process.env.LEDGERLOOP_MODEL_RETRIES ? Number(process.env.LEDGERLOOP_MODEL_RETRIES) : 2);
  const maxChars = opts.maxChars ?? 8000;
  const apiKey = opts.apiKey ?? embeddingsApiKey();
  const client = new OpenAIEmbeddings({
    model,
    batchSize: opts.batchSize ?? 64,
    maxRetries: retries,
    maxConcurrency: 2,
    apiKey,
    timeout: opts.timeoutMs ?? 60_000,
    // Floats, not the client's default base64: several local servers do not implement base64.
    encodingFormat: "float",
    stripNewLines: false,
    configuration: { baseURL, ...(opts.signal ? { fetch: cancelledBy(opts.signal) } : {}) },
  });
  const fail = (what: string, err?: unknown) =>
    new EmbedderError(
      "EMBEDDER_FAILED",
      `embedder ${name} at ${baseURL}: ${what}${err === undefined ? "" : ` (${errorMessage(err)})`}`,
      err === undefined ? undefined : { cause: err },
    );

  let probe: number[];
  try {
    probe = (await client.embedDocuments(["dimension probe"]))[0] as number[];
  } catch (err) {
    // The client reads an answer without a `data` list (a web page, `{"error": …}` with 200) as a
    // TypeError of its own: say what the endpoint did answer instead.
    if (notAnEmbeddingsAnswer(err))
      throw fail(
        `the answer is not an embeddings response (${await whatCameBack(baseURL, apiKey, model)}); is the base URL the API root (often ending in /v1)?`,
      );
    throw probeFailure(err, fail, apiKey);
  }
  if (!isVector(probe) || probe.length === 0) throw fail(`the answer is not a vector of numbers (got ${describe(probe)})`);
  const dims = probe.length;
  const id = `${name}:${dims}`;
  let cache: EmbeddingCache | null = null;

  /** Checks and normalizes one answer; a wrong length or a non-number is the model's error, named. */
  const check = (v: unknown, i: number): number[] => {
    if (!isVector(v)) throw fail(`answer ${i} is not a vector of numbers (got ${describe(v)})`);
    if (v.length !== dims)
      throw fail(`answer ${i} has ${v.length} dimensions, the model gave ${dims} before: the collection would be mixed, so vectors are not stored`);
    const n = Math.hypot(...v);
    return n === 0 ? v : v.map((x) => x / n);
  };
  const clean = (t: string) => (t.length > maxChars ? t.slice(0, maxChars) : t).replace(/\u0000/g, " ") || " ";

  const embedDocuments = async (texts: string[]): Promise<number[][]> => {
    if (texts.length === 0) return [];
    const sent = texts.map(clean);
    const hashes = sent.map((t) => createHash("sha256").update(t).digest("hex"));
    const known = cache?.get(id, [...new Set(hashes)]) ?? new Map<string, number[]>();
    const missing = [...new Set(hashes.filter((h) => !known.has(h)))];
    if (missing.length) {
      const textOf = new Map(hashes.map((h, i) => [h, sent[i]!]));
      let answers: unknown[];
      try {
        answers = await client.embedDocuments(missing.map((h) => textOf.get(h)!));
      } catch (err) {
        if (notAnEmbeddingsAnswer(err)) throw fail("the answer is not an embeddings response (no list of vectors)");
        throw fail("the embeddings request failed", err);
      }
      if (!Array.isArray(answers) || answers.length !== missing.length) throw fail(`asked for ${missing.length} vectors, got ${describe(answers)}`);
      const fresh = missing.map((hash, i) => ({ hash, vector: check(answers[i], i) }));
      for (const f of fresh) known.set(f.hash, f.vector);
      cache?.put(id, fresh);
    }
    return hashes.map((h) => known.get(h)!);
  };

  return {
    id,
    dimensions: dims,
    embedDocuments,
    embedQuery: async (text) => (await embedDocuments([text]))[0]!,
    attachCache: (c) => void (cache = c),
  };
}

/** Why the first request failed, in the words that say what to check (as chat calls are worded). */
function probeFailure(err: unknown, fail: (what: string, err?: unknown) => EmbedderError, apiKey: string): EmbedderError {
  const f = classifyFault(err);
  const codes = causeCodes(err);
  // Some servers echo the key they refused.
  const said = `${withoutKey(errorMessage(err), apiKey)
    .replace(/\s*\n\s*/g, " ")
    .trim()
    .slice(0, 200)}${codes ? `: ${codes}` : ""}`;
  if (f.kind === "unavailable" && f.unreachable)
    return fail(`the endpoint is unreachable (${said}); check LEDGERLOOP_EMBEDDINGS_BASE_URL (or OPENAI_BASE_URL) and that the server is running`);
  if (f.kind === "auth") return fail(`the endpoint refused the request (HTTP ${f.status}: ${said}); check LEDGERLOOP_EMBEDDINGS_API_KEY (or OPENAI_API_KEY)`);
  if (f.kind === "bad_request" && f.status === 404)
    return fail(`HTTP 404 (${said}): the model is not served there, or the base URL is not the API root (often ending in /v1)`);
  return fail(`the endpoint did not answer an embedding request (${said})`);
}

/** The error codes (ECONNREFUSED, ENOTFOUND, …) along an error's causes: the client's own message hides them. */
function causeCodes(err: unknown): string {
  const codes: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 6 && e !== null && typeof e === "object"; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code) && !codes.includes(code)) codes.push(code);
    e = (e as { cause?: unknown }).cause;
  }
  return codes.join(", ");
}

/** The client's own failure to read an answer (no `data`, not JSON), as opposed to an HTTP or connection error. */
function notAnEmbeddingsAnswer(err: unknown): boolean {
  return err instanceof TypeError || err instanceof SyntaxError;
}

/** One probe request sent without the client: status, content type and body (for a quick check and for what came back). */
async function askOnce(
  baseURL: string,
  apiKey: string,
  model: string,
  signal: AbortSignal,
): Promise<{ url: string; status: number; type: string; text: string }> {
  const url = embeddingsURL(baseURL);
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model, input: ["dimension probe"], encoding_format: "float" }),
    signal,
  });
  return { url, status: res.status, type: res.headers.get("content-type") ?? "with no content type", text: await res.text() };
}

/** What the endpoint answers a probe, in a few words: status, content type and the start of the body. */
async function whatCameBack(baseURL: string, apiKey: string, model: string): Promise<string> {
  try {
    const a = await askOnce(baseURL, apiKey, model, AbortSignal.timeout(10_000));
    const text = withoutKey(a.text, apiKey).replace(/\s+/g, " ").trim();
    return `POST ${a.url} answered ${a.status} ${a.type}: ${JSON.stringify(text.slice(0, 80))}${text.length > 80 ? "…" : ""}`;
  } catch (err) {
    return `POST ${embeddingsURL(baseURL)} failed when asked again: ${errorMessage(err)}`;
  }
}

/**
 * A quick check, bounded in time (10 s) and cancellable, that the endpoint now answers embeddings: one
 * request, no retries. For asking again an endpoint that was down, before the embedder is built.
 */
export async function embeddingsEndpointAnswers(model: string, signal: AbortSignal, opts: { baseURL?: string; apiKey?: string } = {}): Promise<void> {
  const baseURL = opts.baseURL ?? embeddingsBaseURL();
  const apiKey = opts.apiKey ?? embeddingsApiKey();
  const fail = (what: string) => new EmbedderError("EMBEDDER_FAILED", `embedder openai:${model} at ${baseURL}: ${what}`);
  let a: Awaited<ReturnType<typeof askOnce>>;
  try {
    a = await askOnce(baseURL, apiKey, model, AbortSignal.any([signal, AbortSignal.timeout(10_000)]));
  } catch (err) {
    throw fail(`still not answering (${errorMessage(err)})`);
  }
  let first: unknown = undefined;
  try {
    first = (JSON.parse(a.text) as { data?: Array<{ embedding?: unknown }> }).data?.[0]?.embedding;
  } catch {
    // not JSON: said below
  }
  if (a.status !== 200 || !isVector(first)) throw fail(`still not an embeddings answer (${a.status} ${a.type})`);
}

function isVector(v: unknown): v is number[] {
  return Array.isArray(v) && v.every((x) => typeof x === "number" && Number.isFinite(x));
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return `a list of ${v.length}${v.length && typeof v[0] !== "number" ? ` ${typeof v[0]}s` : ""}`;
  return v === null ? "null" : typeof v === "string" ? `the string ${JSON.stringify(v.slice(0, 40))}` : typeof v;
}
