import type { ModelNode, ToolCallRecord } from "../state.js";

/** A provider-neutral chat message; the prompt blobs in the ledger store exactly these. */
export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ToolCallRecord[] }
  | { role: "tool"; toolCallId: string; name: string; content: string };

export interface ToolSpecLike {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  /** Which node asks: a scripted model keeps one list of turns per node. */
  node: ModelNode;
  /** How many turns this node has already taken on this branch (0-based index of this one). */
  turn: number;
  messages: ChatMessage[];
  tools: ToolSpecLike[];
  signal?: AbortSignal;
}

export interface ModelResponse {
  content: string;
  toolCalls: ToolCallRecord[];
  /** Input tokens include the cached ones (served from the provider's prefix cache, billed lower). */
  usage?: { inputTokens?: number; outputTokens?: number; cachedInputTokens?: number };
  /** The scripted model has no turn left for this node. */
  exhausted?: boolean;
  /** The model's reasoning (reasoning_content, thinking blocks, <think> text): kept in the ledger, never sent back. */
  reasoning?: string;
  /** The answer stopped at the output token limit (OpenAI finish_reason "length", Anthropic "max_tokens"). */
  truncated?: boolean;
}

/** The model port: one request in, one response out. */
export interface ChatModel {
  /** Spec string, e.g. "openai:gpt-4o-mini" or "scripted:/path/demo.json". */
  readonly name: string;
  invoke(req: ModelRequest): Promise<ModelResponse>;
}
