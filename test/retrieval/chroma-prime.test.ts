import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRIME_ID, createChromaIndex } from "../../src/retrieval/chroma-index.js";
import { externalChroma, type ChromaServer } from "../../src/retrieval/chroma-server.js";
import { createEmbedder } from "../../src/retrieval/embedders/factory.js";
import { createRetriever } from "../../src/retrieval/hybrid.js";
import type { VectorIndex, VectorSpace } from "../../src/retrieval/vector-index.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { startTestChroma } from "./helpers/chroma.js";

// Chroma allocates and saves a collection's HNSW index at the first write into it: ~0.1-0.2 s of
// its CPU, which a fresh workspace's first prompt used to wait for. The retriever now primes both
// collections as soon as it connects (one record written and deleted), while it still reads and
// chunks the workspace. Priming must build the index on disk and change nothing any read returns.

let chroma: ChromaServer & { stateDir: string };
const closing: Array<() => Promise<void>> = [];

beforeAll(async () => {
  chroma = await startTestChroma();
}, 120_000);

afterAll(async () => {
  for (const c of closing.splice(0).reverse()) await c();
  await chroma?.release();
  cleanupTemp();
});

/** Chroma's HNSW segment directories on disk (each holds a data_level0.bin once its index exists). */
const hnswDirs = () => {
  const dir = path.join(chroma.stateDir, "chroma");
  return fs.readdirSync(dir).filter((d) => fs.existsSync(path.join(dir, d, "data_level0.bin")));
};

const until = async (ok: () => boolean, ms = 20_000) => {
  const end = Date.now() + ms;
  while (Date.now() < end && !ok()) await new Promise((r) => setTimeout(r, 50));
  return ok();
};

async function freshIndex(namespace: string) {
  const index = await createChromaIndex({ server: await externalChroma(chroma.url), embedder: await createEmbedder("hashed"), namespace });
  closing.push(() => index.close());
  return index;
}

const unit = (dims: number, at: number) => Array.from({ length: dims }, (_, i) => (i === at ? 1 : 0));

describe("priming a Chroma collection", () => {
  it("builds both collections' vector indexes on disk before any vector is stored, and leaves them empty", async () => {
    const index = await freshIndex(`prime-a ${Date.now()}`);
    const before = hnswDirs().length;
    expect(await index.count("code")).toBe(0); // opens (creates) the code collection: no index yet
    expect(hnswDirs().length).toBe(before);

    await index.prime!();

    expect(await until(() => hnswDirs().length === before + 2)).toBe(true);
    for (const space of ["code", "events"] as VectorSpace[]) {
      expect(await index.count(space)).toBe(0);
      expect(await index.query(space, unit(384, 0), 5)).toEqual([]);
    }
    // A second priming of a collection that holds vectors writes nothing into it.
    await index.upsert("code", [{ id: "a.ts:1-3", vector: unit(384, 0), metadata: { path: "a.ts", start: 1, end: 3, hash: "h" } }]);
    await index.prime!();
    expect(await index.count("code")).toBe(1);
  }, 60_000);

  it("never returns the priming record, should a process die between writing and deleting it", async () => {
    const index = await freshIndex(`prime-b ${Date.now()}`);
    await index.upsert("code", [
      { id: PRIME_ID, vector: unit(384, 0), metadata: { prime: 1 } },
      { id: "b.ts:1-9", vector: unit(384, 1), metadata: { path: "b.ts", start: 1, end: 9, hash: "h" } },
    ]);
    // The left-over record is the nearest neighbour of this query; it must still not come back.
    const hits = await index.query("code", unit(384, 0), 5);
    expect(hits.map((h) => h.id)).toEqual(["b.ts:1-9"]);
  }, 60_000);

  it("a read asked while a collection's first write is being saved waits for it: it neither fails nor misses the write", async () => {
    // Chroma answers such a read with "Error creating hnsw segment reader: Nothing found on disk",
    // which would turn vector search off for a while. Reads right after priming (the retriever's
    // first search) and right after a first write (event vectors, stored in the background) wait.
    const failures: string[] = [];
    const ask = (index: Awaited<ReturnType<typeof freshIndex>>, space: VectorSpace) =>
      index.query(space, unit(384, 1), 5).catch((err: unknown) => void failures.push(String(err)));
    for (let i = 0; i < 4; i++) {
      const primed = await freshIndex(`prime-race-${i} ${Date.now()}`);
      await primed.count("code");
      const priming = primed.prime!();
      await Promise.all([ask(primed, "code"), ask(primed, "events"), ask(primed, "code")]);
      await priming;

      const written = await freshIndex(`write-race-${i} ${Date.now()}`);
      const first = written.upsert("events", [{ id: `e${i}`, vector: unit(384, 1), metadata: { thread: "t", seq: 1 } }]);
      const hits = await written.query("events", unit(384, 1), 5);
      await first;
      expect(hits.map((h) => h.id)).toEqual([`e${i}`]);
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it("the retriever primes right after connecting, before the first vectors are stored", async () => {
    const inner = await freshIndex(`prime-c ${Date.now()}`);
    const calls: string[] = [];
    const store: VectorIndex = {
      description: inner.description,
      upsert: (space, items) => (calls.push(`upsert ${space}`), inner.upsert(space, items)),
      deleteWhere: (space, field, values) => inner.deleteWhere(space, field, values),
      query: (space, vector, k, filter) => inner.query(space, vector, k, filter),
      count: (space) => (calls.push(`count ${space}`), inner.count(space)),
      clear: (space) => inner.clear(space),
      get: (space, ids) => inner.get!(space, ids),
      prime: () => (calls.push("prime"), inner.prime!()),
      close: async () => {},
    };
    const ws = tempWorkspace(undefined, { "src/tariff.ts": "export function tariffFor(region: string) {\n  return region.length;\n}\n" });
    const r = await createRetriever({ workspace: ws, vectorIndex: store });
    closing.push(() => r.close());
    const report = await r.index();
    expect(report.vectorized).toBeGreaterThan(0);
    // The emptiness check (re-embed a wiped store) reads the count before priming can write.
    expect(calls.indexOf("count code")).toBeGreaterThanOrEqual(0);
    expect(calls.indexOf("prime")).toBeGreaterThan(calls.indexOf("count code"));
    expect(calls.indexOf("prime")).toBeLessThan(calls.indexOf("upsert code"));
    const hits = await r.search("tariffFor region", 3);
    expect(hits[0]?.path).toBe("src/tariff.ts");
    expect(hits[0]?.sources.vector).toBeGreaterThan(0);
  }, 60_000);
});
