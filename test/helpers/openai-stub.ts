import http from "node:http";
import {
  errorBody,
  listenOnLoopback,
  sendCompletion,
  sendJson,
  type WireCompletion,
  type WireRequestBody,
  type WireToolCall,
} from "../../src/eval/openai-wire.js";

/** One tool call the stub answers with; `arguments` is sent verbatim, so it may be malformed JSON. */
export type StubToolCall = WireToolCall;

/** A scripted successful completion. */
export type StubCompletion = WireCompletion;

/** A scripted HTTP failure; the body is shaped like an OpenAI error. */
export interface StubFailure {
  status: number;
  message?: string;
  delayMs?: number;
  /** Extra response headers, e.g. {"retry-after": "1"}. */
  headers?: Record<string, string>;
  /** The OpenAI error code, e.g. "context_length_exceeded", "rate_limit_exceeded". */
  code?: string;
  /** Close the connection without answering (status is then ignored). */
  drop?: boolean;
}

export type StubReply = StubCompletion | StubFailure;

/** The JSON body of a chat completion request, loosely typed: tests assert on what was sent. */
export type StubRequestBody = WireRequestBody;

export interface OpenAIStub {
  /** Base URL ending in `/v1`, for OPENAI_BASE_URL. */
  url: string;
  /** Every chat completion request body, parsed, in arrival order (also the failed ones). */
  requests: StubRequestBody[];
  /** The headers of each request, parallel to `requests`. */
  headers: http.IncomingHttpHeaders[];
  /** When each request arrived (ms since the epoch), parallel to `requests`. */
  times: number[];
  /** Queues replies; each request consumes one, in order. */
  enqueue(...replies: StubReply[]): void;
  /** Replies queued but not consumed yet. */
  pending(): number;
  close(): Promise<void>;
}

function isFailure(r: StubReply): r is StubFailure {
  return typeof (r as StubFailure).status === "number";
}

/**
 * A real HTTP server speaking enough of the OpenAI Chat Completions API for ChatOpenAI, answering
 * from a queue of scripted replies. An empty queue answers 400 (not retried) so a test fails fast.
 */
/**
 * Starts the stub on a free loopback port. `respond`, when given, answers a request the queue has
 * no reply for (for a whole agent run, whose calls a test routes by node rather than by count).
 */
export async function startOpenAIStub(
  opts: {
    respond?: (body: StubRequestBody, n: number) => StubReply | undefined;
    /** Served by GET /v1/models when given (absent: that route is a 404, as on some servers). */
    models?: string[];
    /** Requests to GET /v1/models must carry this bearer token (401 otherwise). */
    requireKey?: string;
    /** Serves POST /v1/embeddings (see the embeddings block at the end of this file). */
    embeddings?: StubEmbeddingsOptions;
  } = {},
): Promise<OpenAIStub> {
  const queue: StubReply[] = [];
  const requests: StubRequestBody[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const times: number[] = [];
  let served = 0;

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      void handle(req, res, Buffer.concat(parts).toString("utf8")).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, errorBody(`openai-stub crashed: ${String(err)}`, "server_error"));
        else res.destroy();
      });
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/v1/models" && req.method === "GET" && opts.models) {
      if (opts.requireKey && req.headers.authorization !== `Bearer ${opts.requireKey}`) {
        sendJson(res, 401, errorBody(`Incorrect API key provided: ${req.headers.authorization ?? "(none)"}`, "invalid_request_error", "invalid_api_key"));
        return;
      }
      sendJson(res, 200, { object: "list", data: opts.models.map((id) => ({ id, object: "model", created: 0, owned_by: "stub" })) });
      return;
    }
    if (path === "/v1/embeddings" && opts.embeddings) return handleEmbeddings(opts.embeddings, req, res, raw, () => server);
    if (path !== "/v1/chat/completions") {
      sendJson(res, 404, errorBody(`openai-stub: no route ${req.method} ${path}`, "invalid_request_error", "not_found"));
      return;
    }
    if (req.method !== "POST") {
      sendJson(res, 405, errorBody(`openai-stub: ${req.method} not allowed`));
      return;
    }
    let body: StubRequestBody;
    try {
      body = JSON.parse(raw) as StubRequestBody;
    } catch {
      sendJson(res, 400, errorBody("openai-stub: request body is not JSON"));
      return;
    }
    requests.push(body);
    headers.push(req.headers);
    times.push(Date.now());
    const reply = queue.shift() ?? opts.respond?.(body, served);
    const n = served++;
    if (!reply) {
      sendJson(res, 400, errorBody(`openai-stub: no scripted reply left for request #${n}`));
      return;
    }
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (res.destroyed || req.socket.destroyed) return;
    if (isFailure(reply)) {
      if (reply.drop) {
        req.socket.destroy();
        return;
      }
      const type = reply.status >= 500 ? "server_error" : reply.status === 429 ? "rate_limit_error" : "invalid_request_error";
      sendJson(res, reply.status, errorBody(reply.message ?? `openai-stub: scripted HTTP ${reply.status}`, type, reply.code ?? null), reply.headers);
      return;
    }
    sendCompletion(res, body, reply, n);
  }

  const { url, close } = await listenOnLoopback(server);
  return {
    url,
    requests,
    headers,
    times,
    enqueue: (...replies) => void queue.push(...replies),
    pending: () => queue.length,
    close,
  };
}

/** A base URL on 127.0.0.1 where nothing listens (a port just released by the OS). */
export async function deadBaseURL(): Promise<string> {
  const { url, close } = await listenOnLoopback(http.createServer());
  await close();
  return url;
}

// ------------------------------------------------------------------------------------------------
// Embeddings (POST /v1/embeddings): deterministic vectors, and scripted faults. Kept apart from the
// chat routes above so that changes to either merge cleanly.
// ------------------------------------------------------------------------------------------------

/** How the stub answers embedding requests. */
export interface StubEmbeddingsOptions {
  /** Vector length (default 64). */
  dimensions?: number;
  /** Every request body, parsed, in arrival order. */
  log?: Array<{ model: string; input: string | string[] }>;
  /**
   * A fault for request n (0-based): `garbage` (not a list of numbers), `wrong-dimension` (one number
   * short), `html` (200 with a web page, as a proxy's login page answers), `die` (the server stops
   * listening and drops every connection, like a crashed process), `hang` (never answers: the
   * request stays open until the client gives up or the stub closes), or an HTTP status.
   */
  fault?: (n: number, body: { model: string; input: string | string[] }) => "garbage" | "wrong-dimension" | "html" | "die" | "hang" | number | undefined;
}

/** A deterministic, roughly meaningful vector: words hashed into signed buckets, unit length. */
export function stubEmbedding(text: string, dims: number): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 2166136261;
    for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619) >>> 0;
    v[h % dims]! += h & 0x80000000 ? -1 : 1;
  }
  const n = Math.hypot(...v);
  // An empty text still gets a (fixed) unit vector, as real models give one.
  return n === 0 ? v.map((_, i) => (i === 0 ? 1 : 0)) : v.map((x) => x / n);
}

let embeddingRequests = 0;

function handleEmbeddings(o: StubEmbeddingsOptions, req: http.IncomingMessage, res: http.ServerResponse, raw: string, server: () => http.Server): void {
  if (req.method !== "POST") return sendJson(res, 405, errorBody(`openai-stub: ${req.method} not allowed`));
  let body: { model: string; input: string | string[]; encoding_format?: string };
  try {
    body = JSON.parse(raw);
  } catch {
    return sendJson(res, 400, errorBody("openai-stub: request body is not JSON"));
  }
  o.log?.push({ model: body.model, input: body.input });
  const n = o.log ? o.log.length - 1 : embeddingRequests++;
  const dims = o.dimensions ?? 64;
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const fault = o.fault?.(n, body);
  if (fault === "die") {
    res.destroy();
    server().close();
    server().closeAllConnections();
    return;
  }
  if (fault === "hang") return;
  if (typeof fault === "number")
    return sendJson(res, fault, errorBody(`openai-stub: scripted HTTP ${fault}`, fault >= 500 ? "server_error" : "invalid_request_error"));
  if (fault === "html") {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    return void res.end("<html><body>Proxy login required</body></html>");
  }
  const data = inputs.map((t, index) => {
    let embedding: unknown = stubEmbedding(t, dims);
    if (fault === "garbage") embedding = index === 0 ? "not a vector" : null;
    if (fault === "wrong-dimension") embedding = (embedding as number[]).slice(1);
    // The client asks for base64 by default and decodes it; the stub answers floats, which it also takes.
    return { object: "embedding", index, embedding };
  });
  sendJson(res, 200, { object: "list", data, model: body.model, usage: { prompt_tokens: inputs.length, total_tokens: inputs.length } });
}

// ------------------------------------------------------------------------------------------------
// Writing scripted replies for runs against the stub.
// ------------------------------------------------------------------------------------------------

/** A tool call as the stub's reply carries it (arguments as JSON text, as OpenAI sends them). */
export const stubToolCall = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });

/** Which node sent a request, told by the tools it offers: plan offers update_plan alone, decide all tools, the others none. */
export function nodeOfRequest(body: StubRequestBody): "plan" | "decide" | "other" {
  const tools = body.tools?.map((t) => t.function.name) ?? [];
  if (tools.length === 1 && tools[0] === "update_plan") return "plan";
  return tools.length > 1 ? "decide" : "other";
}
