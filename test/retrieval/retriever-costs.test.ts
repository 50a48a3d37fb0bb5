import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createHashedEmbedder } from "../../src/retrieval/embedders/hashed.js";
import type { Embedder } from "../../src/retrieval/embedders/port.js";
import { createRetriever, type CodeHit, type Retriever, type SearchOptions } from "../../src/retrieval/hybrid.js";
import { NgramIndex } from "../../src/retrieval/ngram-index.js";
import { createMemoryVectorIndex } from "../../src/retrieval/vector-index.js";
import type { LedgerEvent } from "../../src/state.js";
import { testAgent, type TestAgent } from "../helpers/agent.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { ConfinedDir } from "../../src/workspace/confined.js";

// What a search, a refresh and a context build cost, counted in work done (rows read, files read,
// queries embedded) rather than time, so the numbers mean the same on a busy machine. Vectors are
// real (hashed embedder, in-process vector index); Chroma is not needed to count these.

const open: Retriever[] = [];
const agents: TestAgent[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const r of open.splice(0)) await r.close();
  for (const a of agents.splice(0)) await a.close();
  cleanupTemp();
});

/** The hashed embedder, counting the queries it embeds. */
function countingEmbedder(): Embedder & { queries: string[] } {
  const inner = createHashedEmbedder();
  const queries: string[] = [];
  return {
    id: inner.id,
    dimensions: inner.dimensions,
    queries,
    embedDocuments: (texts) => inner.embedDocuments(texts),
    embedQuery: (text) => {
      queries.push(text);
      return inner.embedQuery(text);
    },
  };
}

describe("refresh cost follows what changed, not the workspace", () => {
  it("reads a handful of rows of the files table for a refresh in a 1,500-file workspace", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 1500; i++) files[`pkg/d${i % 25}/note${i}.txt`] = `note number ${i}: widget_${i} gadget\n`;
    const ws = tempWorkspace(undefined, files);
    const opened = vi.spyOn(NgramIndex, "open");
    const r = await createRetriever({
      workspace: ws,
      stateDir: path.join(ws, ".ll-index"),
      vectorIndex: createMemoryVectorIndex(),
      history: false,
      onWarning: () => {},
    });
    open.push(r);
    const index = opened.mock.results[0]!.value as NgramIndex;
    expect((await r.index()).indexed).toBe(1500);

    fs.appendFileSync(path.join(ws, "pkg/d1/note1.txt"), "edited: sprocket\n");
    fs.rmSync(path.join(ws, "pkg/d2/note2.txt"));
    fs.rmSync(path.join(ws, "pkg/d3"), { recursive: true }); // 60 files
    fs.writeFileSync(path.join(ws, "pkg/fresh.txt"), "a fresh flange\n");
    const before = index.fileRowsRead;
    const rep = await r.refresh(["pkg/d1/note1.txt", "pkg/d2/note2.txt", "pkg/d3", "pkg/fresh.txt"]);
    const read = index.fileRowsRead - before;
    expect(rep).toMatchObject({ indexed: 2, removed: 61, vectorized: 2 });
    // One record per changed file, the 60 of the deleted directory, the 2 re-embedded: never the
    // whole table (the refresh loaded all 1,500 rows once per deleted path, and again for vectors).
    expect(read).toBeLessThanOrEqual(1 + 60 + 2 + 2);
    expect((await r.stats()).files).toBe(1500 - 61 + 1);
    const hit = (q: string) => r.search(q, 3).then((h) => h[0]?.path);
    expect(await hit("sprocket")).toBe("pkg/d1/note1.txt");
    expect(await hit("flange")).toBe("pkg/fresh.txt");
    expect((await r.search("widget_2", 5)).map((h) => h.path)).not.toContain("pkg/d2/note2.txt");
  }, 120_000);
});

describe("a search reads each hit's file once", () => {
  it("reads (and redacts) a file once for all of its ranges in the results", async () => {
    const fnBlock = (name: string) =>
      [`export function ${name}() {`, ...Array.from({ length: 45 }, (_, i) => `  const v${i} = lookupWidget(${i});`), "}", ""].join("\n");
    const ws = tempWorkspace(undefined, {
      "big.ts": ["renderWidget", "saveWidget", "loadWidget", "openWidget"].map(fnBlock).join("\n"),
      "small.ts": "export const widgetCount = 1;\n",
    });
    const redacted: string[] = [];
    const redact = (t: string) => (redacted.push(t), t);
    const r = await createRetriever({ workspace: ws, stateDir: path.join(ws, ".ll-index"), vectorIndex: "off", history: false, redact, onWarning: () => {} });
    open.push(r);
    await r.index();
    redacted.length = 0;
    // Workspace files are read through the confined reader (workspace/confined.ts), by relative path.
    const reads = vi.spyOn(ConfinedDir.prototype, "readFile");
    const hits = await r.search("widget", 10);
    const big = hits.filter((h) => h.path === "big.ts");
    expect(big.length).toBe(3);
    for (const h of big) expect(h.preview).toMatch(/^\d+\| .*Widget/);
    const readsOf = (rel: string) => reads.mock.calls.filter((c) => String(c[0]) === rel).length;
    expect(readsOf("big.ts")).toBe(1);
    expect(readsOf("small.ts")).toBe(hits.some((h) => h.path === "small.ts") ? 1 : 0);
    expect(redacted).toHaveLength(new Set(hits.map((h) => h.path)).size);
    // The next search reads again: the files may have changed in between.
    await r.search("widget", 10);
    expect(readsOf("big.ts")).toBe(2);
  }, 60_000);
});

describe("a context build embeds its query once", () => {
  const call = (name: string, args: Record<string, unknown>) => ({ tool_calls: [{ name, args }] });

  it("code and history search share one query embedding per build", async () => {
    const ws = tempWorkspace(undefined, {
      "src/invoice.ts": "export function totalOf(lines: number[]) {\n  return lines.reduce((a, b) => a + b, 0);\n}\n",
      "check.js": "console.error(`Error: invoice total wrong (${process.argv[2]})`); process.exit(1);\n",
    });
    // Each failing run ends with another error line, so each build asks a new query.
    const a = await testAgent(ws, {
      decide: [
        call("run_command", { command: "node check.js first" }),
        call("run_command", { command: "node check.js second" }),
        call("finish", { summary: "done" }),
      ],
    });
    agents.push(a);
    const embedder = countingEmbedder();
    const r = await createRetriever({
      workspace: ws,
      stateDir: path.join(ws, ".ll-index"),
      ledger: a.rt.ledger,
      embedder,
      vectorIndex: createMemoryVectorIndex(),
      history: false,
      onWarning: () => {},
    });
    open.push(r);
    const searches: Array<{ query: string; scope: SearchOptions["scope"] }> = [];
    const searchAll = r.searchAll.bind(r);
    r.searchAll = (query, opts = {}) => (searches.push({ query, scope: opts.scope ?? "code" }), searchAll(query, opts));
    a.rt.retriever = r;
    a.rt.searcher = r;

    await a.run("fix the invoice total");
    const builds = (await a.events()).filter((e): e is LedgerEvent<"context_built"> => e.type === "context_built");
    expect(builds).toHaveLength(3);
    const queries = [...new Set(searches.map((s) => s.query))];
    expect(queries).toHaveLength(3);
    // Every build searched code and history with its query ...
    for (const q of queries)
      expect(
        searches
          .filter((s) => s.query === q)
          .map((s) => s.scope)
          .sort(),
      ).toEqual(["code", "events"]);
    // ... and embedded it once; the first build's not at all (the first prompt uses no vector).
    expect(embedder.queries).toEqual(queries.slice(1));
    const code = builds.flatMap((b) => b.payload.items).filter((i) => i.section === "retrieved");
    expect(code.some((i) => i.source.startsWith("file:src/invoice.ts"))).toBe(true);
    expect(((await r.search(queries[0]!, 3)) as CodeHit[]).length).toBeGreaterThan(0);
    expect(embedder.queries).toHaveLength(3);
  }, 120_000);
});

describe("a search reads its candidates' chunks in one statement", () => {
  it("asks the index once for the chunks of every candidate file, and they are those chunksOf gives one by one", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++)
      files[`src/m${i}.ts`] = `export function widget${i}(gadget: number) {\n  return gadget + ${i};\n}\n\nexport const sprocket${i} = widget${i}(${i});\n`;
    const ws = tempWorkspace(undefined, files);
    const opened = vi.spyOn(NgramIndex, "open");
    const r = await createRetriever({
      workspace: ws,
      stateDir: path.join(ws, ".ll-index"),
      vectorIndex: createMemoryVectorIndex(),
      history: false,
      onWarning: () => {},
    });
    open.push(r);
    const index = opened.mock.results[0]!.value as NgramIndex;
    await r.index();
    const one = vi.spyOn(index, "chunksOf");
    const many = vi.spyOn(index, "chunksOfMany");
    const hits = await r.search("widget gadget sprocket", 40);
    expect(new Set(hits.map((h) => h.path)).size).toBeGreaterThan(20);
    expect(many).toHaveBeenCalledTimes(1);
    expect(one).not.toHaveBeenCalled();
    const batch = index.chunksOfMany(["src/m1.ts", "src/m2.ts", "missing.ts", "src/m1.ts"]);
    expect([...batch.keys()].sort()).toEqual(["src/m1.ts", "src/m2.ts"]);
    for (const p of ["src/m1.ts", "src/m2.ts"]) expect(batch.get(p)).toEqual(index.chunksOf(p));
  });
});
