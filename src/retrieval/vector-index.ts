/** Which collection of a retriever's vectors: code chunks or ledger events. */
export type VectorSpace = "code" | "events";

/** Metadata stored beside a vector (flat, as Chroma requires). */
export type VectorMetadata = Record<string, string | number | boolean>;

export interface VectorItem {
  id: string;
  vector: number[];
  metadata: VectorMetadata;
}

export interface VectorMatch {
  id: string;
  /** Cosine similarity, 1 = same direction. */
  similarity: number;
  metadata: VectorMetadata;
}

/**
 * A store of unit vectors searched by cosine similarity, one collection per {@link VectorSpace}.
 *
 * Contract (checked by `test/retrieval/vector-index-conformance.ts` for every adapter):
 * - `upsert` replaces an item with the same id; `query` returns at most `k` matches, best first;
 * - `deleteWhere(space, field, values)` removes every item whose metadata `field` is one of `values`;
 * - the two spaces never see each other's items; `clear` empties one space;
 * - failures reject with a `VectorStoreError` (`VECTOR_UNREACHABLE` when the store cannot be reached),
 *   so the caller can fall back to lexical search.
 */
export interface VectorIndex {
  /** Where the vectors live, for messages (`chroma at http://127.0.0.1:PORT`, `memory`). */
  readonly description: string;
  upsert(space: VectorSpace, items: VectorItem[]): Promise<void>;
  deleteWhere(space: VectorSpace, field: string, values: Array<string | number>): Promise<void>;
  query(space: VectorSpace, vector: number[], k: number): Promise<VectorMatch[]>;
  count(space: VectorSpace): Promise<number>;
  clear(space: VectorSpace): Promise<void>;
  /**
   * The metadata of those of `ids` the space holds (absent ids are left out). Optional: with it the
   * indexer skips embedding files whose vectors another worker already stored in a shared store.
   */
  get?(space: VectorSpace, ids: string[]): Promise<Map<string, VectorMetadata>>;
  /** Releases connections (and an embedded server this process started, when it is the last user). */
  close(): Promise<void>;
}

/** An in-process vector index (exact cosine search): for tests, and as the yardstick Chroma is measured against. */
export function createMemoryVectorIndex(): VectorIndex {
  const spaces: Record<VectorSpace, Map<string, VectorItem>> = { code: new Map(), events: new Map() };
  return {
    description: "memory",
    async upsert(space, items) {
      for (const it of items) spaces[space].set(it.id, { id: it.id, vector: [...it.vector], metadata: { ...it.metadata } });
    },
    async deleteWhere(space, field, values) {
      const set = new Set(values);
      for (const [id, it] of spaces[space]) if (set.has(it.metadata[field] as string | number)) spaces[space].delete(id);
    },
    async query(space, vector, k) {
      const out: VectorMatch[] = [];
      for (const it of spaces[space].values()) {
        let dot = 0;
        for (let i = 0; i < vector.length; i++) dot += vector[i]! * (it.vector[i] ?? 0);
        out.push({ id: it.id, similarity: dot, metadata: it.metadata });
      }
      out.sort((a, b) => b.similarity - a.similarity || a.id.localeCompare(b.id));
      return out.slice(0, k);
    },
    async count(space) {
      return spaces[space].size;
    },
    async clear(space) {
      spaces[space].clear();
    },
    async get(space, ids) {
      const out = new Map<string, VectorMetadata>();
      for (const id of ids) {
        const it = spaces[space].get(id);
        if (it) out.set(id, { ...it.metadata });
      }
      return out;
    },
    async close() {},
  };
}
