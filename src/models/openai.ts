import type { AIMessage } from "@langchain/core/messages";
import { ChatOpenAI } from "@langchain/openai";
import { ModelError, errorMessage } from "../errors.js";
import { REDACTED } from "../secrets.js";
import { textOf, toLangChain, toolCallsOf } from "./langchain.js";
import type { ChatMessage, ChatModel, ModelRequest, ModelResponse } from "./port.js";

export interface OpenAIModelOptions {
  model: string;
  apiKey?: string;
  baseURL?: string;
  temperature?: number;
  maxRetries?: number;
  timeoutMs?: number;
  maxOutputTokens?: number;
}

/**
 * Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio, llama.cpp server) through
 * LangChain's ChatOpenAI, with tools bound per request.
 */
export class OpenAIChatModel implements ChatModel {
  readonly name: string;
  private readonly client: ChatOpenAI;
  private readonly baseURL: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;

  constructor(opts: OpenAIModelOptions) {
    this.name = `openai:${opts.model}`;
    this.apiKey = opts.apiKey;
    this.baseURL = opts.baseURL ?? "https://api.openai.com/v1";
    this.timeoutMs = opts.timeoutMs ?? 120_000;
    this.maxRetries = opts.maxRetries ?? 2;
    this.client = new ChatOpenAI({
      model: opts.model,
      apiKey: opts.apiKey ?? "not-needed",
      temperature: opts.temperature,
      maxRetries: this.maxRetries,
      timeout: this.timeoutMs,
      maxTokens: opts.maxOutputTokens,
      configuration: { baseURL: this.baseURL },
    });
  }

  async invoke(req: ModelRequest): Promise<ModelResponse> {
    const bound = req.tools.length
      ? this.client.bindTools(
          req.tools.map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } })),
        )
      : this.client;
    let msg: AIMessage;
    try {
      msg = (await bound.invoke(toLangChain(req.messages), { signal: req.signal })) as AIMessage;
    } catch (err) {
      const raw = errorMessage(err);
      const unreachable = /ECONNREFUSED|ENOTFOUND|fetch failed|Connection error|ETIMEDOUT|EAI_AGAIN|socket hang up/i.test(
        raw + String((err as { cause?: unknown })?.cause ?? ""),
      );
      // Some servers echo the key they rejected; LangChain appends a multi-line troubleshooting note.
      const text = this.redact(raw).replace(/\s*\n\s*/g, " ").trim();
      const leaks = raw !== this.redact(raw);
      throw new ModelError(
        unreachable ? "MODEL_UNREACHABLE" : "MODEL_BAD_RESPONSE",
        unreachable
          ? `model endpoint ${this.baseURL} is unreachable (${text}); check OPENAI_BASE_URL and that the server is running`
          : /timed out/i.test(text)
            ? `model ${this.name} at ${this.baseURL} did not answer within ${this.timeoutMs} ms (${this.maxRetries} retries); ` +
              `LEDGERLOOP_MODEL_TIMEOUT_MS and LEDGERLOOP_MODEL_RETRIES change that`
            : `model ${this.name} at ${this.baseURL} failed: ${text}`,
        // The original error would carry the echoed key into logs that print causes.
        { cause: leaks ? undefined : err },
      );
    }
    const calls = toolCallsOf(msg);
    const usage = msg.usage_metadata;
    return {
      content: textOf(msg.content),
      toolCalls: calls,
      usage: usage ? { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens } : undefined,
    };
  }

  /** The text without the API key (too short a key would blank out ordinary text, so it is left). */
  private redact(text: string): string {
    return this.apiKey && this.apiKey.length >= 6 ? text.split(this.apiKey).join(REDACTED) : text;
  }
}
