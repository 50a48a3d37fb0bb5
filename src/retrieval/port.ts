/** One search hit: a file range with its score and a short preview. */
export interface SearchHit {
  path: string;
  startLine: number;
  endLine: number;
  score: number;
  preview: string;
  /** Score from each source that found it, or what it matched (commit subjects), for the context node. */
  sources?: Record<string, number | string[]>;
}

/** A code search backend (lexical now; the hybrid retriever plugs in here). */
export interface CodeSearcher {
  search(query: string, k: number): Promise<SearchHit[]>;
}
