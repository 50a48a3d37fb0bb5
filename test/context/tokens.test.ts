import fs from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { countLinear, loadTokenCounter, MAX_COUNTED_CHARS, MAX_EXACT_PIECE, type TokenCounter } from "../../src/context/tokens.js";
import { REPO } from "../helpers/workspace.js";

type Encoding = { countTokens(text: string, opts?: { disallowedSpecial?: Set<string> }): number };
let o200k: Encoding;
let split: RegExp;
let counter: TokenCounter;
const asText = { disallowedSpecial: new Set<string>() };
const exact = (t: string) => o200k.countTokens(t, asText);

/** Deterministic pseudo-random numbers, so a failing case can be reproduced. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function cpuMs(fn: () => void): number {
  const before = process.cpuUsage();
  fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

beforeAll(async () => {
  o200k = (await import("gpt-tokenizer/encoding/o200k_base")) as unknown as Encoding;
  const patterns = (await import("gpt-tokenizer/encodingParams/constants")) as unknown as Record<string, RegExp>;
  split = new RegExp(patterns.O200K_TOKEN_SPLIT_REGEX!.source, "gu");
  counter = await loadTokenCounter("o200k_base");
});

describe("token counting", () => {
  it("counts this repository's source files exactly as the tokenizer does", () => {
    const files: string[] = [];
    for (const dir of ["src", "test"]) {
      for (const f of fs.readdirSync(path.join(REPO, dir), { recursive: true }) as string[]) {
        if (/\.(ts|js|md|html|css)$/.test(f)) files.push(path.join(REPO, dir, f));
      }
    }
    files.push(path.join(REPO, "README.md"));
    let compared = 0;
    for (const f of files) {
      const text = fs.readFileSync(f, "utf8");
      if (text.length > MAX_COUNTED_CHARS) continue;
      expect(counter.count(text), f).toBe(exact(text));
      compared++;
    }
    expect(compared).toBeGreaterThan(100);
  });

  it("counts text that spells a special token as text instead of throwing", () => {
    const text = "the model stops at <|endoftext|> and <|endofprompt|>; see the tokenizer docs for why";
    expect(() => counter.count(text)).not.toThrow();
    expect(counter.count(text)).toBe(exact(text));
  });

  it("never hands the tokenizer a piece longer than the exact limit", () => {
    const r = rng(7);
    const letters = Array.from({ length: 50_000 }, () => String.fromCharCode(97 + Math.floor(r() * 26))).join("");
    const inputs = [
      "A".repeat(200_000),
      `const x = "${"=".repeat(100_000)}";\n`,
      `;${"\n/".repeat(60_000)}`,
      `${" ".repeat(100_000)}x`,
      `${"\n".repeat(100_000)}end`,
      `word ${letters} word ${"Ab".repeat(10)} ${letters.toUpperCase()} tail`,
    ];
    for (const text of inputs) {
      let longest = 0;
      countLinear(text, split, (t) => {
        for (const m of t.matchAll(split)) longest = Math.max(longest, m[0].length);
        return exact(t);
      });
      expect(longest, text.slice(0, 20)).toBeLessThanOrEqual(MAX_EXACT_PIECE);
    }
  });

  it("counts a long run of one letter in bounded CPU time (it was quadratic: 200k took ~25 s)", () => {
    // CPU time, generous: the old count needed minutes of CPU for these.
    expect(cpuMs(() => counter.count("A".repeat(200_000)))).toBeLessThan(5_000);
    expect(cpuMs(() => counter.count(`{"content":"${"x".repeat(10_000_000)}"}`))).toBeLessThan(5_000);
  }, 120_000);

  it("never counts fewer tokens than the tokenizer for long pieces (the budget stays an upper bound)", () => {
    const r = rng(42);
    const alphabets = [
      "abcdefghijklmnopqrstuvwxyz",
      "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
      "aeiou",
      "ab",
      "A",
      "=-",
      "!@#$%^&*()",
      " \t",
      "\n ",
      "日本語漢字かなカナ",
      "абвгдежзий",
      "é̃ä",
      "😀🎉",
      "etaoinshrdlu",
      "thequickbrownfox",
      "/\n",
    ];
    let estimated = 0;
    for (let t = 0; t < 240; t++) {
      const chars = [...alphabets[t % alphabets.length]!];
      const len = MAX_EXACT_PIECE + 1 + Math.floor(r() * 2_000);
      let piece = "";
      while (piece.length < len) piece += chars[Math.floor(r() * chars.length)];
      if (t % 3 === 0)
        piece = piece
          .slice(0, 7)
          .repeat(Math.ceil(len / 7))
          .slice(0, len);
      const text = t % 2 ? `let a = 1;\n${piece}\nlet b = 2;\n` : piece;
      const got = countLinear(text, split, exact);
      const truth = exact(text);
      expect(got, JSON.stringify(text.slice(0, 30))).toBeGreaterThanOrEqual(truth);
      if (got !== truth) estimated++;
    }
    // The cases really went through the estimate, and it stays close (not the byte length).
    expect(estimated).toBeGreaterThan(50);
    const run = "abcdefghij".repeat(300);
    expect(countLinear(run, split, exact)).toBeLessThan(exact(run) * 1.5);
  });

  it("bounds a text past the counted size by its UTF-8 length", () => {
    const text = "é".repeat(MAX_COUNTED_CHARS + 1);
    expect(counter.count(text)).toBe(Buffer.byteLength(text));
  });
});
