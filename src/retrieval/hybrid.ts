// The hybrid retriever's facade: opens index.db, wires its parts (vector connection, indexer, event
// sync, search engine; the ranking itself is pure, in ranking.ts), serialises index writes under one
// lock, and rebuilds a corrupt index once before giving up.
import fs from "node:fs";
import path from "node:path";
import { errorMessage } from "../errors.js";
import type { LedgerEvent } from "../state.js";
import { createEmbedder, DEFAULT_EMBEDDER, embedderMayStart } from "./embedders/factory.js";
import { createHashedEmbedder } from "./embedders/hashed.js";
import { EmbedderSlot } from "./embedders/slot.js";
import { sqliteEmbeddingCache } from "./embedding-cache.js";
import type { Embedder } from "./embedders/port.js";
import { EmbedderError, IndexCorruptError } from "./errors.js";
import { EventSync } from "./event-sync.js";
import { HistorySource } from "./history.js";
import { IgnoreChecker } from "../workspace/ignore-check.js";
import { Indexer } from "./indexer.js";
import { createLexicalSearcher } from "./lexical.js";
import { NgramIndex } from "./ngram-index.js";
import type {
  CodeHit,
  IndexProgress,
  IndexReport,
  RetrievalHit,
  Retriever,
  RetrieverOptions,
  RetrieverStats,
  SearchOptions,
  SearchTimings,
} from "./retriever-types.js";
import { SearchEngine, wantsVectors } from "./search.js";
import { VectorConnection, type VectorConnectionOptions } from "./vector-connection.js";

/** How long an event search waits for the vectors its cut-off needs before it goes lexical-only. */
const EVENT_VECTOR_WAIT_MS = 20_000;

export { isTestPath } from "./ranking.js";
export {
  MAX_FILE_BYTES,
  type CodeHit,
  type EventHit,
  type HitSources,
  type IndexProgress,
  type IndexReport,
  type RetrievalHit,
  type Retriever,
  type RetrieverOptions,
  type RetrieverStats,
  type SearchOptions,
  type SearchScope,
  type SearchTimings,
  type SkipCounts,
  type VectorStatus,
} from "./retriever-types.js";

/** Builds the hybrid retriever: opens (or rebuilds) index.db, picks the embedder, connects to Chroma. */
export async function createRetriever(opts: RetrieverOptions): Promise<Retriever> {
  const workspace = fs.realpathSync(path.resolve(opts.workspace));
  const stateDir = path.resolve(opts.stateDir ?? path.join(workspace, ".ledgerloop"));
  fs.mkdirSync(stateDir, { recursive: true });
  const gi = path.join(stateDir, ".gitignore");
  if (!fs.existsSync(gi)) fs.writeFileSync(gi, "*\n");
  let embedder: Embedder;
  let blocked: VectorConnectionOptions["blocked"] = null;
  const spec = typeof opts.embedder === "object" ? null : (opts.embedder ?? DEFAULT_EMBEDDER);
  try {
    embedder = spec === null ? (opts.embedder as Embedder) : await createEmbedder(spec, { modelsDir: opts.modelsDir, stateDir });
  } catch (err) {
    // An endpoint that is down or answers garbage must not stop code search: the n-gram side runs
    // and the vector side says why it is off, and asks the endpoint again now and then (a server
    // still starting). A misspelt embedder name is still an error.
    if (!(err instanceof EmbedderError) || err.code !== "EMBEDDER_FAILED" || spec === null) throw err;
    const slot = new EmbedderSlot(createHashedEmbedder());
    embedder = slot;
    blocked = {
      reason: err.message,
      spec,
      revive: async (signal) => {
        await embedderMayStart(spec, signal);
        // The signal ends the probe (and every later request) when the retriever closes.
        await slot.replace(await createEmbedder(spec, { modelsDir: opts.modelsDir, stateDir, signal }));
      },
    };
  }
  const r = new HybridRetriever(workspace, stateDir, embedder, opts, blocked);
  await r.open();
  return r;
}

class HybridRetriever implements Retriever {
  private ngram!: NgramIndex;
  private readonly history: HistorySource | null;
  private readonly vectors: VectorConnection;
  private readonly indexer: Indexer;
  private readonly events: EventSync;
  private readonly engine: SearchEngine;
  private lock: Promise<unknown> = Promise.resolve();
  /** The vector side's first connection attempt, once started (see connected). */
  private connecting: Promise<void> | null = null;
  /** The full index under way, if any. */
  private indexing: Promise<IndexReport> | null = null;
  private readonly warn: (m: string) => void;
  private readonly warned = new Set<string>();
  private closed = false;
  lastSearchTimings: SearchTimings | null = null;

  constructor(
    private readonly workspace: string,
    private readonly stateDir: string,
    private readonly embedder: Embedder,
    private readonly opts: RetrieverOptions,
    vectorsBlocked: VectorConnectionOptions["blocked"],
  ) {
    this.warn = opts.onWarning ?? ((m) => process.stderr.write(`ledgerloop: warning: ${m}\n`));
    // Every part reads the index through this getter: a rebuild replaces the handle.
    const index = () => this.ngram;
    const warnOnce = (key: string, msg: string) => this.warnOnce(key, msg);
    this.history = opts.history === false ? null : new HistorySource(workspace, () => this.ngram.db, opts.history ?? {}, opts.redact, this.warn);
    this.vectors = new VectorConnection({ workspace, stateDir, embedder, index, opts, blocked: vectorsBlocked, warn: this.warn });
    this.events = new EventSync({
      index,
      vectors: this.vectors,
      embedder,
      ledger: opts.ledger,
      threadId: opts.threadId,
      guarded: (fn) => this.exclusive(() => this.resilient(fn)),
      isClosed: () => this.closed,
    });
    this.indexer = new Indexer({
      workspace,
      index,
      vectors: this.vectors,
      embedder,
      ignore: new IgnoreChecker(workspace),
      history: this.history,
      redact: opts.redact,
      warnOnce,
      syncLedger: () => this.events.syncLedger(),
      vectorsReady: () => this.connected(),
    });
    this.engine = new SearchEngine({
      workspace,
      index,
      vectors: this.vectors,
      embedder,
      history: this.history,
      ledger: opts.ledger,
      threadId: opts.threadId,
      redact: opts.redact,
      warnOnce,
    });
  }

  private get indexFile(): string {
    return path.join(this.stateDir, "index.db");
  }

  async open(): Promise<void> {
    this.ngram = NgramIndex.open(this.indexFile);
    const e = this.embedder as Embedder & { attachCache?: (c: ReturnType<typeof sqliteEmbeddingCache>) => void };
    e.attachCache?.(sqliteEmbeddingCache(() => this.ngram.db));
    if (this.ngram.rebuilt)
      this.warn(`the search index ${this.indexFile} was unusable (${this.ngram.rebuildReason}); it was moved to index.db.corrupt and is being rebuilt`);
    // Every index write and search that may use vectors waits for this (see exclusive), so none
    // sees a half-made connection; a full index reads and stores the workspace's files meanwhile.
    // With connectAfterFiles it starts when first waited for: after the full index's files.
    if (this.opts.connectAfterFiles) return;
    const connecting = this.connected();
    if (!this.opts.connectInBackground) await connecting;
  }

  /** Settles once the vector side's first connection attempt has; starts that attempt if it has not begun. */
  private connected(): Promise<void> {
    this.connecting ??= this.vectors.connect();
    return this.connecting.catch(() => {});
  }

  /** Settles once a connection attempt under way has (at once when none was started). */
  private async connectionSettled(): Promise<void> {
    await this.connecting?.catch(() => {});
  }

  private warnOnce(key: string, msg: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.warn(msg);
  }

  /**
   * Runs fn after every earlier index write, and before any later one; after the vector side's first
   * connection attempt, unless `early` (a full index: the indexer waits for it itself, see vectorsReady).
   */
  private exclusive<T>(fn: () => Promise<T>, early = false): Promise<T> {
    const start = early ? fn : () => this.connected().then(fn);
    const run = this.lock.then(start, start);
    this.lock = run.catch(() => {});
    return run;
  }

  /** Runs fn; on a corrupt index, rebuilds it from scratch once and runs fn again. */
  private async resilient<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof IndexCorruptError)) throw err;
      this.warn(`${err.message}; rebuilding it`);
      try {
        this.ngram.close();
      } catch {
        // a broken handle is dropped all the same
      }
      for (const s of ["", "-wal", "-shm"]) fs.rmSync(this.indexFile + s, { force: true });
      this.ngram = NgramIndex.open(this.indexFile);
      await this.indexer.index({});
      return fn();
    }
  }

  /**
   * A full index, in two turns of the lock: the files (early: without waiting for the vector side),
   * then, once the vector side's first connection attempt has settled, their vectors. What was
   * queued between the two (a first prompt's event sync) runs before the vectors are made.
   */
  index(opts: { onProgress?: (p: IndexProgress) => void } = {}): Promise<IndexReport> {
    const run = this.exclusive(() => this.resilient(() => this.indexer.indexFiles(opts)), true).then(async (pending) => {
      await this.connected();
      return this.exclusive(() => this.resilient(() => this.indexer.indexVectors(pending, opts)));
    });
    this.indexing = run;
    const done = () => {
      if (this.indexing === run) this.indexing = null;
    };
    run.then(done, done);
    return run;
  }

  refresh(changedPaths: string[]): Promise<IndexReport> {
    return this.exclusive(() => this.resilient(() => this.indexer.refresh(changedPaths)));
  }

  indexEvents(events: LedgerEvent[]): Promise<number> {
    return this.exclusive(() => this.resilient(() => this.events.indexEvents(events)));
  }

  async whenIdle(): Promise<void> {
    await this.events.whenIdle();
    await this.history?.whenIdle();
  }

  async search(query: string, k: number): Promise<CodeHit[]> {
    return (await this.searchAll(query, { k, scope: "code" })) as CodeHit[];
  }

  async searchAll(query: string, opts: SearchOptions = {}): Promise<RetrievalHit[]> {
    try {
      return await this.searchAllUnguarded(query, opts);
    } catch (err) {
      // A search must never fail the agent's step: anything unexpected falls back to the plain
      // lexical scan of the workspace (code only), with a warning.
      this.warnOnce(`search:${errorMessage(err)}`, `search failed (${errorMessage(err)}); falling back to a lexical scan`);
      if ((opts.scope ?? "code") === "events") return [];
      const hits = await createLexicalSearcher(this.workspace)
        .search(query, Math.max(1, opts.k ?? 10))
        .catch(() => []);
      return hits.map((h) => ({ ...h, kind: "code" as const, sources: {}, symbols: [] }));
    }
  }

  private async searchAllUnguarded(query: string, opts: SearchOptions): Promise<RetrievalHit[]> {
    const scope = opts.scope ?? "code";
    const vectors = wantsVectors(opts);
    if (!this.indexer.indexedOnce) {
      // The index under way (the runtime starts one at once), else a new one.
      const full = this.indexing ?? this.index();
      // A search that uses no vector needs only the n-gram rows: it goes on while the index's vectors
      // are made (the first prompt does not wait for the vector store to start).
      if (vectors) await full;
      else {
        full.catch(() => {}); // a failure is met again by the next search that waits for it
        await this.indexer.lexicalReady;
      }
    }
    // A search of one thread's history needs only that thread's new events (not a scan of all threads).
    if (scope !== "code" && this.opts.ledger) {
      // Without vectors, not under the lock either: a full index's vectors may hold it for a while
      // (a new collection's first write), and pulling events only adds n-gram rows, which commutes
      // with what the lock guards (an event already there is skipped, whoever adds it first).
      if (vectors) await this.exclusive(() => this.resilient(() => this.events.syncLedger(opts.threadId)));
      else await this.events.syncLedger(opts.threadId);
    }
    // Outside the lock: the vectors waited for are made under it, one batch per turn.
    const thread = opts.threadId ?? this.opts.threadId;
    let eventVectors = true;
    // A cut-off at the start (a run's first prompt) searches no event vectors: nothing to wait for.
    if (scope !== "code" && opts.vectorsBefore !== undefined && opts.vectorsBefore > 0 && thread) {
      await this.vectors.maybeRecover();
      eventVectors = await this.events.vectorsBefore(thread, opts.vectorsBefore, EVENT_VECTOR_WAIT_MS);
    }
    return this.resilient(async () => {
      await this.vectors.maybeRecover();
      const { hits, timings } = await this.engine.search(query, opts, eventVectors);
      this.lastSearchTimings = timings;
      return hits;
    });
  }

  async stats(): Promise<RetrieverStats> {
    await this.connectionSettled();
    const counts = this.ngram.counts();
    return {
      workspace: this.workspace,
      indexFile: this.indexFile,
      indexBytes: this.ngram.sizeBytes(),
      ...counts,
      lastIndex: this.indexer.lastReport,
      vector: this.vectors.status(),
      rebuiltBecause: this.ngram.rebuildReason,
      history: this.history?.getStatus() ?? { state: "off", detail: "disabled", head: null, commits: 0, shallow: false, partial: null },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // A full index may be between its halves (waiting for the connection, outside the lock).
    await this.indexing?.catch(() => {});
    await this.events.whenIdle();
    this.closed = true;
    await this.lock.catch(() => {});
    await this.connectionSettled();
    // A history read still under way stops after its batch (git too) before index.db is closed.
    await this.history?.stop();
    this.ngram.close();
    await this.vectors.close();
    await this.embedder.close?.().catch(() => {});
  }
}
