import { createHash } from "node:crypto";
import type { Collection, EmbeddingFunction } from "chromadb";
import { errorMessage } from "../errors.js";
import { importOptional } from "../optional-packages.js";
import type { RepositoryIdentity } from "./collection-naming.js";
import type { Embedder } from "./embedders/port.js";
import { VectorStoreError } from "./errors.js";
import type { ChromaServer } from "./chroma-server.js";
import type { VectorFilter, VectorIndex, VectorItem, VectorMatch, VectorMetadata, VectorSpace } from "./vector-index.js";

/** Options of {@link createChromaIndex}. */
export interface ChromaIndexOptions {
  server: ChromaServer;
  /** Our embedder: handed to Chroma so it never falls back to its own (which downloads a model). */
  embedder: Embedder;
  /** Distinguishes the collections of different workspaces on a shared server. */
  namespace: string;
  /** Per-request time limit for queries (default 5 s); writes get 12x that. */
  timeoutMs?: number;
  /**
   * On a shared server: collections named `<prefix>_<embedder>_<space>` after the repository and
   * revision line (collection-naming.ts) instead of after the namespace, so every worker's clone
   * of the repository on that line uses the same ones.
   */
  shared?: { prefix: string; repository: RepositoryIdentity; line: string };
}

const UPSERT_BATCH = 1000;
/** Chroma's answer to a read of a collection whose first write is being saved. */
const FIRST_WRITE_SAVING = /Nothing found on disk|Error creating hnsw segment reader/i;
/** How long a read meeting another process's first write is asked again (it takes ~0.1-0.2 s). */
const FIRST_WRITE_RETRY_MS = 3_000;

/** A VectorIndex on Chroma, with the names of its collections (doctor, tests). */
export interface ChromaVectorIndex extends VectorIndex {
  readonly collections: Record<VectorSpace, string>;
}

/**
 * Vectors in Chroma: one collection per space, named after the namespace and the embedder's id (a
 * different embedder gets fresh collections; vectors of different spaces never mix). We always send
 * our own embeddings; Chroma only stores and searches them (HNSW, cosine).
 */
export async function createChromaIndex(opts: ChromaIndexOptions): Promise<ChromaVectorIndex> {
  const { ChromaClient } = await importOptional(["chromadb"], "the Chroma vector store", () => import("chromadb"));
  const url = new URL(opts.server.url);
  const client = new ChromaClient({ host: url.hostname, port: Number(url.port || 8000), ssl: url.protocol === "https:" });
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const writeTimeoutMs = timeoutMs * 12;
  const embeddingFunction: EmbeddingFunction = {
    name: "ledgerloop",
    generate: (texts) => opts.embedder.embedDocuments(texts),
    generateForQueries: async (texts) => Promise.all(texts.map((t) => opts.embedder.embedQuery(t))),
  };
  const hash = (text: string, n: number) => createHash("sha256").update(text).digest("hex").slice(0, n);
  let names: Record<VectorSpace, string>;
  if (opts.shared) {
    const model = hash(`${opts.embedder.id}\0${opts.embedder.dimensions}`, 8);
    names = { code: `${opts.shared.prefix}_${model}_code`, events: `${opts.shared.prefix}_${model}_events` };
  } else {
    const tag = hash(`${opts.namespace}\0${opts.embedder.id}\0${opts.embedder.dimensions}`, 16);
    names = { code: `ledgerloop-${tag}-code`, events: `ledgerloop-${tag}-events` };
  }
  const collections = new Map<VectorSpace, Collection>();
  // The shared collections are part of the description: index.db keys its record of which files
  // have vectors by it, so moving to another line (or repository) re-embeds into the new collections.
  const description = `Chroma at ${opts.server.url}${opts.shared ? ` (collections ${opts.shared.prefix}_*)` : ""}`;

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
        metadata: {
          embedder: opts.embedder.id,
          dimensions: opts.embedder.dimensions,
          namespace: opts.namespace.slice(0, 200),
          ...(opts.shared
            ? { repository: `${opts.shared.repository.kind}:${opts.shared.repository.value}`.slice(0, 200), line: opts.shared.line.slice(0, 200) }
            : {}),
        },
      }),
    );
    collections.set(space, c);
    return c;
  };

  // Chroma fails a read of a collection while its first write is being saved ("Error creating hnsw
  // segment reader: Nothing found on disk"): event vectors are stored in the background, beside
  // searches. So until a space is known to have been written (a count above 0, or a write of ours
  // done), each read waits for our writes to it in flight.
  const written = new Set<VectorSpace>();
  const inFlight = new Map<VectorSpace, Promise<unknown>>();
  const writing = <T>(space: VectorSpace, write: Promise<T>): Promise<T> => {
    if (!written.has(space)) {
      const done = write.then(
        () => written.add(space),
        () => {},
      );
      inFlight.set(space, Promise.all([inFlight.get(space), done]));
    }
    return write;
  };
  const reading = async (space: VectorSpace): Promise<void> => {
    if (!written.has(space)) await inFlight.get(space);
  };
  // Another process's first write into the collection (a second command on the workspace, another
  // worker on a shared server) is not in `inFlight`: a read that meets it is asked again, briefly.
  const read = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const until = Date.now() + FIRST_WRITE_RETRY_MS;
    for (let pause = 50; ; pause = Math.min(pause * 2, 400)) {
      try {
        return await guard(what, timeoutMs, fn);
      } catch (err) {
        if (!(err instanceof VectorStoreError) || err.code !== "VECTOR_FAILED" || !FIRST_WRITE_SAVING.test(err.message) || Date.now() + pause > until)
          throw err;
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  };

  return {
    description,
    collections: names,
    upsert(space, items) {
      if (items.length === 0) return Promise.resolve();
      // Registered before any await: a read asked right after this call waits for it.
      return writing(
        space,
        (async () => {
          const c = await collection(space);
          for (let i = 0; i < items.length; i += UPSERT_BATCH) {
            const batch = items.slice(i, i + UPSERT_BATCH);
            await guard(`storing ${batch.length} vectors`, writeTimeoutMs, () =>
              c.upsert({ ids: batch.map((b) => b.id), embeddings: batch.map((b) => b.vector), metadatas: batch.map((b) => b.metadata) }),
            );
          }
        })(),
      );
    },
    async deleteWhere(space, field, values) {
      if (values.length === 0) return;
      const c = await collection(space);
      for (let i = 0; i < values.length; i += UPSERT_BATCH) {
        const chunk = values.slice(i, i + UPSERT_BATCH);
        await guard(`deleting vectors`, writeTimeoutMs, () => c.delete({ where: { [field]: { $in: chunk } } as never }));
      }
    },
    async query(space, vector, k, filter) {
      const c = await collection(space);
      await reading(space);
      const where = chromaWhere(filter);
      const res = await read("a query", () =>
        c.query({ queryEmbeddings: [vector], nResults: k, include: ["distances", "metadatas"] as never, ...(where ? { where: where as never } : {}) }),
      );
      const ids = res.ids[0] ?? [];
      const distances = res.distances?.[0] ?? [];
      const metadatas = res.metadatas?.[0] ?? [];
      return ids.map((id, i): VectorMatch => ({
        id,
        // Chroma's cosine distance is 1 - cosine similarity.
        similarity: 1 - (distances[i] ?? 1),
        metadata: (metadatas[i] ?? {}) as VectorMetadata,
      }));
    },
    async count(space) {
      const c = await collection(space);
      await reading(space);
      const n = await read("counting", () => c.count());
      if (n > 0) written.add(space);
      return n;
    },
    async get(space, ids) {
      const out = new Map<string, VectorMetadata>();
      if (ids.length === 0) return out;
      const c = await collection(space);
      await reading(space);
      for (let i = 0; i < ids.length; i += UPSERT_BATCH) {
        const chunk = ids.slice(i, i + UPSERT_BATCH);
        const res = await read("reading vectors' metadata", () => c.get({ ids: chunk, include: ["metadatas"] as never }));
        res.ids.forEach((id, j) => out.set(id, (res.metadatas?.[j] ?? {}) as VectorMetadata));
      }
      return out;
    },
    async clear(space) {
      collections.delete(space);
      written.delete(space);
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

/** A VectorFilter as a Chroma where clause (Chroma wants `$and` only around two or more conditions). */
function chromaWhere(f: VectorFilter | undefined): Record<string, unknown> | null {
  const conds = [
    ...Object.entries(f?.equals ?? {}).map(([k, v]) => ({ [k]: { $eq: v } })),
    ...Object.entries(f?.below ?? {}).map(([k, v]) => ({ [k]: { $lt: v } })),
  ];
  return conds.length === 0 ? null : conds.length === 1 ? conds[0]! : { $and: conds };
}
