import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { errorMessage } from "../errors.js";
import type { Ledger } from "../ledger/port.js";
import type { LedgerEvent } from "../state.js";
import { extractSymbols, type CodeSymbol } from "../symbols/extract.js";
import { languageOf } from "../symbols/languages.js";
import { walkFiles } from "../workspace/files.js";
import { createChromaIndex } from "./chroma-index.js";
import { ensureChromaServer, externalChroma } from "./chroma-server.js";
import { chunkLines } from "./chunker.js";
import { createEmbedder, DEFAULT_EMBEDDER } from "./embedders/factory.js";
import { createHashedEmbedder } from "./embedders/hashed.js";
import { sqliteEmbeddingCache } from "./embedding-cache.js";
import type { Embedder } from "./embedders/port.js";
import { EmbedderError, IndexCorruptError } from "./errors.js";
import { eventDoc } from "./event-docs.js";
import { reciprocalRankFusion, RRF_K, type SourceName, type SourceScores } from "./fusion.js";
import { HISTORY_TUNING, HistorySource, type HistorySettings, type HistoryStatus } from "./history.js";
import { IgnoreChecker } from "./ignore-check.js";
import { createLexicalSearcher } from "./lexical.js";
import { NgramIndex, type ChunkInput, type ChunkRow, type FileRecord, type RankedChunk, type SymbolInput } from "./ngram-index.js";
import type { CodeSearcher, SearchHit } from "./port.js";
import { queryTerms } from "./tokens.js";
import type { VectorIndex, VectorItem } from "./vector-index.js";

/** Files larger than this are not indexed (generated code, data, bundles). */
export const MAX_FILE_BYTES = 1024 * 1024;
const BINARY_SNIFF_BYTES = 8192;
const FILE_BATCH = 64;
const CANDIDATES = 150;
const RECOVERY_INTERVAL_MS = 30_000;

/** What `search` scans: the workspace's code, the ledger's events, or both. */
export type SearchScope = "code" | "events" | "all";

/** Why a result was found: each ranking source's own score, and the commit subjects that voted for its file. */
export type HitSources = Partial<Record<Exclude<SourceName, "history">, number>> & { history?: string[] };

/** A code range found by the retriever. */
export interface CodeHit extends SearchHit {
  kind: "code";
  sources: HitSources;
  /** Symbols declared in the range. */
  symbols: string[];
}

/** A ledger event found by the retriever. */
export interface EventHit {
  kind: "event";
  eventId: string;
  threadId: string;
  seq: number;
  type: string;
  ts: string;
  score: number;
  sources: SourceScores;
  preview: string;
}

export type RetrievalHit = CodeHit | EventHit;

export interface SearchOptions {
  /** Results wanted (default 10). */
  k?: number;
  scope?: SearchScope;
  /** Only events of this thread (default: the retriever's thread when it has one, else all). */
  threadId?: string;
  /** Only events on the branch ending at this event (a run's `ledgerHead`): forks never see each other. */
  branchHead?: string;
  /** Diagnostics and ablations: fuse only these sources (default all). */
  sources?: SourceName[];
}

/** Progress of an index run, reported per file. */
export interface IndexProgress {
  phase: "scan" | "index" | "vectors";
  done: number;
  total: number;
  path?: string;
}

/** Why files were left out of the index, with counts. */
export interface SkipCounts {
  /** Matched by .gitignore / .git/info/exclude (an ignored directory counts once). */
  ignored: number;
  /** Contain a NUL byte in their first 8 KiB. */
  binary: number;
  /** Larger than 1 MiB. */
  huge: number;
  /** Could not be read (permissions, I/O errors). */
  unreadable: number;
  /** Listed, then gone before they could be read. */
  vanished: number;
}

/** What an `index()` or `refresh()` did. */
export interface IndexReport {
  /** Files seen (listed by the walk, or asked for by refresh). */
  files: number;
  /** Files (re)parsed and stored. */
  indexed: number;
  unchanged: number;
  removed: number;
  skipped: SkipCounts;
  /** Files that were not valid UTF-8 (indexed as Latin-1); the first few paths. */
  invalidUtf8: { count: number; paths: string[] };
  /** Chunks whose vectors were stored in this run. */
  vectorized: number;
  durationMs: number;
  /** Part of durationMs spent embedding and in the vector store. */
  vectorMs: number;
  /** Files whose vectors could not be made (embedder or vector store failed): search uses n-grams for them. */
  vectorsMissing: number;
}

/** State of the vector side. */
export interface VectorStatus {
  state: "ok" | "degraded" | "off";
  store: string | null;
  embedder: string;
  dimensions: number;
  error?: string;
}

export interface RetrieverStats {
  workspace: string;
  indexFile: string;
  indexBytes: number;
  files: number;
  chunks: number;
  symbols: number;
  events: number;
  lastIndex: IndexReport | null;
  vector: VectorStatus;
  /** Set when the index file was unusable at open and rebuilt. */
  rebuiltBecause: string | null;
  /** The git-history source: off (not a repository, disabled) or what it has read. */
  history: HistoryStatus;
}

/** Time spent by the last search, by part (for the benchmark's "Chroma share"). */
export interface SearchTimings {
  totalMs: number;
  ngramMs: number;
  embedMs: number;
  vectorMs: number;
  /** Part of ngramMs spent ranking files by their history. */
  historyMs?: number;
}

/** The hybrid retriever: a {@link CodeSearcher} for the search_code tool, and more. */
export interface Retriever extends CodeSearcher {
  /** Code search: the best ranges, best first (builds the index on first use). */
  search(query: string, k: number): Promise<CodeHit[]>;
  /** Code and/or ledger-event search. Never throws for a failing vector store: it falls back to n-grams. */
  searchAll(query: string, opts?: SearchOptions): Promise<RetrievalHit[]>;
  /** Resolves when background work (event vectors) has caught up. */
  whenIdle(): Promise<void>;
  /** Brings the index up to date with the workspace (incremental: unchanged files are not re-read). */
  index(opts?: { onProgress?: (p: IndexProgress) => void }): Promise<IndexReport>;
  /** Re-indexes these paths (workspace-relative or absolute): changed, created, deleted or renamed files. */
  refresh(changedPaths: string[]): Promise<IndexReport>;
  /** Indexes ledger events (those of other types are ignored); returns how many were new. */
  indexEvents(events: LedgerEvent[]): Promise<number>;
  stats(): Promise<RetrieverStats>;
  /** Timings of the last search. */
  readonly lastSearchTimings: SearchTimings | null;
  close(): Promise<void>;
}

export interface RetrieverOptions {
  workspace: string;
  /** Where index.db and the embedded Chroma data live (default `<workspace>/.ledgerloop`). */
  stateDir?: string;
  /** Ledger whose events `scope: "events" | "all"` searches. */
  ledger?: Ledger;
  /** Index and search only this thread's events (default: every thread of the ledger). */
  threadId?: string;
  /** `hashed` (default), `hashed:<dims>`, `xenova:<model>`, or an Embedder instance. */
  embedder?: string | Embedder;
  /** An existing Chroma server (default: `$CHROMA_URL`, else the embedded server). */
  chromaUrl?: string;
  /** Where `xenova:` models are looked up. */
  modelsDir?: string;
  /** `"off"` disables vectors; a VectorIndex replaces Chroma (tests, benchmarks). */
  vectorIndex?: VectorIndex | "off";
  /** Called once per problem (vector store down, index rebuilt, …); default: a line on stderr. */
  onWarning?: (message: string) => void;
  /** Time limit for the embedded Chroma server to come up. */
  chromaStartTimeoutMs?: number;
  /** Applied to file text before it is indexed or previewed (the runtime's secret redactor), and to commit messages. */
  redact?: (text: string) => string;
  /** Bounds of the git-history source, or false to leave history out (default: on in a git workspace). */
  history?: HistorySettings | false;
}

/** Builds the hybrid retriever: opens (or rebuilds) index.db, picks the embedder, connects to Chroma. */
export async function createRetriever(opts: RetrieverOptions): Promise<Retriever> {
  const workspace = fs.realpathSync(path.resolve(opts.workspace));
  const stateDir = path.resolve(opts.stateDir ?? path.join(workspace, ".ledgerloop"));
  fs.mkdirSync(stateDir, { recursive: true });
  const gi = path.join(stateDir, ".gitignore");
  if (!fs.existsSync(gi)) fs.writeFileSync(gi, "*\n");
  let embedder: Embedder;
  let blocked: string | null = null;
  try {
    embedder = typeof opts.embedder === "object" ? opts.embedder : await createEmbedder(opts.embedder ?? DEFAULT_EMBEDDER, { modelsDir: opts.modelsDir, stateDir });
  } catch (err) {
    // An endpoint that is down or answers garbage must not stop code search: the n-gram side runs
    // and the vector side says why it is off. A misspelt embedder name is still an error.
    if (!(err instanceof EmbedderError) || err.code !== "EMBEDDER_FAILED") throw err;
    embedder = createHashedEmbedder();
    blocked = err.message;
  }
  const r = new HybridRetriever(workspace, stateDir, embedder, opts, blocked);
  await r.open();
  return r;
}

interface PreparedFile {
  rel: string;
  hash: string;
  size: number;
  mtimeMs: number;
  lang: string | null;
  lines: string[];
  chunks: ChunkInput[];
  symbols: SymbolInput[];
}

class HybridRetriever implements Retriever {
  private ngram!: NgramIndex;
  private readonly history: HistorySource | null;
  private vectors: VectorIndex | null = null;
  private vectorState: VectorStatus["state"] = "off";
  private vectorError: string | undefined;
  private lastVectorAttempt = 0;
  private lock: Promise<unknown> = Promise.resolve();
  private indexedOnce = false;
  private lastReport: IndexReport | null = null;
  private readonly ignore: IgnoreChecker;
  private readonly warn: (m: string) => void;
  private closed = false;
  lastSearchTimings: SearchTimings | null = null;

  constructor(
    private readonly workspace: string,
    private readonly stateDir: string,
    private readonly embedder: Embedder,
    private readonly opts: RetrieverOptions,
    /** Why vectors cannot work at all (the embedder could not start); null when they can. */
    private readonly vectorsBlocked: string | null = null,
  ) {
    this.ignore = new IgnoreChecker(workspace);
    this.warn = opts.onWarning ?? ((m) => process.stderr.write(`ledgerloop: warning: ${m}\n`));
    this.history = opts.history === false ? null : new HistorySource(workspace, () => this.ngram.db, opts.history ?? {}, opts.redact, this.warn);
  }

  private get indexFile(): string {
    return path.join(this.stateDir, "index.db");
  }

  async open(): Promise<void> {
    this.ngram = NgramIndex.open(this.indexFile);
    const e = this.embedder as Embedder & { attachCache?: (c: ReturnType<typeof sqliteEmbeddingCache>) => void };
    e.attachCache?.(sqliteEmbeddingCache(() => this.ngram.db));
    if (this.ngram.rebuilt) this.warn(`the search index ${this.indexFile} was unusable (${this.ngram.rebuildReason}); it was moved to index.db.corrupt and is being rebuilt`);
    await this.connectVectors();
  }

  // ------------------------------------------------------------------------------------------
  // Vector store lifecycle: connect, degrade on failure, retry now and then.
  // ------------------------------------------------------------------------------------------

  private async connectVectors(): Promise<void> {
    this.lastVectorAttempt = Date.now();
    if (this.opts.vectorIndex === "off") {
      this.vectorState = "off";
      return;
    }
    if (this.vectorsBlocked) {
      this.degrade(new Error(this.vectorsBlocked));
      return;
    }
    try {
      if (this.opts.vectorIndex) this.vectors = this.opts.vectorIndex;
      else {
        const url = this.opts.chromaUrl ?? process.env.CHROMA_URL;
        const server = url ? await externalChroma(url) : await ensureChromaServer({ stateDir: this.stateDir, startTimeoutMs: this.opts.chromaStartTimeoutMs });
        // Keyed by workspace and state dir: two indexes of one workspace never share a collection.
        this.vectors = await createChromaIndex({ server, embedder: this.embedder, namespace: `${this.workspace}\0${this.stateDir}` });
      }
      // The vector store is derived data too: when it is not the one index.db remembers (another
      // embedder, server or a wiped collection), every file is re-embedded.
      const key = `${this.vectors.description}|${this.embedder.id}|${this.embedder.dimensions}`;
      const count = await this.vectors.count("code");
      const files = this.ngram.files();
      const claimed = [...files.values()].some((f) => f.vecHash !== null);
      if (this.ngram.getMeta("vector_key") !== key || (claimed && count === 0)) {
        this.ngram.clearVectorState();
        this.ngram.setMeta("vector_key", key);
      }
      if (this.vectorState === "degraded") this.warn(`vector search is available again (${this.vectors.description})`);
      this.vectorState = "ok";
      this.vectorError = undefined;
    } catch (err) {
      this.degrade(err);
    }
  }

  private degrade(err: unknown): void {
    const msg = errorMessage(err);
    const first = this.vectorState !== "degraded";
    this.vectorState = "degraded";
    this.vectorError = msg;
    this.lastVectorAttempt = Date.now();
    const v = this.vectors;
    this.vectors = null;
    if (v && !this.opts.vectorIndex) v.close().catch(() => {});
    if (first) this.warn(`vector search is unavailable (${msg}); searching with the n-gram index only`);
  }

  /** Tries to bring a failed vector store back, at most every RECOVERY_INTERVAL_MS. */
  private async maybeRecover(): Promise<void> {
    if (this.vectorState !== "degraded" || Date.now() - this.lastVectorAttempt < RECOVERY_INTERVAL_MS) return;
    await this.connectVectors();
  }

  private async withVectors<T>(fn: (v: VectorIndex) => Promise<T>): Promise<T | undefined> {
    if (!this.vectors || this.vectorState !== "ok") return undefined;
    try {
      return await fn(this.vectors);
    } catch (err) {
      this.degrade(err);
      return undefined;
    }
  }

  // ------------------------------------------------------------------------------------------
  // Indexing
  // ------------------------------------------------------------------------------------------

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
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
      await this.indexUnlocked({});
      return fn();
    }
  }

  index(opts: { onProgress?: (p: IndexProgress) => void } = {}): Promise<IndexReport> {
    return this.exclusive(() => this.resilient(() => this.indexUnlocked(opts)));
  }

  private async indexUnlocked(opts: { onProgress?: (p: IndexProgress) => void }): Promise<IndexReport> {
    const t0 = performance.now();
    // History is read in the background, alongside the files (git log works in its own process): a
    // search never waits for a long history.
    void this.history?.sync();
    await this.maybeRecover();
    opts.onProgress?.({ phase: "scan", done: 0, total: 0 });
    this.ignore.reset();
    const walk = await walkFiles(this.workspace);
    const stored = this.ngram.files();
    const report = emptyReport();
    report.skipped.ignored = walk.skippedIgnored;
    report.files = walk.files.length;
    const listed = new Set(walk.files);
    const toRemove = [...stored.keys()].filter((p) => !listed.has(p));

    let done = 0;
    for (let i = 0; i < walk.files.length; i += FILE_BATCH) {
      const batch = walk.files.slice(i, i + FILE_BATCH);
      const prepared: PreparedFile[] = [];
      for (const rel of batch) {
        const outcome = await this.prepare(rel, stored.get(rel), report);
        if (outcome === "remove") toRemove.push(rel);
        else if (outcome) prepared.push(outcome);
        opts.onProgress?.({ phase: "index", done: ++done, total: walk.files.length, path: rel });
      }
      this.store(prepared);
      report.indexed += prepared.length;
      await new Promise<void>((r) => setImmediate(r));
    }
    report.removed = await this.removeFiles(toRemove);
    if (report.indexed > 200) this.ngram.optimize();
    if (report.indexed + report.removed > 0) this.ngram.checkpoint();
    const tv = performance.now();
    const vectorsWereOk = this.vectorState === "ok";
    report.vectorized = await this.syncVectors(null, opts.onProgress);
    this.noteMissingVectors(report, vectorsWereOk);
    await this.syncLedger();
    report.vectorMs = performance.now() - tv;
    report.durationMs = performance.now() - t0;
    this.indexedOnce = true;
    this.lastReport = report;
    return report;
  }

  refresh(changedPaths: string[]): Promise<IndexReport> {
    return this.exclusive(() =>
      this.resilient(async () => {
        if (!this.indexedOnce && this.ngram.counts().files === 0) return this.indexUnlocked({});
        const t0 = performance.now();
        await this.maybeRecover();
        const report = emptyReport();
        const rels = [...new Set(changedPaths.map((p) => this.toRel(p)).filter((p): p is string => p !== null))];
        if (rels.some((r) => r === ".gitignore" || r.endsWith("/.gitignore"))) this.ignore.reset();
        const toRemove: string[] = [];
        const prepared: PreparedFile[] = [];
        for (const rel of rels) {
          report.files++;
          const st = statOrNull(path.join(this.workspace, rel));
          if (!st?.isFile() || this.ignore.isIgnored(rel) || !this.isInside(rel)) {
            if (st?.isDirectory()) {
              // A directory (created, moved or deleted wholesale): refresh what is under it.
              const sub = await this.refreshDirectory(rel, report);
              prepared.push(...sub.prepared);
              toRemove.push(...sub.remove);
            } else {
              if (this.ignore.isIgnored(rel) && st?.isFile()) report.skipped.ignored++;
              toRemove.push(rel, ...this.storedUnder(rel));
            }
            continue;
          }
          const outcome = await this.prepare(rel, this.ngram.fileRecord(rel), report);
          if (outcome === "remove") toRemove.push(rel);
          else if (outcome) prepared.push(outcome);
        }
        this.store(prepared);
        report.indexed = prepared.length;
        report.removed = await this.removeFiles(toRemove);
        const tv = performance.now();
        const vectorsWereOk = this.vectorState === "ok";
        report.vectorized = await this.syncVectors(prepared.map((p) => p.rel));
        this.noteMissingVectors(report, vectorsWereOk);
        report.vectorMs = performance.now() - tv;
        report.durationMs = performance.now() - t0;
        // HEAD may have moved (a commit, a checkout): new commits are read in the background.
        void this.history?.sync();
        return report;
      }),
    );
  }

  private async refreshDirectory(rel: string, report: IndexReport): Promise<{ prepared: PreparedFile[]; remove: string[] }> {
    const walk = await walkFiles(this.workspace, { under: rel });
    const listed = new Set(walk.files);
    const prepared: PreparedFile[] = [];
    const remove = this.storedUnder(rel).filter((p) => !listed.has(p));
    for (const f of walk.files) {
      const outcome = await this.prepare(f, this.ngram.fileRecord(f), report);
      if (outcome === "remove") remove.push(f);
      else if (outcome) prepared.push(outcome);
    }
    return { prepared, remove };
  }

  private storedUnder(rel: string): string[] {
    const prefix = rel.endsWith("/") ? rel : `${rel}/`;
    return [...this.ngram.files().keys()].filter((p) => p.startsWith(prefix));
  }

  private toRel(p: string): string | null {
    const abs = path.resolve(this.workspace, p);
    const rel = path.relative(this.workspace, abs);
    if (!rel || rel.startsWith("..") || path.isAbsolute(rel)) return null;
    return rel.split(path.sep).join("/");
  }

  private isInside(rel: string): boolean {
    try {
      const real = fs.realpathSync(path.join(this.workspace, rel));
      return real === this.workspace || real.startsWith(this.workspace + path.sep);
    } catch {
      return false;
    }
  }

  /**
   * Reads and parses one file when it changed. Returns the prepared file, null when there is nothing
   * to store (unchanged, or skipped and never indexed), or "remove" when a stored file must go.
   */
  private async prepare(rel: string, stored: FileRecord | undefined, report: IndexReport): Promise<PreparedFile | null | "remove"> {
    const abs = path.join(this.workspace, rel);
    let st: fs.Stats;
    try {
      st = fs.statSync(abs);
    } catch (err) {
      return this.skip(stored, report, (err as NodeJS.ErrnoException).code === "ENOENT" ? "vanished" : "unreadable");
    }
    if (!st.isFile()) return this.skip(stored, report, "vanished");
    if (st.size > MAX_FILE_BYTES) return this.skip(stored, report, "huge");
    if (stored && stored.size === st.size && stored.mtimeMs === st.mtimeMs) {
      report.unchanged++;
      return null;
    }
    let buf: Buffer;
    try {
      buf = fs.readFileSync(abs);
    } catch (err) {
      return this.skip(stored, report, (err as NodeJS.ErrnoException).code === "ENOENT" ? "vanished" : "unreadable");
    }
    if (buf.length > MAX_FILE_BYTES) return this.skip(stored, report, "huge");
    if (buf.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return this.skip(stored, report, "binary");
    const hash = createHash("sha256").update(buf).digest("hex");
    if (stored && stored.hash === hash) {
      this.ngram.touch(rel, st.size, st.mtimeMs);
      report.unchanged++;
      return null;
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(buf);
    } catch {
      // Latin-1 maps every byte to a character, so the file stays searchable by its ASCII words.
      text = buf.toString("latin1");
      report.invalidUtf8.count++;
      if (report.invalidUtf8.paths.length < 10) report.invalidUtf8.paths.push(rel);
    }
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    text = this.redactKeepingLines(text);
    const lines = text.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    let symbols: CodeSymbol[] = [];
    try {
      symbols = await extractSymbols(text, rel);
    } catch (err) {
      // A grammar that chokes on one file must not stop the index: the file is chunked by lines.
      this.warnOnce(`parse:${languageOf(rel)}`, `symbols of ${rel} could not be extracted (${errorMessage(err)}); indexing it by lines`);
    }
    let ranges;
    try {
      ranges = chunkLines(lines, symbols);
    } catch (err) {
      this.warnOnce(`chunk:${rel}`, `chunking ${rel} along its symbols failed (${errorMessage(err)}); chunking it by lines`);
      ranges = chunkLines(lines, []);
    }
    const chunks = ranges.map((c) => ({ ...c, text: lines.slice(c.startLine - 1, c.endLine).join("\n") }));
    return {
      rel,
      hash,
      size: st.size,
      mtimeMs: st.mtimeMs,
      lang: languageOf(rel),
      lines,
      chunks,
      symbols: symbols.map((s) => ({ name: s.name, kind: s.kind, container: s.container, startLine: s.startLine, endLine: s.endLine })),
    };
  }

  private skip(stored: FileRecord | undefined, report: IndexReport, why: keyof SkipCounts): null | "remove" {
    report.skipped[why]++;
    return stored ? "remove" : null;
  }

  private readonly warned = new Set<string>();
  private warnOnce(key: string, msg: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.warn(msg);
  }

  private store(prepared: PreparedFile[]): void {
    if (prepared.length === 0) return;
    this.ngram.transaction(() => {
      for (const p of prepared) {
        this.ngram.putFile({ path: p.rel, hash: p.hash, size: p.size, mtimeMs: p.mtimeMs, lang: p.lang, lines: p.lines.length }, p.chunks, p.symbols);
      }
    });
  }

  private async removeFiles(rels: string[]): Promise<number> {
    const unique = [...new Set(rels)];
    const removed = this.ngram.transaction(() => unique.filter((r) => this.ngram.removeFile(r)));
    if (removed.length) await this.withVectors((v) => v.deleteWhere("code", "path", removed));
    return removed.length;
  }

  /**
   * Embeds and stores the chunks of files whose vectors are missing or stale (all such files, or only
   * `only`). Files are re-read and checked against their indexed hash, so a file that changed since
   * is left for the next refresh rather than embedded with the wrong line ranges.
   */
  private async syncVectors(only: string[] | null, onProgress?: (p: IndexProgress) => void): Promise<number> {
    if (!this.vectors || this.vectorState !== "ok") return 0;
    const wanted = only ? new Set(only) : null;
    const todo = this.ngram.filesNeedingVectors().filter((f) => !wanted || wanted.has(f.path));
    let stored = 0;
    let pending: Promise<unknown> = Promise.resolve();
    let failed = false;
    for (let i = 0; i < todo.length && !failed; i += FILE_BATCH) {
      const batch = todo.slice(i, i + FILE_BATCH);
      const items: VectorItem[] = [];
      const texts: string[] = [];
      const done: Array<{ path: string; hash: string }> = [];
      const stale: string[] = [];
      for (const f of batch) {
        const lines = this.readLinesIfHash(f.path, f.hash);
        if (!lines) continue;
        if (f.vecHash !== null) stale.push(f.path);
        for (const c of this.ngram.chunksOf(f.path)) {
          items.push({ id: chunkKey(f.path, c.startLine, c.endLine), vector: [], metadata: { path: f.path, start: c.startLine, end: c.endLine } });
          texts.push(docText(f.path, c.symbols, lines.slice(c.startLine - 1, c.endLine).join("\n")));
        }
        done.push({ path: f.path, hash: f.hash });
      }
      let vectors: number[][];
      try {
        vectors = await this.embedder.embedDocuments(texts);
      } catch (err) {
        // The endpoint died or answered garbage: the batch in flight is still stored, the rest waits
        // for a later index.
        await pending;
        this.degrade(err);
        break;
      }
      vectors.forEach((v, j) => (items[j]!.vector = v));
      // One batch in flight while the next is embedded: Chroma works while we compute.
      await pending;
      if (failed || this.vectorState !== "ok") break;
      pending = (async () => {
        const ok = await this.withVectors(async (v) => {
          if (stale.length) await v.deleteWhere("code", "path", stale);
          await v.upsert("code", items);
          return true;
        });
        if (!ok) {
          failed = true;
          return;
        }
        this.ngram.transaction(() => done.forEach((d) => this.ngram.setVectorHash(d.path, d.hash)));
        stored += items.length;
        onProgress?.({ phase: "vectors", done: Math.min(i + batch.length, todo.length), total: todo.length });
      })();
    }
    await pending;
    return stored;
  }

  /**
   * When vectors were wanted but the vector side failed, counts the files that still lack them, and
   * says so when it failed during this run (a side already down was announced when it went down).
   */
  private noteMissingVectors(report: IndexReport, wasOk: boolean): void {
    if (this.opts.vectorIndex === "off" || this.vectorState === "ok") return;
    report.vectorsMissing = this.ngram.filesNeedingVectors().length;
    if (report.vectorsMissing > 0 && wasOk) {
      this.warnOnce(
        `missing:${this.vectorError}`,
        `the n-gram index is complete; ${report.vectorsMissing} file(s) have no vectors yet (${this.vectorError ?? "vector side unavailable"}); they are embedded on a later index once it works`,
      );
    }
  }

  private readLinesIfHash(rel: string, hash: string): string[] | null {
    let buf: Buffer;
    try {
      buf = fs.readFileSync(path.join(this.workspace, rel));
    } catch {
      return null;
    }
    if (createHash("sha256").update(buf).digest("hex") !== hash) return null;
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(buf);
    } catch {
      text = buf.toString("latin1");
    }
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    return text.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  }

  // ------------------------------------------------------------------------------------------
  // Ledger events
  // ------------------------------------------------------------------------------------------

  indexEvents(events: LedgerEvent[]): Promise<number> {
    return this.exclusive(() => this.resilient(() => this.indexEventsUnlocked(events)));
  }

  private async indexEventsUnlocked(events: LedgerEvent[]): Promise<number> {
    const docs = events.map(eventDoc).filter((d): d is NonNullable<typeof d> => d !== null);
    const added = this.ngram.putEvents(docs);
    // Events are searchable in the n-gram index at once; their vectors follow in the background, so a
    // step's context does not wait for an embedding round trip to Chroma (they lag by about a step).
    if (added > 0) this.scheduleEventVectors();
    return added;
  }

  private eventVectorsRun: Promise<void> | null = null;

  async whenIdle(): Promise<void> {
    while (this.eventVectorsRun) await this.eventVectorsRun.catch(() => {});
    await this.history?.whenIdle();
  }
  private eventVectorsAgain = false;

  private scheduleEventVectors(): void {
    if (this.eventVectorsRun) {
      this.eventVectorsAgain = true;
      return;
    }
    this.eventVectorsRun = (async () => {
      // One batch per turn of the lock, so a search never waits behind a long backlog.
      let done = false;
      do {
        this.eventVectorsAgain = false;
        if (this.closed) return;
        done = await this.exclusive(() => this.resilient(() => this.syncEventVectors(1))).catch(() => true);
      } while (!done || this.eventVectorsAgain);
    })().finally(() => {
      this.eventVectorsRun = null;
    });
  }

  /** Embeds and stores the vectors of up to `batches` × 256 events; true when none are left. */
  private async syncEventVectors(batches = Infinity): Promise<boolean> {
    for (let b = 0; b < batches; b++) {
      if (!this.vectors || this.vectorState !== "ok") return true;
      const todo = this.ngram.eventsNeedingVectors(256);
      if (todo.length === 0) return true;
      const meta = new Map(this.ngram.eventsByIds(todo.map((t) => t.eventId)).map((e) => [e.eventId, e]));
      let vectors: number[][];
      try {
        vectors = await this.embedder.embedDocuments(todo.map((t) => t.preview));
      } catch (err) {
        this.degrade(err);
        return true;
      }
      const ok = await this.withVectors(async (v) => {
        await v.upsert(
          "events",
          todo.map((t, i) => {
            const m = meta.get(t.eventId);
            return { id: t.eventId, vector: vectors[i]!, metadata: { threadId: m?.threadId ?? "", seq: m?.seq ?? 0, type: m?.type ?? "" } };
          }),
        );
        return true;
      });
      if (!ok) return true;
      this.ngram.markEventsVectorized(todo.map((t) => t.eventId));
    }
    return false;
  }

  /** Pulls events appended to the ledger since the last sync: of `threadId` when given, else of every thread. */
  private async syncLedger(threadId?: string): Promise<void> {
    const ledger = this.opts.ledger;
    if (!ledger) return;
    const only = threadId ?? this.opts.threadId;
    const threads = only ? [only] : (await ledger.threads()).map((t) => t.threadId);
    for (const thread of threads) {
      const events = await ledger.list(thread, { afterSeq: this.ngram.eventCursor(thread) });
      if (events.length) await this.indexEventsUnlocked(events);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Search
  // ------------------------------------------------------------------------------------------

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
    const k = Math.max(1, opts.k ?? 10);
    const scope = opts.scope ?? "code";
    // Checked again under the lock: an index started earlier (the runtime starts one at once)
    // may finish while this search waits for it, and then there is nothing left to do.
    if (!this.indexedOnce) await this.exclusive(() => this.resilient(async () => void (this.indexedOnce ? undefined : await this.indexUnlocked({}))));
    // A search of one thread's history needs only that thread's new events (not a scan of all threads).
    if (scope !== "code" && this.opts.ledger) await this.exclusive(() => this.resilient(() => this.syncLedger(opts.threadId)));
    return this.resilient(async () => {
      await this.maybeRecover();
      const t0 = performance.now();
      const timings: SearchTimings = { totalMs: 0, ngramMs: 0, embedMs: 0, vectorMs: 0 };
      const needVector = this.vectors !== null && this.vectorState === "ok";
      let qv: number[] | null = null;
      if (needVector) {
        const te = performance.now();
        try {
          qv = await this.embedder.embedQuery(query);
        } catch (err) {
          this.warnOnce(`embed:${errorMessage(err)}`, `embedding the query failed (${errorMessage(err)}); searching without vectors`);
        }
        timings.embedMs = performance.now() - te;
      }
      const code = scope === "events" ? [] : await this.searchCode(query, k, qv, timings, new Set(opts.sources ?? ["bm25", "path", "symbol", "vector", "history"]));
      const events = scope === "code" ? [] : await this.searchEvents(query, k, qv, timings, opts);
      timings.totalMs = performance.now() - t0;
      this.lastSearchTimings = timings;
      if (scope === "code") return code;
      if (scope === "events") return events;
      return [...code, ...events].sort((a, b) => b.score - a.score).slice(0, k);
    });
  }

  private async searchCode(query: string, k: number, qv: number[] | null, timings: SearchTimings, use: Set<SourceName>): Promise<CodeHit[]> {
    const terms = queryTerms(query);
    const tn = performance.now();
    const bm25 = use.has("bm25") ? this.ngram.searchChunks(terms, CANDIDATES) : [];
    const paths = use.has("path") ? this.ngram.searchPaths(terms, CANDIDATES) : [];
    const symbols = use.has("symbol") ? this.ngram.searchSymbols(terms, CANDIDATES) : [];
    const th = performance.now();
    const history = this.history && use.has("history") ? this.history.search(query, CANDIDATES) : [];
    timings.historyMs = performance.now() - th;
    const historyOf = new Map(history.map((h) => [h.path, h.commits]));
    timings.ngramMs += performance.now() - tn;
    const tv = performance.now();
    const vec = qv && use.has("vector") ? ((await this.withVectors((v) => v.query("code", qv, CANDIDATES))) ?? []) : [];
    timings.vectorMs += performance.now() - tv;
    const tf = performance.now();

    // Every chunk any source found, by key.
    const chunks = new Map<string, ChunkRow>();
    const chunkOf = (p: string, line: number): ChunkRow | undefined => {
      const rows = this.chunkCache(p);
      return rows.find((c) => c.startLine <= line && line <= c.endLine) ?? rows.find((c) => c.startLine >= line);
    };
    const bm25List = bm25.map((c: RankedChunk) => {
      const key = chunkKey(c.path, c.startLine, c.endLine);
      chunks.set(key, c);
      return { key, score: c.score };
    });
    const symbolList: Array<{ key: string; score: number }> = [];
    for (const s of symbols) {
      const c = chunkOf(s.path, s.startLine);
      if (!c) continue;
      const key = chunkKey(c.path, c.startLine, c.endLine);
      chunks.set(key, c);
      symbolList.push({ key, score: s.score });
    }
    const vectorList: Array<{ key: string; score: number }> = [];
    for (const m of vec) {
      const p = String(m.metadata.path ?? "");
      const c = chunkOf(p, Number(m.metadata.start));
      // A vector of a range that no longer exists (stale after an edit) is ignored.
      if (!c || c.startLine !== Number(m.metadata.start) || c.endLine !== Number(m.metadata.end)) continue;
      const key = chunkKey(c.path, c.startLine, c.endLine);
      chunks.set(key, c);
      vectorList.push({ key, score: m.similarity });
    }

    // Files are ranked first (each chunk source by the file's best chunk, plus path matches), so that
    // evidence from different parts of a file meets; chunks then take their file's score, scaled by
    // how they compare with the file's best chunk.
    const fileOfKey = (key: string) => key.slice(0, key.lastIndexOf("#"));
    const perFile = (list: Array<{ key: string; score: number }>) => list.map((x) => ({ key: fileOfKey(x.key), score: x.score }));
    const fileFused = reciprocalRankFusion([
      { source: "bm25", items: perFile(bm25List) },
      { source: "symbol", items: perFile(symbolList) },
      { source: "vector", items: perFile(vectorList) },
      { source: "path", items: paths.map((p) => ({ key: p.path, score: p.score })) },
      { source: "history", items: history.map((h) => ({ key: h.path, score: h.score })), weight: HISTORY_TUNING.weight },
    ]);
    const chunkFused = reciprocalRankFusion([
      { source: "bm25", items: bm25List },
      { source: "symbol", items: symbolList },
      { source: "vector", items: vectorList },
    ]);
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
      const first = this.chunkCache(f.key)[0];
      if (!first) continue;
      const key = chunkKey(first.path, first.startLine, first.endLine);
      chunks.set(key, first);
      const sources: HitSources = withoutHistory(f.sources);
      const commits = historyOf.get(f.key);
      if (commits) sources.history = commits;
      scored.push({ key, score: f.score, sources });
    }
    scored.sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : 1));

    // At most three ranges of one file, so that one big file cannot crowd out the rest.
    const perFileCount = new Map<string, number>();
    const hits: CodeHit[] = [];
    for (const s of scored) {
      if (hits.length >= k) break;
      const c = chunks.get(s.key)!;
      const n = perFileCount.get(c.path) ?? 0;
      if (n >= 3) continue;
      perFileCount.set(c.path, n + 1);
      hits.push({
        kind: "code",
        path: c.path,
        startLine: c.startLine,
        endLine: c.endLine,
        score: round(s.score * RRF_K, 4),
        sources: roundSources(s.sources),
        symbols: c.symbols,
        preview: "",
      });
    }
    this.fileCache.clear();
    for (const h of hits) h.preview = this.preview(h.path, h.startLine, h.endLine, query);
    timings.ngramMs += performance.now() - tf;
    return hits;
  }

  private readonly fileCache = new Map<string, ChunkRow[]>();
  private chunkCache(p: string): ChunkRow[] {
    let rows = this.fileCache.get(p);
    if (!rows) {
      rows = this.ngram.chunksOf(p);
      this.fileCache.set(p, rows);
    }
    return rows;
  }

  /**
   * Secrets in workspace files (a token in .env) must not end up in the index or in a preview. A
   * redaction that spans lines (a PEM block) would shift line numbers, so it is then done per line.
   */
  private redactKeepingLines(text: string): string {
    const redact = this.opts.redact;
    if (!redact) return text;
    const whole = redact(text);
    if (whole === text || whole.split("\n").length === text.split("\n").length) return whole;
    return text
      .split("\n")
      .map((l) => redact(l))
      .join("\n");
  }

  private preview(rel: string, start: number, end: number, query: string): string {
    let lines: string[];
    try {
      lines = this.redactKeepingLines(fs.readFileSync(path.join(this.workspace, rel), "utf8")).split("\n").slice(start - 1, end);
    } catch {
      return "";
    }
    // Start the preview at the first line that mentions a query term, when one does.
    const terms = queryTerms(query).map((t) => t.text);
    let from = lines.findIndex((l) => terms.some((t) => l.toLowerCase().includes(t)));
    if (from < 0) from = 0;
    return lines
      .slice(from, from + 4)
      .map((l, i) => `${start + from + i}| ${l.replace(/\r$/, "").slice(0, 160)}`)
      .join("\n");
  }

  private async searchEvents(query: string, k: number, qv: number[] | null, timings: SearchTimings, opts: SearchOptions): Promise<EventHit[]> {
    const threadId = opts.threadId ?? this.opts.threadId;
    const tn = performance.now();
    const bm25 = this.ngram.searchEvents(queryTerms(query), CANDIDATES, threadId);
    timings.ngramMs += performance.now() - tn;
    const tv = performance.now();
    const vec = qv ? ((await this.withVectors((v) => v.query("events", qv, CANDIDATES))) ?? []) : [];
    timings.vectorMs += performance.now() - tv;
    let allowed: Set<string> | null = null;
    if (opts.branchHead && this.opts.ledger) {
      // Only the candidates are checked against the branch: loading the whole branch costs O(history).
      const ids = [...new Set([...bm25.map((e) => e.eventId), ...vec.map((m) => m.id)])];
      allowed = await this.opts.ledger.onBranch(opts.branchHead, ids);
    }
    const keep = (id: string, thread: string) => (!threadId || thread === threadId) && (!allowed || allowed.has(id));
    const fused = reciprocalRankFusion([
      { source: "bm25", items: bm25.filter((e) => keep(e.eventId, e.threadId)).map((e) => ({ key: e.eventId, score: e.score })) },
      { source: "vector", items: vec.filter((m) => keep(m.id, String(m.metadata.threadId))).map((m) => ({ key: m.id, score: m.similarity })) },
    ]).slice(0, k);
    const rows = new Map(this.ngram.eventsByIds(fused.map((f) => f.key)).map((e) => [e.eventId, e]));
    const hits: EventHit[] = [];
    for (const f of fused) {
      const e = rows.get(f.key);
      if (!e) continue;
      hits.push({
        kind: "event",
        eventId: e.eventId,
        threadId: e.threadId,
        seq: e.seq,
        type: e.type,
        ts: e.ts,
        score: round(f.score * RRF_K, 4),
        sources: roundSources(f.sources),
        preview: e.preview.slice(0, 300),
      });
    }
    return hits;
  }

  async stats(): Promise<RetrieverStats> {
    const counts = this.ngram.counts();
    return {
      workspace: this.workspace,
      indexFile: this.indexFile,
      indexBytes: this.ngram.sizeBytes(),
      ...counts,
      lastIndex: this.lastReport,
      vector: {
        state: this.vectorState,
        store: this.vectors?.description ?? null,
        embedder: this.embedder.id,
        dimensions: this.embedder.dimensions,
        ...(this.vectorError ? { error: this.vectorError } : {}),
      },
      rebuiltBecause: this.ngram.rebuildReason,
      history: this.history?.getStatus() ?? { state: "off", detail: "disabled", head: null, commits: 0, shallow: false, partial: null },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.eventVectorsRun?.catch(() => {});
    this.closed = true;
    await this.lock.catch(() => {});
    this.ngram.close();
    if (this.vectors && !this.opts.vectorIndex) await this.vectors.close().catch(() => {});
    this.vectors = null;
    await this.embedder.close?.().catch(() => {});
  }
}

/** Source scores without the history score (a hit carries the commit subjects instead). */
function withoutHistory(s: SourceScores): HitSources {
  const { history: _h, ...rest } = s;
  return rest;
}

/** Factor on a test file's fused score (measured on the localization sets: 0.8 lifts MRR by ~0.05 on both). */
const TEST_DAMPING = 0.8;

/** Test files by the usual conventions (directories and file names, JS/TS and Python). */
export function isTestPath(rel: string): boolean {
  return (
    /(^|\/)(tests?|__tests__|specs?|__mocks__)\//i.test(rel) ||
    /\.(test|spec)\.[cm]?[jt]sx?$/i.test(rel) ||
    /(^|\/)(test_[^/]*\.py|[^/]*_test\.py|conftest\.py)$/.test(rel)
  );
}

/** The text embedded for a chunk: where it is and what it declares, then the code. */
function docText(rel: string, symbols: string[], body: string): string {
  return `${rel}\n${symbols.join(" ")}\n${body}`;
}

function chunkKey(rel: string, start: number, end: number): string {
  return `${rel}#${start}-${end}`;
}

function emptyReport(): IndexReport {
  return {
    files: 0,
    indexed: 0,
    unchanged: 0,
    removed: 0,
    skipped: { ignored: 0, binary: 0, huge: 0, unreadable: 0, vanished: 0 },
    invalidUtf8: { count: 0, paths: [] },
    vectorized: 0,
    durationMs: 0,
    vectorMs: 0,
    vectorsMissing: 0,
  };
}

function statOrNull(abs: string): fs.Stats | null {
  try {
    return fs.statSync(abs);
  } catch {
    return null;
  }
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function roundSources<T extends Record<string, number | string[] | undefined>>(s: T): T {
  const out: Record<string, unknown> = {};
  // Significant digits, not decimals: BM25 of a term found in most documents is tiny but not zero.
  for (const [k, v] of Object.entries(s)) out[k] = typeof v === "number" ? Number(v.toPrecision(4)) : v;
  return out as T;
}
