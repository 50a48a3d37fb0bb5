import { describe, expect, it } from "vitest";
import { capText, OutputCap } from "../../src/sandbox/output-cap.js";

const marker = (n: number) => `\n[... ${n} bytes cut by ledgerloop's output cap ...]\n`;

/** Deterministic, non-repeating ASCII so a wrong slice cannot match by accident. */
function text(len: number, seed = 0): string {
  let s = "";
  for (let i = 0; i < len; i++) s += String.fromCharCode(33 + ((i * 7 + seed * 13 + Math.floor(i / 94)) % 94));
  return s;
}

function capOf(cap: number, chunks: string[]): OutputCap {
  const c = new OutputCap(cap);
  for (const chunk of chunks) c.push(Buffer.from(chunk));
  return c;
}

describe("OutputCap", () => {
  it("keeps everything under the cap, unmarked", () => {
    const c = capOf(100, ["hello ", "world\n"]);
    expect(c.truncated).toBe(false);
    expect(c.totalBytes).toBe(12);
    expect(c.text()).toBe("hello world\n");
  });

  it("keeps exactly cap bytes without truncating", () => {
    const all = text(100);
    const c = capOf(100, [all]);
    expect(c.truncated).toBe(false);
    expect(c.text()).toBe(all);
  });

  it("keeps an empty stream empty", () => {
    const c = new OutputCap(100);
    expect(c.truncated).toBe(false);
    expect(c.text()).toBe("");
  });

  it("keeps the head and the tail of one big chunk, marking the exact cut", () => {
    const all = text(1000);
    const c = capOf(100, [all]);
    expect(c.truncated).toBe(true);
    expect(c.totalBytes).toBe(1000);
    expect(c.text()).toBe(`${all.slice(0, 50)}${marker(900)}${all.slice(-50)}`);
  });

  it("cuts a single byte over the cap", () => {
    const all = text(101);
    const c = capOf(100, [all]);
    expect(c.truncated).toBe(true);
    expect(c.text()).toBe(`${all.slice(0, 50)}${marker(1)}${all.slice(-50)}`);
  });

  it("handles many small chunks, including ones straddling the head boundary", () => {
    const chunks = Array.from({ length: 5000 }, (_, i) => text(7, i));
    const all = chunks.join("");
    const c = capOf(64, chunks);
    expect(c.totalBytes).toBe(35_000);
    expect(c.truncated).toBe(true);
    expect(c.text()).toBe(`${all.slice(0, 32)}${marker(35_000 - 64)}${all.slice(-32)}`);
  });

  it("handles chunks larger than the tail budget arriving after many small ones", () => {
    const chunks = [...Array.from({ length: 100 }, (_, i) => text(3, i)), text(500, 1), "x", text(40, 2)];
    const all = chunks.join("");
    const c = capOf(100, chunks);
    expect(c.text()).toBe(`${all.slice(0, 50)}${marker(all.length - 100)}${all.slice(-50)}`);
  });

  it("gives the same result however the stream is chunked", () => {
    const all = text(10_000);
    const one = capOf(300, [all]).text();
    for (const size of [1, 2, 3, 149, 150, 151, 299, 4096]) {
      const chunks: string[] = [];
      for (let i = 0; i < all.length; i += size) chunks.push(all.slice(i, i + size));
      expect(capOf(300, chunks).text()).toBe(one);
    }
    expect(one).toBe(`${all.slice(0, 150)}${marker(9700)}${all.slice(-150)}`);
  });

  it("keeps memory bounded: text() never holds much more than the cap", () => {
    const c = new OutputCap(1000);
    const chunk = Buffer.alloc(10_000, 0x61);
    for (let i = 0; i < 1000; i++) c.push(chunk);
    expect(c.totalBytes).toBe(10_000_000);
    expect(Buffer.byteLength(c.text())).toBeLessThan(1000 + 80);
    expect(c.text()).toContain(marker(10_000_000 - 1000));
  });

  it("counts bytes, not characters", () => {
    const c = capOf(12, ["é".repeat(6)]); // 12 bytes: exactly the cap
    expect(c.truncated).toBe(false);
    expect(c.text()).toBe("éééééé");
    const big = capOf(12, ["é".repeat(20)]); // 40 bytes
    expect(big.truncated).toBe(true);
    expect(big.text()).toBe(`ééé${marker(28)}ééé`);
  });

  it("does not split a character at the head/tail boundary when nothing was cut", () => {
    const c = capOf(10, ["ééé"]); // 6 bytes; the head budget (5) ends inside the third é
    expect(c.truncated).toBe(false);
    expect(c.text()).toBe("ééé");
  });
});

describe("capText", () => {
  it("leaves short text alone", () => {
    expect(capText("short", 100)).toBe("short");
    const exact = text(100);
    expect(capText(exact, 100)).toBe(exact);
  });

  it("keeps head and tail and counts the cut characters", () => {
    const all = text(1000);
    const half = Math.floor((200 - 60) / 2);
    expect(capText(all, 200)).toBe(`${all.slice(0, half)}\n[... ${1000 - 2 * half} chars cut ...]\n${all.slice(-half)}`);
    expect(capText(all, 200).length).toBeLessThanOrEqual(200);
  });
});
