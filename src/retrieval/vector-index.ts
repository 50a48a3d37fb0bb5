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

/** Metadata conditions a query's matches must all meet: fields equal to a value, numeric fields below a bound. */
export interface VectorFilter {
  equals?: Record<string, string | number>;
  below?: Record<string, number>;
}

/** True when `m` meets every condition of `f`. */
export function matchesFilter(m: VectorMetadata, f: VectorFilter | undefined): boolean {
  if (!f) return true;
  for (const [k, v] of Object.entries(f.equals ?? {})) if (m[k] !== v) return false;
  for (const [k, v] of Object.entries(f.below ?? {})) if (!(typeof m[k] === "number" && (m[k] as number) < v)) return false;
  return true;
}

/**
 * A store of unit vectors searched by cosine similarity, one collection per {@link VectorSpace}.
 *
 * Contract (checked by `test/retrieval/vector-index-conformance.ts` for every adapter):
 * - `upsert` replaces an item with the same id; `query` returns at most `k` matches, best first,
 *   among the items meeting `filter` only (so the k are not taken by items the caller would drop);
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
  query(space: VectorSpace, vector: number[], k: number, filter?: VectorFilter): Promise<VectorMatch[]>;
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
  // Vectors are kept as Float64Array: the same doubles as the number[] given, read without holes.
  type Stored = { id: string; vector: Float64Array; metadata: VectorMetadata };
  const spaces: Record<VectorSpace, Map<string, Stored>> = { code: new Map(), events: new Map() };
  return {
    description: "memory",
    async upsert(space, items) {
      for (const it of items) spaces[space].set(it.id, { id: it.id, vector: Float64Array.from(it.vector), metadata: { ...it.metadata } });
    },
    async deleteWhere(space, field, values) {
      const set = new Set(values);
      for (const [id, it] of spaces[space]) if (set.has(it.metadata[field] as string | number)) spaces[space].delete(id);
    },
    async query(space, vector, k, filter) {
      const items = [...spaces[space].values()].filter((it) => matchesFilter(it.metadata, filter));
      const dots = new Float64Array(items.length);
      for (let j = 0; j < items.length; j++) {
        const v = items[j]!.vector;
        // Summed in the same order as always (a missing component counts 0), so scores never change.
        const n = Math.min(vector.length, v.length);
        let dot = 0;
        for (let i = 0; i < n; i++) dot += vector[i]! * v[i]!;
        for (let i = n; i < vector.length; i++) dot += vector[i]! * 0;
        dots[j] = dot;
      }
      // Only the items at or above the k-th best similarity are sorted (by similarity, then id), not
      // all of them: the same k matches in the same order, without a string compare per item pair.
      let cut = -Infinity;
      if (k >= 1 && k < items.length && !dots.some(Number.isNaN)) cut = Float64Array.from(dots).sort()[items.length - k]!;
      const out: VectorMatch[] = [];
      for (let j = 0; j < items.length; j++) if (!(dots[j]! < cut)) out.push({ id: items[j]!.id, similarity: dots[j]!, metadata: items[j]!.metadata });
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
