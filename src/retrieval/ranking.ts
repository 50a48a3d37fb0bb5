// The ranking: fuses what each source found into ranked file ranges (code) or events, keeping each
// source's score as provenance. Pure: no files, no index, no clock — the caller gathers the sources'
// hits and hands over a lookup of each file's stored chunks; unit-tested in test/retrieval/ranking.test.ts.
import { reciprocalRankFusion, RRF_K, type Fused, type RankedList, type SourceName, type SourceScores } from "./fusion.js";
import type { HitSources } from "./retriever-types.js";

/** A stored chunk of a file: its line range and the symbols declared in it. */
export interface ChunkRange {
  path: string;
  startLine: number;
  endLine: number;
  symbols: string[];
}

/** What the code sources found for one query, each list best first. */
export interface CodeSourceHits {
  /** Chunks by BM25 over their words, symbols and path. */
  bm25: Array<ChunkRange & { score: number }>;
  /** Files by BM25 over their path. */
  paths: Array<{ path: string; score: number }>;
  /** Symbols by their name: the chunk holding `startLine` stands for each. */
  symbols: Array<{ path: string; startLine: number; score: number }>;
  /** Chunk vectors by cosine similarity, with the range they were embedded for. */
  vectors: Array<{ path: string; startLine: number; endLine: number; score: number }>;
  /** Files voted for by the commits that match, with those commits' subjects. */
  history: Array<{ path: string; score: number; commits: string[] }>;
}

export interface RankCodeInput extends CodeSourceHits {
  /** Results wanted. */
  k: number;
  /** The stored chunks of a file, in line order (asked at most once per file and call). */
  chunksOf: (path: string) => readonly ChunkRange[];
  /** Weight of the history list in the file fusion. */
  historyWeight: number;
  /** Weights of the other sources in the file fusion (default 1 each). */
  weights?: Partial<Record<Exclude<SourceName, "history">, number>>;
  /**
   * History as a re-ranker: when set, history votes count only for files among this many best files
   * of the other sources (it reorders what they found and adds no candidates of its own).
   */
  historyRerankTop?: number;
  /**
   * How much a history vote's own strength counts: its RRF share is multiplied by
   * (score / best history score)^this, so a weak message match moves little (0: rank only).
   */
  historyScoreExponent?: number;
  /** The files that changed together with a file, each with the share of its commits they shared (the history source's). */
  cochange?: (path: string) => ReadonlyArray<{ path: string; share: number }>;
  /** How many of the best fused files lend to their co-change neighbours (0 or unset: none). */
  cochangeTop?: number;
  /** Part of a lender's fused score a neighbour gets, times their shared-commit share. */
  cochangeShare?: number;
}

/** A ranked file range: the fused score (scaled by RRF_K, 4 decimals), why it was found, its symbols. */
export interface RankedRange {
  path: string;
  startLine: number;
  endLine: number;
  score: number;
  sources: HitSources;
  symbols: string[];
}

/** At most this many ranges of one file, so that one big file cannot crowd out the rest. */
export const MAX_RANGES_PER_FILE = 3;
/** Factor on a test file's fused score (measured on the localization sets: 0.8 lifts MRR by ~0.05 on both). */
export const TEST_DAMPING = 0.8;

/** Test files by the usual conventions (directories and file names, JS/TS and Python). */
export function isTestPath(rel: string): boolean {
  return (
    /(^|\/)(tests?|__tests__|specs?|__mocks__)\//i.test(rel) ||
    /\.(test|spec)\.[cm]?[jt]sx?$/i.test(rel) ||
    /(^|\/)(test_[^/]*\.py|[^/]*_test\.py|conftest\.py)$/.test(rel)
  );
}

/** The key of a chunk in the fusion (and its id in the vector store). */
export function chunkKey(rel: string, start: number, end: number): string {
  return `${rel}#${start}-${end}`;
}

/**
 * Ranks code ranges. Files are ranked first (each chunk source by the file's best chunk, plus path
 * and history matches), so that evidence from different parts of a file meets; chunks then take
 * their file's score, scaled by how they compare with the file's best chunk. Ties break on the key
 * (path, then range), so equal inputs always give the same order.
 */
export function rankCode(input: RankCodeInput): RankedRange[] {
  const chunkRows = new Map<string, readonly ChunkRange[]>();
  const rowsOf = (p: string): readonly ChunkRange[] => {
    let rows = chunkRows.get(p);
    if (!rows) {
      rows = input.chunksOf(p);
      chunkRows.set(p, rows);
    }
    return rows;
  };
  const historyOf = new Map<string, string[]>(input.history.map((h) => [h.path, h.commits]));

  // Every chunk any source found, by key.
  const chunks = new Map<string, ChunkRange>();
  const chunkOf = (p: string, line: number): ChunkRange | undefined => {
    const rows = rowsOf(p);
    return rows.find((c) => c.startLine <= line && line <= c.endLine) ?? rows.find((c) => c.startLine >= line);
  };
  const bm25List = input.bm25.map((c) => {
    const key = chunkKey(c.path, c.startLine, c.endLine);
    chunks.set(key, c);
    return { key, score: c.score };
  });
  const symbolList: Array<{ key: string; score: number }> = [];
  for (const s of input.symbols) {
    const c = chunkOf(s.path, s.startLine);
    if (!c) continue;
    const key = chunkKey(c.path, c.startLine, c.endLine);
    chunks.set(key, c);
    symbolList.push({ key, score: s.score });
  }
  const vectorList: Array<{ key: string; score: number }> = [];
  for (const m of input.vectors) {
    const c = chunkOf(m.path, m.startLine);
    // A vector of a range that no longer exists (stale after an edit) is ignored.
    if (!c || c.startLine !== m.startLine || c.endLine !== m.endLine) continue;
    const key = chunkKey(c.path, c.startLine, c.endLine);
    chunks.set(key, c);
    vectorList.push({ key, score: m.score });
  }

  const fileOfKey = (key: string) => key.slice(0, key.lastIndexOf("#"));
  const perFile = (list: Array<{ key: string; score: number }>) => list.map((x) => ({ key: fileOfKey(x.key), score: x.score }));
  const w = input.weights ?? {};
  const fileFused = fuseFiles(
    [
      { source: "bm25", items: perFile(bm25List), weight: w.bm25 ?? 1 },
      { source: "symbol", items: perFile(symbolList), weight: w.symbol ?? 1 },
      { source: "vector", items: perFile(vectorList), weight: w.vector ?? 1 },
      { source: "path", items: input.paths.map((p) => ({ key: p.path, score: p.score })), weight: w.path ?? 1 },
    ],
    input.history,
    input.historyWeight,
    input.historyRerankTop,
    input.historyScoreExponent ?? 0,
  );
  const chunkFused = reciprocalRankFusion([
    { source: "bm25", items: bm25List },
    { source: "symbol", items: symbolList },
    { source: "vector", items: vectorList },
  ]);
  // A file lent to only by co-change says which strong hit it changes with.
  const lentBy =
    input.cochange && input.cochangeTop && input.cochangeShare
      ? lendByCoChange(fileFused, input.cochange, input.cochangeTop, input.cochangeShare)
      : new Map<string, string[]>();
  for (const [p, lenders] of lentBy)
    if (!historyOf.has(p))
      historyOf.set(
        p,
        lenders.slice(0, 3).map((l) => `changes with ${l}`),
      );
  const bestChunkScore = new Map<string, number>();
  for (const c of chunkFused) {
    const f = fileOfKey(c.key);
    if (!bestChunkScore.has(f)) bestChunkScore.set(f, c.score);
  }
  // Tests repeat the vocabulary of the code they test; for "where is X" the code itself should win
  // a tie, so a test file's score is damped (it still shows up when it is the better match).
  for (const f of fileFused) if (isTestPath(f.key)) f.score *= TEST_DAMPING;
  fileFused.sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : 1));
  const fileScore = new Map(fileFused.map((f) => [f.key, f]));
  const scored: Array<{ key: string; score: number; sources: HitSources }> = [];
  for (const c of chunkFused) {
    const f = fileScore.get(fileOfKey(c.key))!;
    const rel = c.score / (bestChunkScore.get(f.key) ?? c.score);
    const sources: HitSources = { ...withoutHistory(c.sources) };
    if (f.sources.path !== undefined) sources.path = f.sources.path;
    const commits = historyOf.get(f.key);
    if (commits) sources.history = commits;
    scored.push({ key: c.key, score: f.score * rel, sources });
  }
  // Files found only by their path or their history: their first chunk stands for them.
  for (const f of fileFused) {
    if (bestChunkScore.has(f.key)) continue;
    const first = rowsOf(f.key)[0];
    if (!first) continue;
    const key = chunkKey(first.path, first.startLine, first.endLine);
    chunks.set(key, first);
    const sources: HitSources = withoutHistory(f.sources);
    const commits = historyOf.get(f.key);
    if (commits) sources.history = commits;
    scored.push({ key, score: f.score, sources });
  }
  scored.sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : 1));

  const perFileCount = new Map<string, number>();
  const out: RankedRange[] = [];
  for (const s of scored) {
    if (out.length >= input.k) break;
    const c = chunks.get(s.key)!;
    const n = perFileCount.get(c.path) ?? 0;
    if (n >= MAX_RANGES_PER_FILE) continue;
    perFileCount.set(c.path, n + 1);
    out.push({
      path: c.path,
      startLine: c.startLine,
      endLine: c.endLine,
      score: round(s.score * RRF_K, 4),
      sources: roundSources(s.sources),
      symbols: c.symbols,
    });
  }
  return out;
}

/**
 * Fuses the file lists, then adds history: the i-th history file (1-based, among those allowed)
 * gets weight × (score / best)^exponent / (RRF_K + i). With `rerankTop`, only files among the other
 * sources' best `rerankTop` may receive history votes.
 */
export function fuseFiles(
  lists: RankedList[],
  history: ReadonlyArray<{ path: string; score: number }>,
  weight: number,
  rerankTop: number | undefined,
  exponent: number,
): Fused[] {
  const fused = reciprocalRankFusion(lists);
  if (history.length === 0 || weight === 0) return fused;
  const byKey = new Map(fused.map((f) => [f.key, f]));
  const allowed = rerankTop === undefined ? null : new Set(fused.slice(0, rerankTop).map((f) => f.key));
  const kept = allowed ? history.filter((h) => allowed.has(h.path)) : history;
  const best = kept.reduce((m, h) => Math.max(m, h.score), 0);
  const seen = new Set<string>();
  let rank = 0;
  for (const h of kept) {
    if (seen.has(h.path)) continue;
    seen.add(h.path);
    rank++;
    const strength = exponent === 0 || best <= 0 ? 1 : Math.pow(Math.max(0, h.score) / best, exponent);
    let f = byKey.get(h.path);
    if (!f) {
      f = { key: h.path, score: 0, sources: {} };
      byKey.set(h.path, f);
      fused.push(f);
    }
    f.score += (weight * strength) / (RRF_K + rank);
    f.sources.history = h.score;
  }
  return fused.sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * Co-change lending: each of the `top` best files gives `share` × its score × the neighbour's
 * shared-commit share to each co-change neighbour (added as a candidate when new), from the scores
 * before any lending, so the order of lenders does not matter. Re-sorts `fused`; returns the
 * lenders of each file that received a share.
 */
export function lendByCoChange(
  fused: Fused[],
  neighbours: (path: string) => ReadonlyArray<{ path: string; share: number }>,
  top: number,
  share: number,
): Map<string, string[]> {
  const byKey = new Map(fused.map((f) => [f.key, f]));
  const lent = new Map<string, number>();
  const lenders = new Map<string, string[]>();
  for (const f of fused.slice(0, top)) {
    for (const n of neighbours(f.key)) {
      if (n.path === f.key) continue;
      lent.set(n.path, (lent.get(n.path) ?? 0) + share * f.score * Math.min(1, Math.max(0, n.share)));
      lenders.set(n.path, [...(lenders.get(n.path) ?? []), f.key]);
    }
  }
  for (const [key, add] of lent) {
    let f = byKey.get(key);
    if (!f) {
      f = { key, score: 0, sources: {} };
      byKey.set(key, f);
      fused.push(f);
    }
    f.score += add;
  }
  fused.sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return lenders;
}

/** One event a source found: its seq orders equal scores. */
export interface EventSourceHit {
  eventId: string;
  threadId: string;
  seq: number;
  score: number;
}

/** What the event sources found for one query, each list best first. */
export interface EventSourceHits {
  bm25: EventSourceHit[];
  vectors: EventSourceHit[];
}

/** A ranked event: its fused score (scaled by RRF_K, 4 decimals) and each source's score. */
export interface RankedEvent {
  eventId: string;
  score: number;
  sources: SourceScores;
}

/**
 * Ranks events: the candidates `keep` accepts (their thread, their branch), fused by RRF, best `k`.
 * Equal scores go by seq (then id), within each source and after fusion: an order fixed by the
 * events themselves, so a resumed run, or another run of the same task, recalls them in the same
 * order (the ids are random, and a store returns equal scores in any order).
 */
export function rankEvents(hits: EventSourceHits, k: number, keep: (eventId: string, threadId: string) => boolean): RankedEvent[] {
  const seqOf = new Map<string, number>();
  const byScore = (a: EventSourceHit, b: EventSourceHit) => b.score - a.score || a.seq - b.seq || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);
  const list = (xs: EventSourceHit[]) =>
    xs
      .filter((e) => keep(e.eventId, e.threadId))
      .sort(byScore)
      .map((e) => (seqOf.set(e.eventId, e.seq), { key: e.eventId, score: e.score }));
  const fused: Fused[] = reciprocalRankFusion([
    { source: "bm25", items: list([...hits.bm25]) },
    { source: "vector", items: list([...hits.vectors]) },
  ]);
  fused.sort((a, b) => b.score - a.score || seqOf.get(a.key)! - seqOf.get(b.key)! || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return fused.slice(0, k).map((f) => ({ eventId: f.key, score: round(f.score * RRF_K, 4), sources: roundSources(f.sources) }));
}

/** Source scores without the history score (a hit carries the commit subjects instead). */
function withoutHistory(s: SourceScores): HitSources {
  const { history: _h, ...rest } = s;
  return rest;
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function roundSources<T extends Record<string, number | string[] | undefined>>(s: T): T {
  const out: Record<string, unknown> = {};
  // Significant digits, not decimals: BM25 of a term found in most documents is tiny but not zero.
  for (const [key, v] of Object.entries(s)) out[key] = typeof v === "number" ? Number(v.toPrecision(4)) : v;
  return out as T;
}
