/**
 * Turns texts into fixed-length vectors whose cosine similarity says how related two texts are.
 *
 * Contract (checked by `test/retrieval/embedders/conformance.ts`, which every adapter runs):
 * - every vector has exactly {@link Embedder.dimensions} finite numbers and unit L2 norm (or is all
 *   zeros for a text with nothing to embed), so cosine similarity is a dot product;
 * - the same text gives the same vector, in a batch or alone, in any batch order;
 * - `embedDocuments` keeps the order of its input and accepts an empty list;
 * - any string is accepted (empty, huge, binary-looking, any Unicode): an adapter truncates or cleans
 *   what its model cannot take instead of failing;
 * - vectors from two embedders with different {@link Embedder.id}s are never compared: the vector index
 *   keys its collections by the id.
 */
export interface Embedder {
  /** Identity of the vector space, e.g. `hashed-v1-384` or `xenova:Xenova/all-MiniLM-L6-v2`. */
  readonly id: string;
  /** Length of every vector. */
  readonly dimensions: number;
  /** Embeds documents (code chunks, ledger events), one vector per text, in order. */
  embedDocuments(texts: string[]): Promise<number[][]>;
  /** Embeds a search query; models trained with query/document prefixes apply theirs here. */
  embedQuery(text: string): Promise<number[]>;
  /** Releases what the adapter holds (model sessions); the embedder is unusable afterwards. */
  close?(): Promise<void>;
}
