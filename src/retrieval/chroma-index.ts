import { createHash } from "node:crypto";
import { ChromaClient, type Collection, type EmbeddingFunction } from "chromadb";
import { errorMessage } from "../errors.js";
import type { Embedder } from "./embedders/port.js";
import { VectorStoreError } from "./errors.js";
import type { ChromaServer } from "./chroma-server.js";
import type { VectorIndex, VectorItem, VectorMatch, VectorMetadata, VectorSpace } from "./vector-index.js";

/** Options of {@link createChromaIndex}. */
export interface ChromaIndexOptions {
  server: ChromaServer;
  /** Our embedder: handed to Chroma so it never falls back to its own (which downloads a model). */
  embedder: Embedder;
  /** Distinguishes the collections of different workspaces on a shared server. */
  namespace: string;
  /** Per-request time limit for queries (default 5 s); writes get 12x that. */
  timeoutMs?: number;
}

const UPSERT_BATCH = 1000;

/**
 * Vectors in Chroma: one collection per space, named after the namespace and the embedder's id (a
 * different embedder gets fresh collections; vectors of different spaces never mix). We always send
 * our own embeddings; Chroma only stores and searches them (HNSW, cosine).
 */
export async function createChromaIndex(opts: ChromaIndexOptions): Promise<VectorIndex> {
  const url = new URL(opts.server.url);
  const client = new ChromaClient({ host: url.hostname, port: Number(url.port || 8000), ssl: url.protocol === "https:" });
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const writeTimeoutMs = timeoutMs * 12;
  const embeddingFunction: EmbeddingFunction = {
    name: "ledgerloop",
    generate: (texts) => opts.embedder.embedDocuments(texts),
    generateForQueries: async (texts) => Promise.all(texts.map((t) => opts.embedder.embedQuery(t))),
  };
  const tag = createHash("sha256").update(`${opts.namespace}\0${opts.embedder.id}\0${opts.embedder.dimensions}`).digest("hex").slice(0, 16);
  const names: Record<VectorSpace, string> = { code: `ledgerloop-${tag}-code`, events: `ledgerloop-${tag}-events` };
  const collections = new Map<VectorSpace, Collection>();
  const description = `Chroma at ${opts.server.url}`;

  const guard = async <T>(what: string, ms: number, fn: () => Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        fn(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new VectorStoreError("VECTOR_UNREACHABLE", `${description} did not answer ${what} within ${ms} ms`)), ms);
        }),
      ]);
    } catch (err) {
      if (err instanceof VectorStoreError) throw err;
      const msg = errorMessage(err);
      const unreachable = /fetch failed|ECONNREFUSED|ECONNRESET|socket|connect|network|terminated|other side closed/i.test(
        `${msg} ${errorMessage((err as { cause?: unknown }).cause ?? "")}`,
      );
      throw new VectorStoreError(unreachable ? "VECTOR_UNREACHABLE" : "VECTOR_FAILED", `${description}: ${what} failed: ${msg}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  };

  const collection = async (space: VectorSpace): Promise<Collection> => {
    const cached = collections.get(space);
    if (cached) return cached;
    const c = await guard(`opening collection ${names[space]}`, writeTimeoutMs, () =>
      client.getOrCreateCollection({
        name: names[space],
        embeddingFunction,
        configuration: { hnsw: { space: "cosine" } },
        metadata: { embedder: opts.embedder.id, dimensions: opts.embedder.dimensions, namespace: opts.namespace.slice(0, 200) },
      }),
    );
    collections.set(space, c);
    return c;
  };

  return {
    description,
    async upsert(space, items) {
      if (items.length === 0) return;
      const c = await collection(space);
      for (let i = 0; i < items.length; i += UPSERT_BATCH) {
        const batch = items.slice(i, i + UPSERT_BATCH);
        await guard(`storing ${batch.length} vectors`, writeTimeoutMs, () =>
          c.upsert({ ids: batch.map((b) => b.id), embeddings: batch.map((b) => b.vector), metadatas: batch.map((b) => b.metadata) }),
        );
      }
    },
    async deleteWhere(space, field, values) {
      if (values.length === 0) return;
      const c = await collection(space);
      for (let i = 0; i < values.length; i += UPSERT_BATCH) {
        const chunk = values.slice(i, i + UPSERT_BATCH);
        await guard(`deleting vectors`, writeTimeoutMs, () => c.delete({ where: { [field]: { $in: chunk } } as never }));
      }
    },
    async query(space, vector, k) {
      const c = await collection(space);
      const res = await guard("a query", timeoutMs, () => c.query({ queryEmbeddings: [vector], nResults: k, include: ["distances", "metadatas"] as never }));
      const ids = res.ids[0] ?? [];
      const distances = res.distances?.[0] ?? [];
      const metadatas = res.metadatas?.[0] ?? [];
      return ids.map(
        (id, i): VectorMatch => ({
          id,
          // Chroma's cosine distance is 1 - cosine similarity.
          similarity: 1 - (distances[i] ?? 1),
          metadata: (metadatas[i] ?? {}) as VectorMetadata,
        }),
      );
    },
    async count(space) {
      const c = await collection(space);
      return guard("counting", timeoutMs, () => c.count());
    },
    async clear(space) {
      collections.delete(space);
      await guard(`dropping ${names[space]}`, writeTimeoutMs, async () => {
        try {
          await client.deleteCollection({ name: names[space] });
        } catch (err) {
          if (!/not found|does not exist|could not be found/i.test(errorMessage(err))) throw err;
        }
      });
    },
    async close() {
      collections.clear();
      await opts.server.release();
    },
  };
}

/** Items for one batch: used by the retriever and the conformance suite alike. */
export type { VectorItem };
