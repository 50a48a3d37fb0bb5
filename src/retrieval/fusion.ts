/** The sources whose rankings are fused. */
export type SourceName = "bm25" | "path" | "symbol" | "vector" | "history";

/** Each source's own score for a result (BM25 score, path/symbol BM25 score, cosine similarity). */
export type SourceScores = Partial<Record<SourceName, number>>;

/** One ranked list from one source; `key` identifies the result (e.g. `path#start-end`). */
export interface RankedList {
  source: SourceName;
  items: Array<{ key: string; score: number }>;
  /** Weight of this source in the fusion (default 1). */
  weight?: number;
}

/** A fused result: its RRF score and the source scores that produced it. */
export interface Fused {
  key: string;
  score: number;
  sources: SourceScores;
}

/** The usual RRF constant: ranks past the first few differ little, so no single list dominates. */
export const RRF_K = 60;

/**
 * Reciprocal-rank fusion: score(d) = Σ weight_s / (k + rank_s(d)) over the lists that rank d (rank
 * 1-based, first occurrence). Source scores are kept for provenance (the best one when a list
 * repeats a key). Ties break on key, so equal inputs give the same order.
 */
export function reciprocalRankFusion(lists: RankedList[], k = RRF_K): Fused[] {
  const out = new Map<string, Fused>();
  for (const list of lists) {
    const weight = list.weight ?? 1;
    const seen = new Set<string>();
    let rank = 0;
    for (const item of list.items) {
      if (seen.has(item.key)) {
        const f = out.get(item.key)!;
        f.sources[list.source] = Math.max(f.sources[list.source] ?? -Infinity, item.score);
        continue;
      }
      seen.add(item.key);
      rank++;
      let f = out.get(item.key);
      if (!f) {
        f = { key: item.key, score: 0, sources: {} };
        out.set(item.key, f);
      }
      f.score += weight / (k + rank);
      f.sources[list.source] = item.score;
    }
  }
  return [...out.values()].sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
