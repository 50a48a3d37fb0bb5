// One search: embeds the query (once, remembered for the next searches of the same text), asks each
// source for candidates, lets the pure ranking fuse them, and adds previews (each file read once).
import { errorMessage } from "../errors.js";
import { confined } from "../workspace/confined.js";
import type { Ledger } from "../ledger/port.js";
import type { Embedder } from "./embedders/port.js";
import { redactKeepingLines } from "./file-prep.js";
import { HISTORY_TUNING, type HistorySource } from "./history.js";
import type { NgramIndex } from "./ngram-index.js";
import { rankCode, rankEvents, type ChunkRange, type RankCodeInput } from "./ranking.js";
import type { CodeHit, EventHit, RetrievalHit, SearchOptions, SearchTimings } from "./retriever-types.js";
import type { SourceName } from "./fusion.js";
import { queryTerms } from "./tokens.js";
import type { VectorConnection } from "./vector-connection.js";

/** Candidates asked of each source before fusion. */
const CANDIDATES = 150;
/** Query vectors remembered: a context build searches code and events with the same query. */
const QUERY_VECTORS = 16;
/** Benchmark hook: sees each code ranking's input (the tuning harness replays them offline). Unset in use. */
export const rankInputTap: { fn?: (query: string, input: RankCodeInput) => void } = {};

const ALL_SOURCES: SourceName[] = ["bm25", "path", "symbol", "vector", "history"];

/**
 * Whether a search can use vectors: a code search fusing them, or an event search other than one
 * with a cut-off at the start (a run's first prompt), which searches no event vector.
 */
export function wantsVectors(opts: SearchOptions): boolean {
  const scope = opts.scope ?? "code";
  const code = scope !== "events" && (!opts.sources || opts.sources.includes("vector"));
  const events = scope !== "code" && !(opts.vectorsBefore !== undefined && opts.vectorsBefore <= 0);
  return code || events;
}

export interface SearchEngineOptions {
  workspace: string;
  index: () => NgramIndex;
  vectors: VectorConnection;
  embedder: Embedder;
  history: HistorySource | null;
  ledger?: Ledger;
  /** Default thread of event searches. */
  threadId?: string;
  redact?: (text: string) => string;
  warnOnce: (key: string, message: string) => void;
}

/** Runs searches against an index that is up to date (the facade makes sure of that). */
export class SearchEngine {
  /** Query vectors by query text, oldest first; a failed embedding is not kept. */
  private readonly queryVectors = new Map<string, Promise<number[]>>();

  constructor(private readonly o: SearchEngineOptions) {}

  /** Searches code and/or events (`eventVectors` false: the events' vector half is left out); returns the hits and where the time went. */
  async search(query: string, opts: SearchOptions, eventVectors = true): Promise<{ hits: RetrievalHit[]; timings: SearchTimings }> {
    const k = Math.max(1, opts.k ?? 10);
    const scope = opts.scope ?? "code";
    const t0 = performance.now();
    const timings: SearchTimings = { totalMs: 0, ngramMs: 0, embedMs: 0, vectorMs: 0 };
    let qv: number[] | null = null;
    const sources = new Set(opts.sources ?? ALL_SOURCES);
    if (this.o.vectors.ok && wantsVectors(opts) && (scope !== "events" || eventVectors)) {
      const te = performance.now();
      try {
        qv = await this.embedQuery(query);
      } catch (err) {
        this.o.warnOnce(`embed:${errorMessage(err)}`, `embedding the query failed (${errorMessage(err)}); searching without vectors`);
      }
      timings.embedMs = performance.now() - te;
    }
    const code = scope === "events" ? [] : await this.searchCode(query, k, qv, timings, sources);
    const events = scope === "code" ? [] : await this.searchEvents(query, k, eventVectors ? qv : null, timings, opts);
    timings.totalMs = performance.now() - t0;
    const hits = scope === "code" ? code : scope === "events" ? events : [...code, ...events].sort((a, b) => b.score - a.score).slice(0, k);
    return { hits, timings };
  }

  /** The query's vector: embedded once, then reused while it is among the last QUERY_VECTORS queries. */
  private embedQuery(query: string): Promise<number[]> {
    let v = this.queryVectors.get(query);
    if (v) {
      // Most recently used last.
      this.queryVectors.delete(query);
      this.queryVectors.set(query, v);
      return v;
    }
    v = this.o.embedder.embedQuery(this.o.redact ? this.o.redact(query) : query);
    v.catch(() => this.queryVectors.delete(query));
    if (this.queryVectors.size >= QUERY_VECTORS) this.queryVectors.delete(this.queryVectors.keys().next().value as string);
    this.queryVectors.set(query, v);
    return v;
  }

  private async searchCode(query: string, k: number, qv: number[] | null, timings: SearchTimings, use: Set<SourceName>): Promise<CodeHit[]> {
    const ngram = this.o.index();
    const terms = queryTerms(query);
    // The vector query goes out first and is awaited after the n-gram side: a vector server (Chroma)
    // answers while SQLite runs here, instead of one after the other. The yield lets the request
    // leave before the synchronous n-gram work; with vectors off nothing is asked or awaited.
    const tq = performance.now();
    const vecPending = qv && use.has("vector") ? this.o.vectors.use((v) => v.query("code", qv, CANDIDATES)) : null;
    if (vecPending) await new Promise<void>((res) => setImmediate(res));
    timings.vectorMs += performance.now() - tq;
    const tn = performance.now();
    const bm25 = use.has("bm25") ? ngram.searchChunks(terms, CANDIDATES) : [];
    const paths = use.has("path") ? ngram.searchPaths(terms, CANDIDATES) : [];
    const symbols = use.has("symbol") ? ngram.searchSymbols(terms, CANDIDATES) : [];
    const th = performance.now();
    const history = this.o.history && use.has("history") ? this.o.history.search(query, CANDIDATES) : [];
    timings.historyMs = performance.now() - th;
    timings.ngramMs += performance.now() - tn;
    const tv = performance.now();
    const vec = vecPending ? ((await vecPending) ?? []) : [];
    // What the vector side cost beyond the n-gram side it overlapped with.
    timings.vectorMs += performance.now() - tv;
    const tf = performance.now();
    const vectors = vec.map((m) => ({
      path: String(m.metadata.path ?? ""),
      startLine: Number(m.metadata.start),
      endLine: Number(m.metadata.end),
      score: m.similarity,
    }));
    // The ranking asks for the chunks of the files its symbol, vector, path and history hits name
    // (a chunk hit carries its own range): read them in one statement up front. Others it asks for
    // (co-change neighbours, files of chunk hits) are read one by one.
    const candidates = new Set<string>();
    for (const list of [paths, symbols, vectors, history]) for (const h of list) candidates.add(h.path);
    const chunkRows: Map<string, readonly ChunkRange[]> = ngram.chunksOfMany(candidates);
    const input: RankCodeInput = {
      k,
      bm25,
      paths,
      symbols,
      vectors,
      history,
      chunksOf: (p) => {
        let rows = chunkRows.get(p);
        if (!rows) chunkRows.set(p, (rows = candidates.has(p) ? [] : ngram.chunksOf(p)));
        return rows;
      },
      historyWeight: HISTORY_TUNING.weight,
      ...(this.o.history && use.has("history")
        ? {
            // With history in the fusion the other lists are re-weighted; without it (n-gram only,
            // hybrid without history) the fusion is unchanged.
            weights: HISTORY_TUNING.fusionWeights,
            historyScoreExponent: HISTORY_TUNING.scoreExponent,
            cochange: (p: string) => this.o.history!.neighbours(p),
            cochangeTop: HISTORY_TUNING.fusedCochangeTop,
            cochangeShare: HISTORY_TUNING.fusedCochangeShare,
          }
        : {}),
    };
    rankInputTap.fn?.(query, input);
    const ranked = rankCode(input);
    // Each file is read (and redacted) once, however many of its ranges are shown.
    const files = new Map<string, string[] | null>();
    const termTexts = terms.map((t) => t.text);
    const hits: CodeHit[] = ranked.map((r) => ({ kind: "code", ...r, preview: this.preview(files, r.path, r.startLine, r.endLine, termTexts) }));
    timings.ngramMs += performance.now() - tf;
    return hits;
  }

  private preview(files: Map<string, string[] | null>, rel: string, start: number, end: number, terms: string[]): string {
    let all = files.get(rel);
    if (all === undefined) {
      try {
        all = redactKeepingLines(confined(this.o.workspace).readFile(rel).toString("utf8"), this.o.redact).split("\n");
      } catch {
        all = null;
      }
      files.set(rel, all);
    }
    if (!all) return "";
    const lines = all.slice(start - 1, end);
    // Start the preview at the first line that mentions a query term, when one does.
    let from = lines.findIndex((l) => terms.some((t) => l.toLowerCase().includes(t)));
    if (from < 0) from = 0;
    return lines
      .slice(from, from + 4)
      .map((l, i) => `${start + from + i}| ${l.replace(/\r$/, "").slice(0, 160)}`)
      .join("\n");
  }

  private async searchEvents(query: string, k: number, qv: number[] | null, timings: SearchTimings, opts: SearchOptions): Promise<EventHit[]> {
    const ngram = this.o.index();
    const threadId = opts.threadId ?? this.o.threadId;
    const tn = performance.now();
    const bm25 = ngram.searchEvents(queryTerms(query), CANDIDATES, threadId);
    timings.ngramMs += performance.now() - tn;
    const tv = performance.now();
    // With a cut-off, the vector half is all of the thread's events below it or nothing: never a
    // part that depends on how far the background embedding got (the hits say it was left out).
    // The store filters, so later events cannot take the candidates' places either.
    const before = opts.vectorsBefore;
    const filter = before !== undefined && threadId ? { equals: { threadId }, below: { seq: before } } : undefined;
    // A cut-off at the start (a run's first prompt) leaves nothing to search: no query, no note.
    const empty = before !== undefined && before <= 0;
    const vec = qv && !empty ? await this.o.vectors.use((v) => v.query("events", qv, CANDIDATES, filter)) : null;
    timings.vectorMs += performance.now() - tv;
    const off = this.o.vectors.status().state === "off";
    const lexicalOnly = filter && !empty && vec === null && !off ? `vectors not searched (${this.o.vectors.error ?? "not all made in time"})` : undefined;
    let allowed: Set<string> | null = null;
    if (opts.branchHead && this.o.ledger) {
      // Only the candidates are checked against the branch: loading the whole branch costs O(history).
      const ids = [...new Set([...bm25.map((e) => e.eventId), ...(vec ?? []).map((m) => m.id)])];
      allowed = await this.o.ledger.onBranch(opts.branchHead, ids);
    }
    const ranked = rankEvents(
      {
        bm25,
        vectors: (vec ?? []).map((m) => ({ eventId: m.id, threadId: String(m.metadata.threadId), seq: Number(m.metadata.seq ?? 0), score: m.similarity })),
      },
      k,
      (id, thread) => (!threadId || thread === threadId) && (!allowed || allowed.has(id)),
    );
    const rows = new Map(ngram.eventsByIds(ranked.map((f) => f.eventId)).map((e) => [e.eventId, e]));
    const hits: EventHit[] = [];
    for (const f of ranked) {
      const e = rows.get(f.eventId);
      if (!e) continue;
      hits.push({
        kind: "event",
        eventId: e.eventId,
        threadId: e.threadId,
        seq: e.seq,
        type: e.type,
        ts: e.ts,
        score: f.score,
        sources: f.sources,
        preview: e.preview.slice(0, 300),
        ...(lexicalOnly ? { lexicalOnly } : {}),
      });
    }
    return hits;
  }
}
