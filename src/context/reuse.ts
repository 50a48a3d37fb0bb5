import type { ChatMessage } from "../models/port.js";
import { MESSAGE_OVERHEAD } from "./budget.js";
import type { TokenCounter } from "./tokens.js";

/** How much of a prompt a provider's prefix cache could serve from the previous prompt. */
export interface PrefixReuse {
  /** Leading tokens of this prompt equal to the previous prompt's leading tokens. */
  reusedTokens: number;
  /** Tokens of this prompt's messages. */
  tokens: number;
  /** reusedTokens / tokens (0 for the first prompt of a run). */
  ratio: number;
}

const toolCallsText = (m: ChatMessage) => (m.role === "assistant" && m.toolCalls?.length ? JSON.stringify(m.toolCalls) : "");
/** Everything of a message that precedes its content in the serialized request. */
const header = (m: ChatMessage) => `${m.role}\u0000${m.role === "tool" ? `${m.toolCallId}\u0000${m.name}` : ""}`;

/** Tokens of one message as the chat format counts them (the same rule as the budget). */
export function messageTokens(m: ChatMessage, counter: TokenCounter): number {
  return MESSAGE_OVERHEAD + counter.count(m.content) + (toolCallsText(m) ? counter.count(toolCallsText(m)) : 0);
}

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  // Never split a surrogate pair: the counted prefix must be a real string.
  if (i > 0 && i < n && a.charCodeAt(i - 1) >= 0xd800 && a.charCodeAt(i - 1) <= 0xdbff) i--;
  return i;
}

/**
 * Prefix reuse of `current` after `previous`, at the token level of the messages in order: whole
 * equal messages count in full; in the first differing message (same role and header) the shared
 * leading text counts, less one token for the seam, where BPE may merge differently. Tool schemas
 * are left out on both sides: they are equal in every decide request and would only flatter the figure.
 */
export function prefixReuse(previous: ChatMessage[] | null, current: ChatMessage[], counter: TokenCounter): PrefixReuse {
  let tokens = 0;
  for (const m of current) tokens += messageTokens(m, counter);
  if (!previous || tokens === 0) return { reusedTokens: 0, tokens, ratio: 0 };
  let reused = 0;
  for (let i = 0; i < current.length && i < previous.length; i++) {
    const a = previous[i]!;
    const b = current[i]!;
    if (header(a) !== header(b)) break;
    if (a.content === b.content && toolCallsText(a) === toolCallsText(b)) {
      reused += messageTokens(b, counter);
      continue;
    }
    if (a.content !== b.content) {
      const shared = commonPrefixLength(a.content, b.content);
      reused += MESSAGE_OVERHEAD + Math.max(0, counter.count(b.content.slice(0, shared)) - 1);
    } else {
      // Same text, different tool calls: the text is shared, the calls (serialized after it) are not.
      reused += MESSAGE_OVERHEAD + counter.count(b.content);
    }
    break;
  }
  return { reusedTokens: reused, tokens, ratio: reused / tokens };
}

/** The median of the ratios (NaN for none). */
export function medianRatio(ratios: number[]): number {
  if (!ratios.length) return NaN;
  const s = [...ratios].sort((a, b) => a - b);
  const mid = (s.length - 1) / 2;
  return (s[Math.floor(mid)]! + s[Math.ceil(mid)]!) / 2;
}
