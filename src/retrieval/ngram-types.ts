// The records the n-gram index stores and the ranked matches it returns.

/** What the index knows about one indexed file. */
export interface FileRecord {
  id: number;
  path: string;
  hash: string;
  size: number;
  mtimeMs: number;
  lang: string | null;
  lines: number;
  vecHash: string | null;
}

/** The part of a {@link FileRecord} that tells whether the file changed since it was indexed. */
export type FileStamp = Pick<FileRecord, "size" | "mtimeMs">;

/** A chunk to store: its range, the names of the symbols in it, and its text. */
export interface ChunkInput {
  startLine: number;
  endLine: number;
  symbols: string[];
  text: string;
}

/** A symbol to store (lines 1-based, inclusive). */
export interface SymbolInput {
  name: string;
  kind: string;
  container?: string;
  startLine: number;
  endLine: number;
}

/** A stored chunk. */
export interface ChunkRow {
  id: number;
  path: string;
  startLine: number;
  endLine: number;
  symbols: string[];
}

/** A ranked match from one source; `score` is higher-is-better. */
export interface RankedChunk extends ChunkRow {
  score: number;
}
export interface RankedPath {
  path: string;
  score: number;
}
export interface RankedSymbol {
  path: string;
  name: string;
  kind: string;
  container: string | null;
  startLine: number;
  endLine: number;
  score: number;
}

/** An event document to store. */
export interface EventDoc {
  eventId: string;
  threadId: string;
  seq: number;
  type: string;
  ts: string;
  /** Full text to index. */
  text: string;
  /** A short field naming what kind of event it is (type, tool, status, error class). */
  kind: string;
}
export interface RankedEvent {
  eventId: string;
  threadId: string;
  seq: number;
  type: string;
  ts: string;
  preview: string;
  score: number;
}
