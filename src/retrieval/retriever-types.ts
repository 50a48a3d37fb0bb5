// The retriever's public types, shared by the facade (hybrid.ts) and the modules it is made of.
import type { Ledger } from "../ledger/port.js";
import type { LedgerEvent } from "../state.js";
import type { Embedder } from "./embedders/port.js";
import type { SourceName, SourceScores } from "./fusion.js";
import type { HistorySettings, HistoryStatus } from "./history.js";
import type { CodeSearcher, SearchHit } from "./port.js";
import type { VectorIndex } from "./vector-index.js";

/** Files larger than this are not indexed (generated code, data, bundles). */
export const MAX_FILE_BYTES = 1024 * 1024;

/**
 * The sources of a code search that needs no vector: the n-gram index (chunks, paths, symbols) and
 * git history. Such a search waits only for the n-gram rows, not for the vector store.
 */
export const SOURCES_WITHOUT_VECTORS: readonly SourceName[] = ["bm25", "path", "symbol", "history"];

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
  /** Why the vector half was left out of this search (vectorsBefore could not be honoured). */
  lexicalOnly?: string;
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
  /**
   * The vector half of an event search sees only the thread's events with seq below this, and waits
   * (bounded) for their vectors first, so its answer depends on the ledger, not on how far the
   * background embedding got. Later events are found by the n-gram half only. Needs a thread.
   */
  vectorsBefore?: number;
  /** Diagnostics and ablations: fuse only these sources (default all). */
  sources?: readonly SourceName[];
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
  /** The embedder's id; while the configured one could not start, its spec (`openai:<model>`). */
  embedder: string;
  /** Null while the configured embedder could not start (its dimension is not known yet). */
  dimensions: number | null;
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
  /** Vector side: sending the query, then the wait left after the n-gram side it overlaps with. */
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
  /**
   * The revision line whose vectors a shared Chroma server (chromaUrl / CHROMA_URL) keeps apart from
   * every other line of the same repository: the thread's fork root (default "main"). See
   * collection-naming.ts. The embedded server is per state dir and ignores it.
   */
  vectorLine?: string;
  /** Where `xenova:` models are looked up. */
  modelsDir?: string;
  /** `"off"` disables vectors; a VectorIndex replaces Chroma (tests, benchmarks). */
  vectorIndex?: VectorIndex | "off";
  /** Called once per problem (vector store down, index rebuilt, …); default: a line on stderr. */
  onWarning?: (message: string) => void;
  /** Time limit for the embedded Chroma server to come up. */
  chromaStartTimeoutMs?: number;
  /**
   * "start" (default) starts the workspace's embedded Chroma server when none runs. "running" takes
   * vectors only from a server that already runs (chromaUrl / CHROMA_URL, or the embedded one of
   * another process) and otherwise searches the n-gram and path index alone: a one-off search
   * (`ledgerloop search`) must not pay for starting a server.
   */
  vectorServer?: "start" | "running";
  /**
   * Connect to the vector store in the background: creating the retriever returns at once, and the
   * first index or search waits for the connection (a run starts while Chroma comes up).
   */
  connectInBackground?: boolean;
  /**
   * Connect to the vector store (starting the embedded Chroma server) only when first needed: after
   * the first full index has stored the files, or a search or write that may use vectors. For a new
   * run, whose first prompt searches without vectors: the server's start and the client's loading
   * then do not compete with that prompt for the CPU. The caller starts a full index at once.
   */
  connectAfterFiles?: boolean;
  /** How long a failed vector side (store or embedder) waits before it is tried again (default 30 s). */
  vectorRetryMs?: number;
  /** Applied to file text before it is indexed or previewed (the runtime's secret redactor), and to commit messages. */
  redact?: (text: string) => string;
  /** Bounds of the git-history source, or false to leave history out (default: on in a git workspace). */
  history?: HistorySettings | false;
}
