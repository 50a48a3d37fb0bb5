// The retriever's embedder behind one indirection, so that an embedder which could not start (an
// endpoint down or answering garbage when the retriever opened) can be put in place later without
// the indexer, the event sync and the search, which all hold this object, having to know.
import type { Embedder } from "./port.js";

/** A cache an embedder may keep its vectors in (the openai: one does). */
type CacheCarrier = Embedder & { attachCache?: (cache: never) => void };

export class EmbedderSlot implements Embedder {
  private cache: unknown = undefined;

  constructor(private inner: Embedder) {}

  get id(): string {
    return this.inner.id;
  }

  get dimensions(): number {
    return this.inner.dimensions;
  }

  embedDocuments(texts: string[]): Promise<number[][]> {
    return this.inner.embedDocuments(texts);
  }

  embedQuery(text: string): Promise<number[]> {
    return this.inner.embedQuery(text);
  }

  /** Hands the vector cache to the embedder now in the slot, and to any put there later. */
  attachCache(cache: unknown): void {
    this.cache = cache;
    (this.inner as CacheCarrier).attachCache?.(cache as never);
  }

  /** Puts `next` in the slot (with the cache) and closes the one it replaces. */
  async replace(next: Embedder): Promise<void> {
    const old = this.inner;
    this.inner = next;
    if (this.cache !== undefined) (next as CacheCarrier).attachCache?.(this.cache as never);
    await old.close?.().catch(() => {});
  }

  async close(): Promise<void> {
    await this.inner.close?.();
  }
}
