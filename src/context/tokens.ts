/**
 * Token counting for prompt budgets, with a real BPE tokenizer (gpt-tokenizer) chosen from the
 * model name. Counts of the same text are memoised: a long run re-counts the same tool outputs,
 * decisions and summaries at every step.
 */

import { loadRanks, type Encoding } from "./bpe-ranks.js";

export interface TokenCounter {
  /** Name of the encoding in use, e.g. "o200k_base". */
  readonly encoding: string;
  count(text: string): number;
}

export interface ModelProfile {
  /** Model name without the provider prefix. */
  model: string;
  encoding: "o200k_base" | "cl100k_base";
  contextWindow: number;
  /** Tokens kept free for the model's answer. */
  reservedOutput: number;
  /** True when the model is not in the tokenizer's table and the figures are the documented fallback. */
  fallback: boolean;
}

/**
 * Unknown models (local Llama, Qwen, Mistral servers, the scripted model) are counted with o200k
 * and a 32k window: open models' tokenizers produce a similar number of tokens for code, and the
 * 10% safety margin below absorbs the difference.
 */
export const FALLBACK_WINDOW = 32_768;
export const FALLBACK_RESERVED_OUTPUT = 4_096;
const UNKNOWN_MODEL_MARGIN = 1.1;

/** Context window, reserved output and encoding for a model spec such as "openai:gpt-4o-mini". */
export async function modelProfile(spec: string): Promise<ModelProfile> {
  const model =
    spec
      .replace(/^[a-z]+:/, "")
      .split("/")
      .pop() ?? spec;
  const models = (await import("gpt-tokenizer/models")) as unknown as Record<string, { context_window?: number; max_output_tokens?: number } | undefined>;
  const known = models[model];
  const encoding = /^(gpt-3\.5|gpt-4($|-\d|-turbo|-32k))/.test(model) ? "cl100k_base" : "o200k_base";
  if (known?.context_window) {
    // Reserve what the model may answer, but not more than a quarter of its window.
    const reserve = Math.min(known.max_output_tokens ?? FALLBACK_RESERVED_OUTPUT, Math.floor(known.context_window / 4), 16_384);
    return { model, encoding, contextWindow: known.context_window, reservedOutput: reserve, fallback: false };
  }
  return { model, encoding, contextWindow: FALLBACK_WINDOW, reservedOutput: FALLBACK_RESERVED_OUTPUT, fallback: true };
}

/** The prompt budget for a model: its window minus the reserved output. */
export function budgetFor(profile: ModelProfile): number {
  return profile.contextWindow - profile.reservedOutput;
}

const CACHE_LIMIT = 5000;
const SHORT = 48;

/**
 * gpt-tokenizer's byte-pair merge is quadratic in the length of one pre-tokenizer piece (a run of
 * letters, punctuation or whitespace): 16k "A"s take 160 ms, 300k take a minute. Pieces longer
 * than this are estimated instead (see {@link estimateLongPiece}); ordinary code and prose never
 * have them, so their counts stay exact.
 */
export const MAX_EXACT_PIECE = 200;
/** Chunk length for estimating a long piece: the merge cost of one chunk is small and bounded. */
const PIECE_CHUNK = 100;
/**
 * Beyond this many characters a text is not tokenized at all: its UTF-8 length is returned, a
 * hard upper bound (every token is at least one byte). Exact counting costs up to ~3 µs a char on
 * adversarial text (random CJK or letter runs; ~0.15 µs for code), and it runs on the event loop:
 * this cap keeps one count under a second, so a stop signal is heard. A text this long (64k+
 * tokens of code) takes most of a prompt anyway; over-counting it only makes it drop sooner.
 */
export const MAX_COUNTED_CHARS = 256 * 1024;

type CountFn = (text: string) => number;

/**
 * An upper-bound estimate of a long piece's tokens: the sum over chunks of `PIECE_CHUNK` chars plus
 * one token per cut, never more than its UTF-8 bytes. Cutting a piece can lose a merge across the
 * cut but BPE is not monotone, so a cut can also save one: over random pieces of 16 alphabets
 * (letters, capitals, punctuation, whitespace, CJK, Cyrillic, combining marks, emoji) the exact count
 * exceeded the chunk sum by at most 0.67 tokens per cut, hence the one-per-cut slack.
 */
export function estimateLongPiece(piece: string, countExact: CountFn): number {
  let n = 0;
  let cuts = -1;
  for (let i = 0; i < piece.length;) {
    let j = Math.min(piece.length, i + PIECE_CHUNK);
    // Never split a surrogate pair: half a code point would be counted as replacement bytes.
    const code = piece.charCodeAt(j - 1);
    if (j < piece.length && code >= 0xd800 && code <= 0xdbff) j--;
    n += countExact(piece.slice(i, j));
    cuts++;
    i = j;
  }
  return Math.min(n + Math.max(0, cuts), Buffer.byteLength(piece, "utf8"));
}

/**
 * Counts a text in time linear in its length: the pre-tokenizer's pieces (found with the
 * encoding's own split pattern) are scanned; stretches of ordinary pieces are counted exactly in
 * one call, and each piece longer than {@link MAX_EXACT_PIECE} is estimated from above.
 */
export function countLinear(text: string, split: RegExp, countExact: CountFn): number {
  if (text.length > MAX_COUNTED_CHARS) return Buffer.byteLength(text, "utf8");
  if (text.length <= MAX_EXACT_PIECE) return countExact(text);
  let total = 0;
  let from = 0;
  for (const m of text.matchAll(split)) {
    if (m[0].length <= MAX_EXACT_PIECE) continue;
    if (m.index > from) total += countExact(text.slice(from, m.index));
    total += estimateLongPiece(m[0], countExact);
    from = m.index + m[0].length;
  }
  if (from === 0) return countExact(text);
  if (from < text.length) total += countExact(text.slice(from));
  return total;
}

/** What one text counts, uncached: the figure every counter of this encoding and margin returns. */
export type Measure = (text: string) => number;

/** The count margin: 1, or the safety margin of a model the tokenizer does not know. */
export function countMargin(fallback: boolean): number {
  return fallback ? UNKNOWN_MODEL_MARGIN : 1;
}

/**
 * The count of a text longer than {@link MAX_COUNTED_CHARS}: its UTF-8 length (an upper bound) with
 * the margin. Every counter answers these without the tokenizer.
 */
export function countBeyondCap(text: string, fallback: boolean): number {
  return Math.ceil(Buffer.byteLength(text, "utf8") * countMargin(fallback));
}

/** Loads an encoding's tokenizer and returns its uncached count of one text, margin included. */
export async function loadMeasure(encoding: Encoding = "o200k_base", fallback = false): Promise<Measure> {
  // What gpt-tokenizer's `encoding/<name>` module does, with the ranks read as JSON when the build prepared them.
  const [{ GptEncoding }, { ranks }] = await Promise.all([import("gpt-tokenizer/GptEncoding"), loadRanks(encoding)]);
  const mod = GptEncoding.getEncodingApi(encoding, () => ranks);
  const patterns = (await import("gpt-tokenizer/encodingParams/constants")) as unknown as Record<string, RegExp>;
  const source = patterns[encoding === "cl100k_base" ? "CL100K_TOKEN_SPLIT_REGEX" : "O200K_TOKEN_SPLIT_REGEX"]!.source;
  // Our own instance: matchAll copies it, but a shared global regex must never carry state over.
  const split = new RegExp(source, "gu");
  // Text that spells a special token ("<|endoftext|>" in a file about tokenizers) is ordinary text
  // here: the default options make countTokens throw on it, which would break every prompt.
  const asText = { disallowedSpecial: new Set<string>() };
  const exact: CountFn = (t) => mod.countTokens(t, asText);
  const margin = countMargin(fallback);
  return (text) => (text.length < SHORT ? Math.ceil(exact(text) * margin) : Math.ceil(countLinear(text, split, exact) * margin));
}

/**
 * A counter over `measure` that memoises texts of {@link SHORT} chars or more (a long run re-counts
 * the same outputs at every step); with `cacheShort`, the short ones too, in a cache of their own
 * (for a measure that costs a round trip, not only tokenizing).
 */
export function memoCounter(encoding: string, measure: Measure, opts: { cacheShort?: boolean } = {}): TokenCounter {
  const cache = new Map<string, number>();
  const short = opts.cacheShort ? new Map<string, number>() : undefined;
  const remember = (map: Map<string, number>, text: string, n: number): number => {
    if (map.size >= CACHE_LIMIT) map.delete(map.keys().next().value as string);
    map.set(text, n);
    return n;
  };
  return {
    encoding,
    count(text: string): number {
      if (!text) return 0;
      const map = text.length < SHORT ? short : cache;
      if (!map) return measure(text);
      const hit = map.get(text);
      return hit !== undefined ? hit : remember(map, text, measure(text));
    },
  };
}

/** A counter over the given encoding, loaded on this thread. */
export async function loadTokenCounter(encoding: Encoding = "o200k_base", fallback = false): Promise<TokenCounter> {
  return memoCounter(encoding, await loadMeasure(encoding, fallback));
}
