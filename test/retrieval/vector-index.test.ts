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
