import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { ConfigError, ModelError, errorMessage } from "../errors.js";
import type { ToolCallRecord } from "../events.js";
import type { ChatMessage, ChatModel, ModelRequest, ModelResponse } from "./port.js";

// LangChain chat models behind the model port: the message conversion and tool-call reading that
// the OpenAI adapter and any chat model a script passes in (ChatAnthropic, ChatOllama, …) share.

export function toLangChain(messages: ChatMessage[]): BaseMessage[] {
  return messages.map((m) => {
    switch (m.role) {
      case "system":
        return new SystemMessage(m.content);
      case "user":
        return new HumanMessage(m.content);
      case "assistant":
        return new AIMessage({
          content: m.content,
          tool_calls: (m.toolCalls ?? []).map((c) => ({
            id: c.id,
            name: c.name,
            // A call whose arguments were not JSON is replayed with its raw text kept visible.
            args: c.args !== undefined && typeof c.args === "object" && c.args !== null ? (c.args as Record<string, unknown>) : { _raw: c.argsText ?? "" },
            type: "tool_call" as const,
          })),
        });
      case "tool":
        return new ToolMessage({ content: m.content, tool_call_id: m.toolCallId, name: m.name });
    }
  });
}

type RawToolCall = { id?: string; function?: { name?: string; arguments?: string } };

/** Parsed arguments only when the text is complete JSON; anything else stays raw for the model to see. */
function toRecord(id: string, name: string, text: string): ToolCallRecord {
  try {
    return { id, name, args: JSON.parse(text) as unknown };
  } catch {
    return { id, name, argsText: text };
  }
}

/**
 * The tool calls in the order the model made them. The provider's raw list is the source of truth:
 * LangChain puts unparsable calls into a separate list (losing the order, e.g. edit then run the
 * tests), and on a streamed answer it parses arguments leniently, so a truncated `{"content":"par`
 * would pass as a valid call with half its content.
 */
export function toolCallsOf(msg: AIMessage): ToolCallRecord[] {
  const raw = (msg.additional_kwargs as { tool_calls?: Array<RawToolCall | undefined> } | undefined)?.tool_calls;
  if (Array.isArray(raw) && raw.length > 0) {
    return raw.map((c, i) => toRecord(c?.id || `call_${i}`, c?.function?.name ?? "", c?.function?.arguments ?? ""));
  }
  const calls: ToolCallRecord[] = [];
  for (const c of msg.tool_calls ?? []) calls.push({ id: c.id || `call_${calls.length}`, name: c.name, args: c.args });
  for (const c of msg.invalid_tool_calls ?? []) calls.push({ id: c.id || `call_${calls.length}`, name: c.name ?? "", argsText: c.args ?? "" });
  return calls;
}

const REASONING_CHARS = 20_000;
const THINK = /<think>([\s\S]*?)(?:<\/think>|$)/g;

/**
 * The answer's text and the reasoning that came with it, apart: `reasoning_content` (DeepSeek, vLLM,
 * llama.cpp), thinking/reasoning content parts (Anthropic, OpenAI), and `<think>` blocks written
 * into the text by reasoning models served without a reasoning parser (which would otherwise read
 * as prose). The reasoning is capped; it is recorded, not sent back.
 */
export function splitReasoning(msg: AIMessage): { content: string; reasoning?: string } {
  const parts: string[] = [];
  const kw = (msg.additional_kwargs ?? {}) as { reasoning_content?: unknown };
  if (typeof kw.reasoning_content === "string" && kw.reasoning_content.trim()) parts.push(kw.reasoning_content);
  if (Array.isArray(msg.content)) {
    for (const p of msg.content as Array<Record<string, unknown>>) {
      if (p && (p.type === "thinking" || p.type === "reasoning")) {
        const t = typeof p.thinking === "string" ? p.thinking : typeof p.reasoning === "string" ? p.reasoning : typeof p.text === "string" ? p.text : "";
        if (t.trim()) parts.push(t);
      }
    }
  }
  let content = textOf(msg.content);
  if (content.includes("<think>")) {
    content = content
      .replace(THINK, (_m, inner: string) => {
        if (inner.trim()) parts.push(inner.trim());
        return "";
      })
      .trim();
  }
  const reasoning = parts.join("\n\n").slice(0, REASONING_CHARS);
  return reasoning ? { content, reasoning } : { content };
}

/** Whether the provider says the answer stopped at its output token limit. */
export function cutOff(msg: AIMessage): boolean {
  const meta = (msg.response_metadata ?? {}) as { finish_reason?: unknown; stop_reason?: unknown };
  return meta.finish_reason === "length" || meta.stop_reason === "max_tokens";
}

export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((p) => (typeof p === "string" ? p : p && typeof p === "object" && "text" in p ? String(p.text) : "")).join("");
  }
  return "";
}

/** What ledgerloop needs of a LangChain chat model: tool binding and invoke. */
export interface ToolCallingChatModel {
  bindTools(tools: unknown[]): { invoke(messages: BaseMessage[], options?: { signal?: AbortSignal }): Promise<unknown> };
  invoke(messages: BaseMessage[], options?: { signal?: AbortSignal }): Promise<unknown>;
}

/** True for a value that looks like a LangChain chat model with tool calling. */
export function isToolCallingChatModel(value: unknown): value is ToolCallingChatModel {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { bindTools?: unknown }).bindTools === "function" &&
    typeof (value as { invoke?: unknown }).invoke === "function"
  );
}

/** A readable name for a model instance, e.g. "langchain:ChatAnthropic:claude-sonnet-4-5". */
function instanceName(model: object): string {
  const m = model as { model?: unknown; modelName?: unknown; _llmType?: () => string };
  const cls = model.constructor?.name && model.constructor.name !== "Object" ? model.constructor.name : "chat-model";
  const id = typeof m.model === "string" ? m.model : typeof m.modelName === "string" ? m.modelName : "";
  return `langchain:${cls}${id ? `:${id}` : ""}`;
}

/** Any LangChain chat model with tool calling, as a ledgerloop model. */
export class LangChainChatModel implements ChatModel {
  readonly name: string;

  constructor(
    private readonly model: ToolCallingChatModel,
    name?: string,
  ) {
    this.name = name ?? instanceName(model);
  }

  async invoke(req: ModelRequest): Promise<ModelResponse> {
    const tools = req.tools.map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } }));
    const runnable = tools.length ? this.model.bindTools(tools) : this.model;
    let msg: AIMessage;
    try {
      msg = (await runnable.invoke(toLangChain(req.messages), { signal: callSignal(req.signal) })) as AIMessage;
    } catch (err) {
      throw new ModelError(
        "MODEL_BAD_RESPONSE",
        `model ${this.name} failed: ${errorMessage(err)
          .replace(/\s*\n\s*/g, " ")
          .trim()}`,
        { cause: err },
      );
    }
    const usage = msg.usage_metadata;
    return {
      ...splitReasoning(msg),
      toolCalls: toolCallsOf(msg),
      usage: usage ? { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens } : undefined,
      ...(cutOff(msg) ? { truncated: true } : {}),
    };
  }
}

/** Wraps a model instance given in code, refusing one that cannot call tools. */
export function chatModelFromInstance(value: unknown): LangChainChatModel {
  if (!isToolCallingChatModel(value)) {
    const what = typeof value === "object" && value !== null ? (value.constructor?.name ?? "object") : typeof value;
    throw new ConfigError(
      `invalid setting model: ${what} has no bindTools method, so it cannot call tools; pass a LangChain chat model with tool calling (e.g. ChatOpenAI, ChatAnthropic, ChatOllama) or a model string (openai:<name>, scripted:<file>)`,
    );
  }
  return new LangChainChatModel(value);
}

/**
 * A signal for one model call that follows the caller's. The OpenAI client adds an abort listener to
 * the signal it is given and never removes it, so a run's one long-lived signal collected a listener
 * per call (a leak, and Node's MaxListenersExceededWarning after 10 calls); the derived signal goes
 * away with its call, and AbortSignal.any adds no listener to its source.
 */
export function callSignal(signal: AbortSignal | undefined): AbortSignal | undefined {
  return signal ? AbortSignal.any([signal]) : undefined;
}
