import type http from "node:http";
import type { AddressInfo } from "node:net";

// The OpenAI Chat Completions wire format, as far as ChatOpenAI reads it: one answer as a JSON
// completion or as server-sent chunks. Shared by the eval's test server and the tests' scripted stub.

/** One tool call of an answer; `arguments` is sent verbatim, so it may be malformed JSON. */
export interface WireToolCall {
  name: string;
  arguments: string;
  id?: string;
}

/** One answer of the model. */
export interface WireCompletion {
  content?: string | null;
  tool_calls?: WireToolCall[];
  usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  /** Wait this long before answering (to test timeouts and aborts). */
  delayMs?: number;
  /** Sent as the message's reasoning_content (DeepSeek, vLLM and llama.cpp send reasoning so). */
  reasoning_content?: string;
  /** The finish_reason sent (default: "tool_calls" with tool calls, else "stop"); "length" plays a cut-off answer. */
  finish_reason?: string;
}

/** The JSON body of a chat completion request, loosely typed. */
export interface WireRequestBody {
  model: string;
  messages: Array<Record<string, unknown> & { role: string }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [key: string]: unknown;
}

const DEFAULT_USAGE = { prompt_tokens: 11, completion_tokens: 7 };

/** Sends `body` as a JSON response. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...extra, "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** An error body shaped as OpenAI's. */
export function errorBody(message: string, type = "invalid_request_error", code: string | null = null) {
  return { error: { message, type, param: null, code } };
}

function usageOf(r: WireCompletion) {
  const u: NonNullable<WireCompletion["usage"]> = r.usage ?? DEFAULT_USAGE;
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    ...(u.cached_tokens !== undefined ? { prompt_tokens_details: { cached_tokens: u.cached_tokens } } : {}),
  };
}

function toolCallsOf(r: WireCompletion, n: number) {
  return (r.tool_calls ?? []).map((c, i) => ({
    id: c.id ?? `call_stub_${n}_${i}`,
    type: "function" as const,
    function: { name: c.name, arguments: c.arguments },
  }));
}

/** The answer as one chat.completion object (`n` numbers answers without ids of their own). */
export function completion(r: WireCompletion, model: string, n: number) {
  const toolCalls = toolCallsOf(r, n);
  return {
    id: `chatcmpl-stub-${n}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: r.content ?? null,
          ...(r.reasoning_content !== undefined ? { reasoning_content: r.reasoning_content } : {}),
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
          refusal: null,
        },
        logprobs: null,
        finish_reason: r.finish_reason ?? (toolCalls.length ? "tool_calls" : "stop"),
      },
    ],
    usage: usageOf(r),
  };
}

/** The same answer as server-sent chunks, split the way real servers split them. */
export function chunks(r: WireCompletion, body: WireRequestBody, n: number): unknown[] {
  const base = { id: `chatcmpl-stub-${n}`, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model: body.model };
  const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  const out: unknown[] = [choice({ role: "assistant", content: "" })];
  const content = r.content ?? "";
  for (let i = 0; i < content.length; i += 8) out.push(choice({ content: content.slice(i, i + 8) }));
  toolCallsOf(r, n).forEach((c, index) => {
    out.push(choice({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.function.name, arguments: "" } }] }));
    const args = c.function.arguments;
    for (let i = 0; i < args.length; i += 8) out.push(choice({ tool_calls: [{ index, function: { arguments: args.slice(i, i + 8) } }] }));
  });
  out.push(choice({}, r.finish_reason ?? (r.tool_calls?.length ? "tool_calls" : "stop")));
  if (body.stream_options?.include_usage) out.push({ ...base, choices: [], usage: usageOf(r) });
  return out;
}

/** Answers `reply` to `body` on `res`, streamed when the request asked for a stream. */
export function sendCompletion(res: http.ServerResponse, body: WireRequestBody, reply: WireCompletion, n: number): void {
  if (body.stream) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    for (const c of chunks(reply, body, n)) res.write(`data: ${JSON.stringify(c)}\n\n`);
    res.end("data: [DONE]\n\n");
    return;
  }
  sendJson(res, 200, completion(reply, body.model, n));
}

/**
 * Starts `server` on a free loopback port; returns its OpenAI base URL and a close that drops the
 * clients' kept-alive connections (without that, close() waits for them to time out).
 */
export async function listenOnLoopback(server: http.Server): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
