import type { AIMessage } from "@langchain/core/messages";
import type { ChatOpenAI, ChatOpenAIFields } from "@langchain/openai";
import { ModelError, errorMessage } from "../errors.js";
import { withoutKey } from "../secrets.js";
import type { ChatModel, ModelRequest, ModelResponse } from "./port.js";
import { DEFAULT_RETRY, RetriesExhausted, classifyFault, withRetries, type RetryPolicy } from "./retry.js";

export interface OpenAIModelOptions {
  model: string;
  apiKey?: string;
  baseURL?: string;
  temperature?: number;
  /** Retries of rate limits and server faults (default 4). */
  maxRetries?: number;
  /** First backoff in ms, doubled each retry (default 1000). */
  retryBaseMs?: number;
  onRetry?: RetryPolicy["onRetry"];
  timeoutMs?: number;
  maxOutputTokens?: number;
}

/** The filters installed (a WeakSet, not a mark on the function: a test spy copies a function's own properties). */
const quietWarns = new WeakSet<typeof console.warn>();

/**
 * Drops one misleading console warning of @langchain/core: when every tool call of an answer has
 * arguments that are not JSON (what weak models send), ChatOpenAI builds a message whose parsed list
 * is empty and LangChain tells the user to "upgrade your packages". The calls are not lost (they go
 * back to the model as error feedback, from the raw list), so the advice is wrong here. Installed
 * over whatever console.warn is when a model is built; every other warning passes through.
 */
function quietToolCallUpgradeWarning(): void {
  const current = console.warn;
  if (quietWarns.has(current)) return;
  const quiet = (...args: unknown[]) => {
    if (typeof args[0] === "string" && args[0].startsWith("New LangChain packages are available that more efficiently handle")) return;
    current.apply(console, args);
  };
  quietWarns.add(quiet);
  console.warn = quiet;
}

/**
 * Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio, llama.cpp server) through
 * LangChain's ChatOpenAI, with tools bound per request. Retries are ours (see retry.ts), so that
 * Retry-After is honoured and a run can tell a rate limit from a server that is down.
 */
export class OpenAIChatModel implements ChatModel {
  readonly name: string;
  /** Built on the first call: @langchain/openai and the openai SDK are a large load a scripted or replayed run never uses. */
  private client: Promise<ChatOpenAI> | undefined;
  private readonly fields: ChatOpenAIFields;
  private readonly baseURL: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly policy: RetryPolicy;

  constructor(opts: OpenAIModelOptions) {
    this.name = `openai:${opts.model}`;
    quietToolCallUpgradeWarning();
    this.apiKey = opts.apiKey;
    this.baseURL = opts.baseURL ?? "https://api.openai.com/v1";
    this.timeoutMs = opts.timeoutMs ?? 120_000;
    this.policy = {
      ...DEFAULT_RETRY,
      ...(opts.maxRetries !== undefined ? { retries: opts.maxRetries } : {}),
      ...(opts.retryBaseMs !== undefined ? { baseDelayMs: opts.retryBaseMs } : {}),
      onRetry: opts.onRetry,
    };
    this.fields = {
      model: opts.model,
      apiKey: opts.apiKey ?? "not-needed",
      temperature: opts.temperature,
      maxRetries: 0,
      timeout: this.timeoutMs,
      maxTokens: opts.maxOutputTokens,
      configuration: { baseURL: this.baseURL },
    };
  }

  private chat(): Promise<ChatOpenAI> {
    this.client ??= import("@langchain/openai").then(({ ChatOpenAI }) => new ChatOpenAI(this.fields));
    return this.client;
  }

  async invoke(req: ModelRequest): Promise<ModelResponse> {
    // LangChain's message classes load with the first call: building the model (which the CLI does
    // before it starts the run's Chroma server, to refuse a bad spec first) must not wait for them.
    const [client, { callSignal, cutOff, splitReasoning, toLangChain, toolCallsOf }] = await Promise.all([this.chat(), import("./langchain.js")]);
    const bound = req.tools.length
      ? client.bindTools(
          req.tools.map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } })),
        )
      : client;
    let msg: AIMessage;
    try {
      msg = await withRetries(
        async () => (await bound.invoke(toLangChain(req.messages), { signal: callSignal(req.signal) })) as AIMessage,
        this.policy,
        req.signal,
      );
    } catch (err) {
      throw this.modelError(err, req.signal);
    }
    const calls = toolCallsOf(msg);
    const usage = msg.usage_metadata;
    const cached = usage?.input_token_details?.cache_read;
    return {
      ...splitReasoning(msg),
      toolCalls: calls,
      ...(cutOff(msg) ? { truncated: true } : {}),
      usage: usage
        ? { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens, ...(cached !== undefined ? { cachedInputTokens: cached } : {}) }
        : undefined,
    };
  }

  /** One ModelError whose code says what the run should do: pause (rate limit, outage), stop (key), compact (length). */
  private modelError(thrown: unknown, signal?: AbortSignal): ModelError {
    const exhausted = thrown instanceof RetriesExhausted ? thrown : null;
    const err = exhausted ? exhausted.last : thrown;
    const fault = exhausted ? exhausted.fault : classifyFault(err, signal);
    const raw = errorMessage(err);
    // Some servers echo the key they rejected; LangChain appends a multi-line troubleshooting note.
    const text = this.redact(raw)
      .replace(/\s*\n\s*/g, " ")
      .trim();
    const leaks = raw !== this.redact(raw);
    const tries = exhausted ? ` (${exhausted.attempts} attempts)` : "";
    const at = `model ${this.name} at ${this.baseURL}`;
    let code: ConstructorParameters<typeof ModelError>[0];
    let message: string;
    switch (fault.kind) {
      case "rate_limited":
        code = "MODEL_RATE_LIMITED";
        message = `${at} is rate limited (HTTP 429${fault.retryAfterMs !== undefined ? `, Retry-After ${Math.ceil(fault.retryAfterMs / 1000)} s` : ""})${tries}: ${text}`;
        break;
      case "unavailable":
        code = fault.unreachable ? "MODEL_UNREACHABLE" : "MODEL_UNAVAILABLE";
        message = fault.unreachable
          ? `model endpoint ${this.baseURL} is unreachable${tries} (${text}); check OPENAI_BASE_URL and that the server is running`
          : fault.timeout
            ? `${at} did not answer within ${this.timeoutMs} ms (${this.policy.retries} retries); LEDGERLOOP_MODEL_TIMEOUT_MS and LEDGERLOOP_MODEL_RETRIES change that`
            : `${at} is unavailable (HTTP ${fault.status ?? "?"})${tries}: ${text}`;
        break;
      case "auth":
        code = "MODEL_AUTH";
        message = `${at} refused the request (HTTP ${fault.status}: ${fault.status === 401 ? "the API key is missing or wrong" : "the key may not use this model"}): ${text}; check OPENAI_API_KEY`;
        break;
      case "context_length":
        code = "MODEL_CONTEXT_LENGTH";
        message = `${at}: the prompt is longer than the model's context window: ${text}`;
        break;
      default:
        code = "MODEL_BAD_RESPONSE";
        message = `${at} failed${fault.status ? ` (HTTP ${fault.status})` : ""}: ${text}`;
    }
    // The original error would carry the echoed key into logs that print causes.
    return new ModelError(code, message, { cause: leaks ? undefined : err });
  }

  /** The text without the API key (too short a key would blank out ordinary text, so it is left). */
  private redact(text: string): string {
    return withoutKey(text, this.apiKey);
  }
}
