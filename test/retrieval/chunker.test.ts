import { describe, expect, it } from "vitest";
import { chunkLines } from "../../src/retrieval/chunker.js";
import { extractSymbols } from "../../src/symbols/extract.js";

const fn = (name: string, body: number) => [`export function ${name}() {`, ...Array.from({ length: body }, (_, i) => `  step${i}();`), "}", ""];

describe("chunkLines", () => {
  it("keeps functions whole and merges small neighbours up to the target", async () => {
    const lines = [...fn("a", 20), ...fn("b", 20), ...fn("c", 20), ...fn("d", 20)];
    const chunks = chunkLines(lines, await extractSymbols(lines.join("\n"), "x.ts"));
    // Every function lies inside one chunk, and no chunk exceeds 80 lines.
    for (const name of ["a", "b", "c", "d"]) expect(chunks.filter((c) => c.symbols.includes(name))).toHaveLength(1);
    for (const c of chunks) expect(c.endLine - c.startLine + 1).toBeLessThanOrEqual(80);
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    // Chunks cover the file in order without overlap.
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.startLine).toBeGreaterThan(chunks[i - 1]!.endLine);
  });

  it("cuts a big class between its methods, with the leading comment kept with its symbol", async () => {
    const methods = Array.from({ length: 6 }, (_, i) => [`  /** m${i} */`, `  m${i}() {`, ...Array.from({ length: 25 }, () => "    work();"), "  }"]).flat();
    const lines = ["export class Big {", ...methods, "}"];
    const chunks = chunkLines(lines, await extractSymbols(lines.join("\n"), "big.ts"));
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.endLine - c.startLine + 1).toBeLessThanOrEqual(80);
    expect(chunks[0]!.symbols).toContain("Big");
    // No method is split across chunks.
    for (let i = 0; i < 6; i++) expect(chunks.filter((c) => c.symbols.includes(`m${i}`))).toHaveLength(1);
    // Each chunk starts at the class or at a method's doc comment, never between comment and method.
    for (const c of chunks) expect(lines[c.startLine - 1]).toMatch(/^(export class Big \{| {2}\/\*\* m\d \*\/)$/);
  });

  it("cuts files without symbols at blank lines into 40-80 line pieces", () => {
    const lines = Array.from({ length: 300 }, (_, i) => (i % 17 === 16 ? "" : `line ${i}`));
    const chunks = chunkLines(lines, []);
    expect(chunks[0]!.startLine).toBe(1);
    expect(chunks[chunks.length - 1]!.endLine).toBe(300);
    for (const c of chunks) expect(c.endLine - c.startLine + 1).toBeLessThanOrEqual(80);
    for (const c of chunks.slice(0, -1)) expect(c.endLine - c.startLine + 1).toBeGreaterThanOrEqual(30);
  });

  it("handles empty and tiny files", () => {
    expect(chunkLines([], [])).toEqual([]);
    expect(chunkLines(["one"], [])).toEqual([{ startLine: 1, endLine: 1, symbols: [] }]);
  });
});

describe("chunkLines: nesting", () => {
  it("terminates on a long member with a doc comment inside a long class (regression)", async () => {
    const body = Array.from({ length: 120 }, (_, i) => `    x${i}();`);
    const lines = ["export class Outer {", "  /** big */", "  big() {", ...body, "  }", "}"];
    const chunks = chunkLines(lines, await extractSymbols(lines.join("\n"), "o.ts"));
    for (const c of chunks) expect(c.endLine - c.startLine + 1).toBeLessThanOrEqual(80);
    expect(chunks[chunks.length - 1]!.endLine).toBe(lines.length);
  });
});

describe("chunkLines: properties", () => {
  it("always yields ordered, non-overlapping chunks of at most 80 lines inside the file, for any symbols", async () => {
    const fc = await import("fast-check");
    const sym = fc.record({ a: fc.integer({ min: 1, max: 400 }), len: fc.integer({ min: 0, max: 300 }), comment: fc.boolean() });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 400 }), fc.array(sym, { maxLength: 30 }), (n, raw) => {
        const lines = Array.from({ length: n }, (_, i) => (i % 9 === 0 ? "" : i % 7 === 0 ? "  // note" : `code ${i}`));
        const symbols = raw.map((r, i) => ({
          name: `s${i}`,
          kind: "function" as const,
          startLine: Math.min(r.a, n),
          endLine: Math.min(n, r.a + r.len),
          exported: true,
        }));
        const chunks = chunkLines(lines, symbols);
        let prev = 0;
        for (const c of chunks) {
          if (c.startLine <= prev || c.endLine < c.startLine || c.endLine > n || c.endLine - c.startLine + 1 > 80) return false;
          prev = c.endLine;
        }
        return true;
      }),
      { numRuns: 300 },
    );
  });
});
