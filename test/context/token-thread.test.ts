import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { Encoding } from "../../src/context/bpe-ranks.js";
import { deferredTokenCounter, prestartTokenCounter, tokenCounterFor, type DeferredTokenCounter } from "../../src/context/token-thread.js";
import { readText, TEXT_BYTES, writeText } from "../../src/context/token-wire.js";
import { loadTokenCounter, MAX_COUNTED_CHARS, MAX_EXACT_PIECE, type ModelProfile } from "../../src/context/tokens.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";
import { tokenizerCorpus } from "../helpers/token-corpus.js";

// The tokenizer loads and counts on a worker thread (issue 30); count() stays synchronous through
// shared memory. Nothing the model sees may change: every count equals the one-thread count.

const open: DeferredTokenCounter[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  cleanupTemp();
});

function profile(encoding: string, fallback = false): ModelProfile {
  return { model: "test", encoding: encoding as Encoding, contextWindow: 32_768, reservedOutput: 4_096, fallback };
}

function counter(p: ModelProfile, opts?: Parameters<typeof deferredTokenCounter>[1]): DeferredTokenCounter {
  const c = deferredTokenCounter(p, opts);
  open.push(c);
  return c;
}

/** Whether `p` has settled by now (only promise jobs run before the answer, no I/O and no timer). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return done;
}

/** The shared corpus, plus what the shared-memory transport and the worker's limits could get wrong. */
function corpus(): string[] {
  const texts = tokenizerCorpus();
  texts.push(fs.readFileSync(path.join(REPO, "README.md"), "utf8"));
  const code = fs.readFileSync(path.join(REPO, "src/context/builder.ts"), "utf8");
  texts.push(
    "",
    "a",
    "a word",
    // Lone surrogates anywhere, short and long (a UTF-8 transport would turn them into U+FFFD).
    "\ud800",
    "\udc00 leading, trailing \ud83d",
    "\udc00\ud800 reversed pair " + "x".repeat(60) + "\ud800",
    ("lone \udfff in a longer text " + code.slice(0, 400)).repeat(3),
    // Pieces beyond MAX_EXACT_PIECE: estimated, the same way on either thread.
    "A".repeat(MAX_EXACT_PIECE * 7 + 3),
    `${code.slice(0, 500)} ${"漢".repeat(MAX_EXACT_PIECE * 3)} ${"😀".repeat(MAX_EXACT_PIECE)} ${code.slice(500, 900)}`,
    // At the cap (fills the shared buffer exactly), and beyond it (counted by bytes, never sent).
    code.repeat(Math.ceil(MAX_COUNTED_CHARS / code.length)).slice(0, MAX_COUNTED_CHARS),
    code.repeat(Math.ceil(MAX_COUNTED_CHARS / code.length)).slice(0, MAX_COUNTED_CHARS - 1) + "é",
    code.repeat(Math.ceil((MAX_COUNTED_CHARS + 10) / code.length)).slice(0, MAX_COUNTED_CHARS + 1),
    "语".repeat(MAX_COUNTED_CHARS + 5),
  );
  return texts;
}

describe("a token counter on a worker thread", () => {
  it.each([
    ["o200k_base", false],
    ["o200k_base", true],
    ["cl100k_base", false],
  ] as const)("counts every text as %s on one thread does (fallback margin: %s)", async (encoding, fallback) => {
    const worker = counter(profile(encoding, fallback));
    const local = await loadTokenCounter(encoding, fallback);
    const texts = corpus();
    expect(texts.length).toBeGreaterThan(30);
    for (const t of texts) expect(worker.count(t), `${t.length} chars: ${JSON.stringify(t.slice(0, 40))}`).toBe(local.count(t));
    // Again, now from the memo caches on either side.
    for (const t of texts.slice(-12)) expect(worker.count(t)).toBe(local.count(t));
  });

  it("carries every text to the worker unchanged, lone surrogates included (no UTF-8 on the way)", () => {
    // The tokenizer itself turns a lone surrogate into U+FFFD, so counts alone cannot show this.
    const buf = Buffer.from(new SharedArrayBuffer(TEXT_BYTES));
    for (const t of corpus().filter((x) => x.length <= MAX_COUNTED_CHARS)) {
      const units = writeText(buf, t);
      expect(units).toBe(t.length);
      expect(readText(buf, units) === t, JSON.stringify(t.slice(0, 40))).toBe(true);
    }
  });

  it("answers a count made at once, before its ranks have loaded, by waiting for them", async () => {
    const c = counter(profile("o200k_base", true));
    expect(await settled(c.ready)).toBe(false);
    const text = fs.readFileSync(path.join(REPO, "src/context/tokens.ts"), "utf8");
    const n = c.count(text);
    await expect(c.ready).resolves.toBeUndefined();
    expect(n).toBe((await loadTokenCounter("o200k_base", true)).count(text));
  });

  it("says why when its tokenizer cannot load, in count() and in ready", async () => {
    const c = counter(profile("p50k_nope"));
    expect(() => c.count("some words to count")).toThrow(
      expect.objectContaining({ code: "TOKENIZER_FAILED", message: expect.stringMatching(/p50k_nope token counter could not load: .*Unknown encoding/) }),
    );
    await expect(c.ready).rejects.toMatchObject({ code: "TOKENIZER_FAILED" });
    // Texts beyond the cap need no tokenizer; every other count fails the same way, at once.
    expect(() => c.count("more words")).toThrow(/could not load/);
  });

  it("names a missing worker module", async () => {
    const missing = pathToFileURL(path.join(REPO, "dist", "nowhere", "token-worker.js"));
    const c = counter(profile("o200k_base"), { worker: missing });
    expect(() => c.count("a few words")).toThrow(
      expect.objectContaining({ code: "TOKENIZER_FAILED", message: expect.stringContaining("nowhere/token-worker.js is missing") }),
    );
    await expect(c.ready).rejects.toMatchObject({ code: "TOKENIZER_FAILED" });
  });

  it("gives up on a worker that never loads or never answers, with a clear error instead of a hang", async () => {
    const stuck = pathToFileURL(path.join(REPO, "test/fixtures/stuck-token-worker.ts"));
    const neverLoads = counter(profile("never-loads"), { worker: stuck, timeoutMs: 300 });
    expect(() => neverLoads.count("a few words")).toThrow(
      expect.objectContaining({ code: "TOKENIZER_TIMEOUT", message: expect.stringContaining("did not load its ranks within 300 ms") }),
    );
    await expect(neverLoads.ready).rejects.toMatchObject({ code: "TOKENIZER_TIMEOUT" });

    const neverAnswers = counter(profile("o200k_base"), { worker: stuck, timeoutMs: 300 });
    await neverAnswers.ready; // tsx takes longer than 300 ms to start a worker on this machine
    expect(() => neverAnswers.count("a few words")).toThrow(
      expect.objectContaining({ code: "TOKENIZER_TIMEOUT", message: expect.stringContaining("did not answer within 300 ms") }),
    );
    // The worker was stopped: later counts fail at once with the same error.
    expect(() => neverAnswers.count("other words")).toThrow(/did not answer within 300 ms/);
  });

  it("is one thread per encoding in a process: a second runtime's counter is ready at once, and outlives the first's close", async () => {
    const p = profile("o200k_base", true);
    const early = prestartTokenCounter(p); // the CLI's run, before its runtime exists
    const first = tokenCounterFor(p);
    open.push(first);
    await first.ready;
    await early.release();
    // A queue worker's next job: its runtime finds the tokenizer loaded, with no new thread.
    const second = tokenCounterFor(p);
    open.push(second);
    expect(await settled(second.ready)).toBe(true);
    await first.close();
    expect(() => first.count("after its close")).toThrow(expect.objectContaining({ code: "TOKENIZER_CLOSED" }));
    expect(second.count("still counted after the first closed")).toBe(
      (await loadTokenCounter("o200k_base", true)).count("still counted after the first closed"),
    );
    await second.close();
    // Nobody holds it now; within the idle time the next runtime still finds it loaded.
    const third = tokenCounterFor(p);
    open.push(third);
    expect(await settled(third.ready)).toBe(true);
    // Another encoding is another thread, loading on its own.
    const other = tokenCounterFor(profile("cl100k_base", true));
    open.push(other);
    expect(await settled(other.ready)).toBe(false);
  });

  it("never hands out a shared thread that failed: the next runtime gets a fresh one", async () => {
    const p = profile("cl100k_base");
    const stuck = pathToFileURL(path.join(REPO, "test/fixtures/stuck-token-worker.ts"));
    const broken = tokenCounterFor(p, { worker: stuck, timeoutMs: 300 });
    open.push(broken);
    expect(() => broken.count("a few words")).toThrow(expect.objectContaining({ code: "TOKENIZER_TIMEOUT" }));
    expect(broken.usable).toBe(false);
    const fresh = tokenCounterFor(p);
    open.push(fresh);
    expect(fresh.usable).toBe(true);
    expect(fresh.count("counted by a fresh thread")).toBe((await loadTokenCounter("cl100k_base", false)).count("counted by a fresh thread"));
  });

  it("refuses to count once closed", async () => {
    const c = counter(profile("o200k_base"));
    expect(c.count("before")).toBeGreaterThan(0);
    await c.close();
    expect(() => c.count("after closing")).toThrow(expect.objectContaining({ code: "TOKENIZER_CLOSED" }));
    await c.close();
  });

  it("does not keep a process alive: a script that counts once and returns exits on its own", () => {
    const dir = tempWorkspace();
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;
    const src = pathToFileURL(path.join(REPO, "src/context/token-thread.ts")).href;
    const scripts = {
      counts: `import { deferredTokenCounter } from ${JSON.stringify(src)};
const c = deferredTokenCounter({ model: "x", encoding: "o200k_base", contextWindow: 1, reservedOutput: 0, fallback: false });
console.log(c.count("hello world"));`,
      awaits: `import { deferredTokenCounter } from ${JSON.stringify(src)};
const c = deferredTokenCounter({ model: "x", encoding: "o200k_base", contextWindow: 1, reservedOutput: 0, fallback: false });
await c.ready;
console.log(c.count("hello world"));`,
      // A runtime's shared counter, released: its idle thread is closed as the event loop runs dry.
      shared: `import { tokenCounterFor } from ${JSON.stringify(src)};
const c = tokenCounterFor({ model: "x", encoding: "o200k_base", contextWindow: 1, reservedOutput: 0, fallback: false });
console.log(c.count("hello world"));
await c.close();`,
    };
    for (const [name, code] of Object.entries(scripts)) {
      const file = path.join(dir, `${name}.mts`);
      fs.writeFileSync(file, code);
      // A worker holding the process would run into this bound and be killed (status null).
      const r = spawnSync(process.execPath, ["--import", tsx, file], { encoding: "utf8", timeout: 25_000 });
      expect(r.status, `${name}: ${r.stderr}`).toBe(0);
      expect(r.stdout.trim(), name).toBe("2");
    }
  });
});
