import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { costOf, priceOf } from "../../src/economics/prices.js";

describe("prices and cost", () => {
  it("bills cached input at the cached price and the rest at the input price", () => {
    const price = { input: 2, cachedInput: 0.5, output: 8 };
    // 1M input of which 800k cached, 100k output: 0.2M*2 + 0.8M*0.5 + 0.1M*8 = 0.4 + 0.4 + 0.8.
    expect(costOf({ inputTokens: 1_000_000, cachedInputTokens: 800_000, outputTokens: 100_000 }, price)).toBeCloseTo(1.6, 10);
    // Without a cached price, cached tokens cost full price; without a price, nothing.
    expect(costOf({ inputTokens: 1_000_000, cachedInputTokens: 1_000_000 }, { input: 1, output: 1 })).toBeCloseTo(1, 10);
    expect(costOf({ inputTokens: 5 }, undefined)).toBe(0);
  });

  it("the config's prices override the defaults; unknown models have none", () => {
    expect(priceOf("openai:gpt-4o-mini")).toMatchObject({ input: 0.15 });
    const cfg = parseConfig({ prices: { "gpt-4o-mini": { input: 1, cachedInput: 0.1, output: 2 }, "my-llama": { input: 0, output: 0 } } });
    expect(priceOf("openai:gpt-4o-mini", cfg.prices)).toEqual({ input: 1, cachedInput: 0.1, output: 2 });
    expect(priceOf("openai:my-llama", cfg.prices)).toEqual({ input: 0, output: 0 });
    expect(priceOf("openai:unknown-model")).toBeUndefined();
    expect(() => parseConfig({ prices: { x: { input: -1, output: 0 } } })).toThrow(/prices/);
  });
});
