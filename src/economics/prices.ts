import { z } from "zod";

/** USD per million tokens: input, cached input (served from the provider's prefix cache), output. */
export const ModelPrice = z.strictObject({
  input: z.number().nonnegative(),
  cachedInput: z.number().nonnegative().optional(),
  output: z.number().nonnegative(),
});
export type ModelPrice = z.infer<typeof ModelPrice>;

/** `prices` in ledgerloop.config.json: model name (without "openai:") → price; overrides the defaults. */
export const PriceTable = z.record(z.string().min(1), ModelPrice);
export type PriceTable = z.infer<typeof PriceTable>;

/**
 * Defaults for common models, USD per 1M tokens as OpenAI listed them when this was written; check
 * them against the provider's page and override in the config file. Unknown models cost nothing
 * (local servers), which the report says.
 */
export const DEFAULT_PRICES: PriceTable = {
  "gpt-4o-mini": { input: 0.15, cachedInput: 0.075, output: 0.6 },
  "gpt-4o": { input: 2.5, cachedInput: 1.25, output: 10 },
  "gpt-4.1": { input: 2, cachedInput: 0.5, output: 8 },
  "gpt-4.1-mini": { input: 0.4, cachedInput: 0.1, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, cachedInput: 0.025, output: 0.4 },
  "o4-mini": { input: 1.1, cachedInput: 0.275, output: 4.4 },
  "gpt-5": { input: 1.25, cachedInput: 0.125, output: 10 },
  "gpt-5-mini": { input: 0.25, cachedInput: 0.025, output: 2 },
};

/** The price of a model spec ("openai:gpt-4o-mini"), the config's over the defaults; undefined when unknown. */
export function priceOf(spec: string, overrides: PriceTable = {}): ModelPrice | undefined {
  const name = spec.replace(/^[a-z]+:/, "");
  return overrides[name] ?? overrides[spec] ?? DEFAULT_PRICES[name];
}

/** Cost in USD of one call's usage; cached input tokens are part of the input tokens, billed at the cached price. */
export function costOf(usage: { inputTokens?: number; outputTokens?: number; cachedInputTokens?: number } | undefined, price: ModelPrice | undefined): number {
  if (!usage || !price) return 0;
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens ?? 0);
  const fresh = (usage.inputTokens ?? 0) - cached;
  return (fresh * price.input + cached * (price.cachedInput ?? price.input) + (usage.outputTokens ?? 0) * price.output) / 1_000_000;
}
