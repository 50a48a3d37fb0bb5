import { afterAll, describe, expect, it } from "vitest";
import { createChromaIndex } from "../../src/retrieval/chroma-index.js";
import { createHashedEmbedder } from "../../src/retrieval/embedders/hashed.js";
import { createMemoryVectorIndex } from "../../src/retrieval/vector-index.js";
import { cleanupTemp } from "../helpers/workspace.js";
import { startTestChroma } from "./helpers/chroma.js";
import { expectVectorError, vectorIndexConformance } from "./vector-index-conformance.js";

afterAll(cleanupTemp);

vectorIndexConformance("memory", async () => createMemoryVectorIndex());

vectorIndexConformance("chroma (embedded server)", async () => {
  const server = await startTestChroma();
  const embedder = createHashedEmbedder({ dimensions: 16 });
  // Conformance vectors have 4 dimensions; the collection does not care what the embedder says.
  return createChromaIndex({ server, embedder: { ...embedder, dimensions: 4 }, namespace: "conformance" });
});

describe("chroma index errors", () => {
  it("maps an unreachable server to VECTOR_UNREACHABLE", async () => {
    const v = await createChromaIndex({
      server: { url: "http://127.0.0.1:9", pid: null, started: false, release: async () => {} },
      embedder: createHashedEmbedder({ dimensions: 16 }),
      namespace: "down",
      timeoutMs: 2_000,
    });
    const err = await v.count("code").catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("VECTOR_UNREACHABLE");
    await expectVectorError(v.query("code", new Array(16).fill(0.25), 3));
  });
});

describe("memory index query", () => {
  it("returns exactly what a full sort of every item gives: ties at the cut broken by id, short vectors padded with 0", async () => {
    const v = createMemoryVectorIndex();
    // Few distinct similarities, so many ties fall at the k-th place; one stored vector is shorter.
    const items = Array.from({ length: 200 }, (_, i) => ({
      id: `c${(i * 37) % 200}`,
      vector: [(i % 5) / 4, ((i * 3) % 7) / 6, i % 2, 0.5],
      metadata: { n: i },
    }));
    items.push({ id: "short", vector: [1, 1], metadata: { n: -1 } });
    await v.upsert("code", items);
    const q = [0.3, -0.2, 0.9, 0.1];
    const dot = (x: number[]) => q.reduce((s, qi, i) => s + qi * (x[i] ?? 0), 0);
    const all = items.map((it) => ({ id: it.id, similarity: dot(it.vector) })).sort((a, b) => b.similarity - a.similarity || a.id.localeCompare(b.id));
    for (const k of [1, 7, 40, 150, 201, 500]) {
      expect((await v.query("code", q, k)).map((m) => [m.id, m.similarity])).toEqual(all.slice(0, k).map((m) => [m.id, m.similarity]));
    }
    expect(await v.query("code", q, 0)).toEqual([]);
  });
});
