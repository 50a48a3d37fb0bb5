/**
 * Token counting for prompt budgets, with a real BPE tokenizer (gpt-tokenizer) chosen from the
 * model name. Counts of the same text are memoised: a long run re-counts the same tool outputs,
 * decisions and summaries at every step.
 */

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
  const model = spec.replace(/^[a-z]+:/, "").split("/").pop() ?? spec;
  const models = (await import("gpt-tokenizer/models")) as unknown as Record<
    string,
    { context_window?: number; max_output_tokens?: number } | undefined
  >;
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

/** A counter over the given encoding; loads the BPE ranks once per process. */
export async function loadTokenCounter(encoding: "o200k_base" | "cl100k_base" = "o200k_base", fallback = false): Promise<TokenCounter> {
  const mod = (encoding === "cl100k_base"
    ? await import("gpt-tokenizer/encoding/cl100k_base")
    : await import("gpt-tokenizer/encoding/o200k_base")) as unknown as { countTokens(text: string): number };
  const cache = new Map<string, number>();
  const margin = fallback ? UNKNOWN_MODEL_MARGIN : 1;
  return {
    encoding,
    count(text: string): number {
      if (!text) return 0;
      if (text.length < SHORT) return Math.ceil(mod.countTokens(text) * margin);
      const hit = cache.get(text);
      if (hit !== undefined) return hit;
      const n = Math.ceil(mod.countTokens(text) * margin);
      if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
      cache.set(text, n);
      return n;
    },
  };
}

/** A counter for the model of a spec ("openai:gpt-4o", "scripted:…"). */
export async function tokenCounterFor(spec: string): Promise<{ counter: TokenCounter; profile: ModelProfile }> {
  const profile = await modelProfile(spec);
  return { counter: await loadTokenCounter(profile.encoding, profile.fallback), profile };
}
