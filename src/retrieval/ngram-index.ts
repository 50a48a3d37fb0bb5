import fs from "node:fs";
import path from "node:path";
import { Database } from "../sqlite/driver.js";
import { ensurePrivateDir, ensurePrivateFile } from "../private-files.js";
import { ftsQuery, wordsColumn, type QueryTerm } from "./tokens.js";
import { asIndexError, INDEX_APPLICATION_ID, INDEX_MMAP_BYTES, INDEX_SCHEMA_VERSION, moveAside, openExisting, SCHEMA } from "./ngram-schema.js";
import type { ChunkInput, ChunkRow, EventDoc, FileRecord, FileStamp, RankedChunk, RankedEvent, RankedPath, RankedSymbol, SymbolInput } from "./ngram-types.js";

export { INDEX_APPLICATION_ID, INDEX_SCHEMA_VERSION } from "./ngram-schema.js";
export type * from "./ngram-types.js";

const PREVIEW_CHARS = 600;

/**
 * The n-gram side of the retriever: SQLite FTS5 with the trigram tokenizer over file paths, symbol
 * names, symbol-aligned chunks and ledger events, in its own file (`<stateDir>/index.db`). It is
 * derived data: a corrupt or outdated file is moved aside and rebuilt from the workspace.
 */
export class NgramIndex {
  /** True when opening found an unusable file and started a fresh one. */
  readonly rebuilt: boolean;
  readonly rebuildReason: string | null;
  private readonly stmts: ReturnType<NgramIndex["prepare"]>;

  private constructor(
    readonly db: Database,
    readonly file: string,
    rebuildReason: string | null,
  ) {
    this.rebuilt = rebuildReason !== null;
    this.rebuildReason = rebuildReason;
    this.stmts = this.prepare();
  }

  /** Opens (creating when missing) the index at `file`; an unusable file is moved to `<file>.corrupt` and recreated. */
  static open(file: string): NgramIndex {
    ensurePrivateDir(path.dirname(file));
    let reason: string | null = null;
    let db: Database | undefined;
    if (fs.existsSync(file)) {
      const existing = openExisting(file);
      if ("db" in existing) db = existing.db;
      else {
        reason = existing.problem;
        moveAside(file);
      }
    }
    // Owner-only, like state.db: the index holds the workspace's text.
    ensurePrivateFile(file);
    db ??= new Database(file);
    try {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      // Pages are read through a memory map instead of copied into SQLite's page cache. After this
      // process spawns a child (git, a sandboxed command), libuv's fork() makes the next write to
      // each of its pages fault once; copying pages into the cache is such a write, reading a map is
      // not. On vite (2,612 files) a search right after a checkout took 50–60 ms p50 with the map
      // against 72–97 ms without (README). Nothing truncates index.db in place (a rebuild moves it aside or
      // unlinks it), which is what would make a mapped read fail.
      db.pragma(`mmap_size = ${INDEX_MMAP_BYTES}`);
      db.pragma(`application_id = ${INDEX_APPLICATION_ID}`);
      db.exec(SCHEMA);
      db.prepare("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)").run(String(INDEX_SCHEMA_VERSION));
      db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('open', '1')").run();
    } catch (err) {
      db.close();
      throw asIndexError(err, file);
    }
    return new NgramIndex(db, file, reason);
  }

  private prepare() {
    const db = this.db;
    return {
      getMeta: db.prepare("SELECT value FROM meta WHERE key = ?").pluck(),
      setMeta: db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)"),
      allStamps: db.prepare("SELECT path, size, mtime_ms FROM files").raw(),
      getFile: db.prepare("SELECT id, path, hash, size, mtime_ms AS mtimeMs, lang, lines, vec_hash AS vecHash FROM files WHERE path = ?"),
      // A range on the path's unique index: "a/b/" .. "a/b0" ('0' follows '/') is everything under a/b/.
      pathsBetween: db.prepare("SELECT path FROM files WHERE path >= ? AND path < ?").pluck(),
      needingVectors: db.prepare(
        "SELECT id, path, hash, size, mtime_ms AS mtimeMs, lang, lines, vec_hash AS vecHash FROM files WHERE vec_hash IS NOT hash ORDER BY id",
      ),
      needingVectorsOf: db.prepare(
        "SELECT id, path, hash, size, mtime_ms AS mtimeMs, lang, lines, vec_hash AS vecHash FROM files WHERE path IN (SELECT value FROM json_each(?)) AND vec_hash IS NOT hash ORDER BY id",
      ),
      countNeedingVectors: db.prepare("SELECT COUNT(*) FROM files WHERE vec_hash IS NOT hash").pluck(),
      anyVecClaimed: db.prepare("SELECT EXISTS (SELECT 1 FROM files WHERE vec_hash IS NOT NULL)").pluck(),
      anyFile: db.prepare("SELECT EXISTS (SELECT 1 FROM files)").pluck(),
      insertFile: db.prepare("INSERT INTO files(path, hash, size, mtime_ms, lang, lines, vec_hash) VALUES (?, ?, ?, ?, ?, ?, NULL)"),
      deleteFile: db.prepare("DELETE FROM files WHERE id = ?"),
      touchFile: db.prepare("UPDATE files SET size = ?, mtime_ms = ? WHERE path = ?"),
      setVecHash: db.prepare("UPDATE files SET vec_hash = ? WHERE path = ?"),
      clearVec: db.prepare("UPDATE files SET vec_hash = NULL"),
      chunkIdsOf: db.prepare("SELECT id FROM chunks WHERE file_id = ?").pluck(),
      symbolIdsOf: db.prepare("SELECT id FROM symbols WHERE file_id = ?").pluck(),
      insertChunk: db.prepare("INSERT INTO chunks(file_id, start_line, end_line, symbols) VALUES (?, ?, ?, ?)"),
      insertChunkFts: db.prepare("INSERT INTO chunks_fts(rowid, words, symbols, path) VALUES (?, ?, ?, ?)"),
      deleteChunks: db.prepare("DELETE FROM chunks WHERE file_id = ?"),
      deleteChunkFts: db.prepare("DELETE FROM chunks_fts WHERE rowid = ?"),
      insertSymbol: db.prepare("INSERT INTO symbols(file_id, name, kind, container, start_line, end_line) VALUES (?, ?, ?, ?, ?, ?)"),
      insertSymbolFts: db.prepare("INSERT INTO symbols_fts(rowid, name) VALUES (?, ?)"),
      deleteSymbols: db.prepare("DELETE FROM symbols WHERE file_id = ?"),
      deleteSymbolFts: db.prepare("DELETE FROM symbols_fts WHERE rowid = ?"),
      insertPathFts: db.prepare("INSERT INTO paths_fts(rowid, dirs, base) VALUES (?, ?, ?)"),
      deletePathFts: db.prepare("DELETE FROM paths_fts WHERE rowid = ?"),
      chunksOfPath: db.prepare(
        "SELECT c.id, f.path, c.start_line AS startLine, c.end_line AS endLine, c.symbols FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? ORDER BY c.start_line",
      ),
      counts: db.prepare(
        "SELECT (SELECT COUNT(*) FROM files) AS files, (SELECT COUNT(*) FROM chunks) AS chunks, (SELECT COUNT(*) FROM symbols) AS symbols, (SELECT COUNT(*) FROM events) AS events",
      ),
      eventCount: db.prepare("SELECT COUNT(*) FROM events").pluck(),
      eventExists: db.prepare("SELECT id FROM events WHERE event_id = ?").pluck(),
      insertEvent: db.prepare("INSERT INTO events(event_id, thread_id, seq, type, ts, preview) VALUES (?, ?, ?, ?, ?, ?)"),
      insertEventFts: db.prepare("INSERT INTO events_fts(rowid, words, kind) VALUES (?, ?, ?)"),
      maxSeq: db.prepare("SELECT MAX(seq) FROM events WHERE thread_id = ?").pluck(),
      eventsNeedingVectors: db.prepare("SELECT event_id AS eventId, preview FROM events WHERE vec = 0 ORDER BY id LIMIT ?"),
      setEventVec: db.prepare("UPDATE events SET vec = 1 WHERE event_id = ?"),
      clearEventVec: db.prepare("UPDATE events SET vec = 0"),
      // The searches' statements are prepared once, not per query.
      searchChunks: db.prepare(
        `SELECT c.id, f.path, c.start_line AS startLine, c.end_line AS endLine, c.symbols, -r.rank AS score
         FROM (SELECT rowid, bm25(chunks_fts, 1.0, 2.0, 0.5) AS rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?) r
         JOIN chunks c ON c.id = r.rowid JOIN files f ON f.id = c.file_id ORDER BY r.rank`,
      ),
      searchPaths: db.prepare(
        `SELECT f.path, -r.rank AS score FROM (SELECT rowid, bm25(paths_fts, 1.0, 2.5) AS rank FROM paths_fts WHERE paths_fts MATCH ? ORDER BY rank LIMIT ?) r
         JOIN files f ON f.id = r.rowid ORDER BY r.rank`,
      ),
      searchSymbols: db.prepare(
        `SELECT f.path, s.name, s.kind, s.container, s.start_line AS startLine, s.end_line AS endLine, -r.rank AS score
         FROM (SELECT rowid, bm25(symbols_fts) AS rank FROM symbols_fts WHERE symbols_fts MATCH ? ORDER BY rank LIMIT ?) r
         JOIN symbols s ON s.id = r.rowid JOIN files f ON f.id = s.file_id ORDER BY r.rank`,
      ),
      // The chunks of many files in one statement (a search asks for those of every candidate file).
      chunksOfPaths: db.prepare(
        "SELECT c.id, f.path, c.start_line AS startLine, c.end_line AS endLine, c.symbols FROM files f JOIN chunks c ON c.file_id = f.id WHERE f.path IN (SELECT value FROM json_each(?)) ORDER BY c.file_id, c.start_line, c.id",
      ),
      eventsByIds: db.prepare(
        "SELECT event_id AS eventId, thread_id AS threadId, seq, type, ts, preview FROM events WHERE event_id IN (SELECT value FROM json_each(?))",
      ),
    };
  }

  getMeta(key: string): string | undefined {
    return this.run(() => this.stmts.getMeta.get(key) as string | undefined);
  }

  setMeta(key: string, value: string): void {
    this.run(() => this.stmts.setMeta.run(key, value));
  }

  /**
   * Rows of the files table handed to the caller so far. A refresh must cost what changed, not the
   * size of the workspace: tests read this to prove it never loads the whole table.
   */
  fileRowsRead = 0;

  private counted<T extends unknown[] | undefined>(rows: T): T {
    this.fileRowsRead += rows === undefined ? 0 : rows.length;
    return rows;
  }

  /**
   * Size and mtime of every indexed file, keyed by workspace-relative path (a full index needs them
   * all; a refresh must not). Only what the freshness check compares: the whole record of a file
   * that changed is read with {@link fileRecord}.
   */
  fileStamps(): Map<string, FileStamp> {
    return this.run(() => {
      const rows = this.counted(this.stmts.allStamps.all() as Array<[string, number, number]>);
      const stamps = new Map<string, FileStamp>();
      for (const [p, size, mtimeMs] of rows) stamps.set(p, { size, mtimeMs });
      return stamps;
    });
  }

  fileRecord(rel: string): FileRecord | undefined {
    const rec = this.run(() => this.stmts.getFile.get(rel) as FileRecord | undefined);
    this.fileRowsRead += rec ? 1 : 0;
    return rec;
  }

  /** Indexed paths under a directory (`dir` workspace-relative, with or without a trailing slash). */
  pathsUnder(dir: string): string[] {
    const prefix = dir.endsWith("/") ? dir : `${dir}/`;
    return this.run(() => this.counted(this.stmts.pathsBetween.all(prefix, `${prefix.slice(0, -1)}0`) as string[]));
  }

  /** True when at least one file is indexed. */
  hasFiles(): boolean {
    return this.run(() => this.stmts.anyFile.get() === 1);
  }

  /** Records that a file's size/mtime changed while its content hash did not. */
  touch(rel: string, size: number, mtimeMs: number): void {
    this.run(() => this.stmts.touchFile.run(size, mtimeMs, rel));
  }

  /**
   * Replaces everything stored for a file (record, chunks, symbols, path entry) in one transaction.
   * Its vector state is reset: the caller re-embeds it.
   */
  putFile(
    rec: { path: string; hash: string; size: number; mtimeMs: number; lang: string | null; lines: number },
    chunks: ChunkInput[],
    symbols: SymbolInput[],
  ): void {
    this.transaction(() => {
      this.removeFileSync(rec.path);
      const fileId = Number(this.stmts.insertFile.run(rec.path, rec.hash, rec.size, rec.mtimeMs, rec.lang, rec.lines).lastInsertRowid);
      const pathWords = wordsColumn(rec.path);
      const slash = rec.path.lastIndexOf("/");
      this.stmts.insertPathFts.run(fileId, wordsColumn(rec.path.slice(0, slash + 1)), wordsColumn(rec.path.slice(slash + 1)));
      for (const c of chunks) {
        const id = Number(this.stmts.insertChunk.run(fileId, c.startLine, c.endLine, c.symbols.join(" ")).lastInsertRowid);
        this.stmts.insertChunkFts.run(id, wordsColumn(c.text), wordsColumn(c.symbols.join(" ")), pathWords);
      }
      for (const s of symbols) {
        const id = Number(this.stmts.insertSymbol.run(fileId, s.name, s.kind, s.container ?? null, s.startLine, s.endLine).lastInsertRowid);
        this.stmts.insertSymbolFts.run(id, wordsColumn(s.name));
      }
    });
  }

  /** Forgets a file; returns whether it was indexed. */
  removeFile(rel: string): boolean {
    return this.transaction(() => this.removeFileSync(rel));
  }

  private removeFileSync(rel: string): boolean {
    const rec = this.stmts.getFile.get(rel) as FileRecord | undefined;
    if (!rec) return false;
    for (const id of this.stmts.chunkIdsOf.all(rec.id) as number[]) this.stmts.deleteChunkFts.run(id);
    for (const id of this.stmts.symbolIdsOf.all(rec.id) as number[]) this.stmts.deleteSymbolFts.run(id);
    this.stmts.deletePathFts.run(rec.id);
    this.stmts.deleteChunks.run(rec.id);
    this.stmts.deleteSymbols.run(rec.id);
    this.stmts.deleteFile.run(rec.id);
    return true;
  }

  chunksOf(rel: string): ChunkRow[] {
    return this.run(() => (this.stmts.chunksOfPath.all(rel) as Array<Omit<ChunkRow, "symbols"> & { symbols: string }>).map(toChunkRow));
  }

  /**
   * The chunks of each of these files in line order, as {@link chunksOf} gives them, read in one
   * statement (a search needs those of every candidate file: one statement, not one per file).
   * Indexed files only: a path the index does not know is absent from the map.
   */
  chunksOfMany(rels: Iterable<string>): Map<string, ChunkRow[]> {
    const out = new Map<string, ChunkRow[]>();
    const list = [...new Set(rels)];
    if (list.length === 0) return out;
    const rows = this.run(() => this.stmts.chunksOfPaths.all(JSON.stringify(list)) as Array<Omit<ChunkRow, "symbols"> & { symbols: string }>);
    for (const r of rows) {
      let l = out.get(r.path);
      if (!l) out.set(r.path, (l = []));
      l.push(toChunkRow(r));
    }
    return out;
  }

  /** Marks a file's chunks as present in the vector index at this content hash (null: absent). */
  setVectorHash(rel: string, hash: string | null): void {
    this.run(() => this.stmts.setVecHash.run(hash, rel));
  }

  /** Forgets which files and events have vectors (the vector index was replaced or lost). */
  clearVectorState(): void {
    this.transaction(() => {
      this.stmts.clearVec.run();
      this.stmts.clearEventVec.run();
    });
  }

  /** Files whose current chunks are not in the vector index yet (of `only`, when given), in index order. */
  filesNeedingVectors(only?: string[]): FileRecord[] {
    return this.run(() => this.counted((only ? this.stmts.needingVectorsOf.all(JSON.stringify(only)) : this.stmts.needingVectors.all()) as FileRecord[]));
  }

  /** How many files lack current vectors (counted in SQLite, not loaded). */
  countFilesNeedingVectors(): number {
    return this.run(() => this.stmts.countNeedingVectors.get() as number);
  }

  /** True when some file is marked as having vectors (then an empty vector store means they were lost). */
  anyVectorClaimed(): boolean {
    return this.run(() => this.stmts.anyVecClaimed.get() === 1);
  }

  /** Best chunks by BM25 over their words, symbol names and path. */
  searchChunks(terms: QueryTerm[], limit: number): RankedChunk[] {
    const q = ftsQuery(terms);
    if (!q) return [];
    return this.run(() =>
      (this.stmts.searchChunks.all(q, limit) as Array<Omit<ChunkRow, "symbols"> & { symbols: string; score: number }>).map((r) => ({
        ...toChunkRow(r),
        score: r.score,
      })),
    );
  }

  /** Best files by BM25 over their path (the file name weighs more than the directories). */
  searchPaths(terms: QueryTerm[], limit: number): RankedPath[] {
    const q = ftsQuery(terms);
    if (!q) return [];
    return this.run(() => this.stmts.searchPaths.all(q, limit) as RankedPath[]);
  }

  /** Best symbols by BM25 over their names (short documents: an exact name match ranks first). */
  searchSymbols(terms: QueryTerm[], limit: number): RankedSymbol[] {
    const q = ftsQuery(terms);
    if (!q) return [];
    return this.run(() => this.stmts.searchSymbols.all(q, limit) as RankedSymbol[]);
  }

  /** Stores events not stored yet; returns how many were new. */
  putEvents(docs: EventDoc[]): number {
    return this.transaction(() => {
      let added = 0;
      for (const d of docs) {
        if (this.stmts.eventExists.get(d.eventId) !== undefined) continue;
        const id = Number(this.stmts.insertEvent.run(d.eventId, d.threadId, d.seq, d.type, d.ts, d.text.slice(0, PREVIEW_CHARS)).lastInsertRowid);
        this.stmts.insertEventFts.run(id, wordsColumn(d.text), wordsColumn(d.kind));
        added++;
      }
      return added;
    });
  }

  /**
   * Forgets every indexed event of a thread (a run deleted whole); returns how many there were. The
   * thread is remembered until its event vectors are gone too (`forgottenThreads`).
   */
  deleteThreadEvents(threadId: string): number {
    return this.transaction(() => {
      this.db.prepare("DELETE FROM events_fts WHERE rowid IN (SELECT id FROM events WHERE thread_id = ?)").run(threadId);
      this.db.prepare("INSERT OR IGNORE INTO forgotten_threads (thread_id) VALUES (?)").run(threadId);
      return this.db.prepare("DELETE FROM events WHERE thread_id = ?").run(threadId).changes;
    });
  }

  /** Which of these threads have events in the index. */
  indexedThreadsAmong(threadIds: string[]): string[] {
    return this.run(
      () =>
        this.db
          .prepare("SELECT DISTINCT thread_id FROM events WHERE thread_id IN (SELECT value FROM json_each(?))")
          .pluck()
          .all(JSON.stringify(threadIds)) as string[],
    );
  }

  /** Deleted runs whose event vectors may still be in the vector store. */
  forgottenThreads(): string[] {
    return this.run(() => this.db.prepare("SELECT thread_id FROM forgotten_threads ORDER BY thread_id").pluck().all() as string[]);
  }

  /** The vectors of these deleted runs are gone from the vector store. */
  clearForgotten(threadIds: string[]): void {
    this.transaction(() => {
      const del = this.db.prepare("DELETE FROM forgotten_threads WHERE thread_id = ?");
      for (const id of threadIds) del.run(id);
    });
  }

  /** Highest seq of a thread's indexed events (0 when none). */
  eventCursor(threadId: string): number {
    return this.run(() => (this.stmts.maxSeq.get(threadId) as number | null) ?? 0);
  }

  eventsNeedingVectors(limit: number): Array<{ eventId: string; preview: string }> {
    return this.run(() => this.stmts.eventsNeedingVectors.all(limit) as Array<{ eventId: string; preview: string }>);
  }

  markEventsVectorized(ids: string[]): void {
    this.transaction(() => {
      for (const id of ids) this.stmts.setEventVec.run(id);
    });
  }

  eventsByIds(ids: string[]): Omit<RankedEvent, "score">[] {
    return this.run(() => this.stmts.eventsByIds.all(JSON.stringify(ids)) as Omit<RankedEvent, "score">[]);
  }

  /** Best events by BM25 over their text and kind, optionally of one thread. */
  private eventDf = new Map<string, number>();
  private eventDfAt = 0;

  /** How many events contain a word (cached; recounted after the history grew by 10%). */
  private eventWordDf(word: string, total: number): number {
    if (total > this.eventDfAt * 1.1 + 100) {
      this.eventDf.clear();
      this.eventDfAt = total;
    }
    let df = this.eventDf.get(word);
    if (df === undefined) {
      df = (this.db.prepare("SELECT count(*) AS n FROM events_fts WHERE events_fts MATCH ?").get(`"${word}"`) as { n: number }).n;
      this.eventDf.set(word, df);
    }
    return df;
  }

  searchEvents(terms: QueryTerm[], limit: number, threadId?: string): RankedEvent[] {
    let words = [...new Set(terms.map((t) => t.text.replace(/"/g, "").trim()).filter((t) => t.length > 0))];
    // Words in a large share of the history say little (their IDF is near zero) but cost the most to
    // rank: they are left out, as a common-terms query would, keeping at least the two rarest.
    const total = this.run(() => this.stmts.eventCount.get() as number);
    if (total > 2000 && words.length > 2) {
      const df = new Map(words.map((w) => [w, this.run(() => this.eventWordDf(w, total))]));
      const rare = words.filter((w) => df.get(w)! <= total * 0.1);
      words = rare.length >= 2 ? rare : [...words].sort((a, b) => df.get(a)! - df.get(b)!).slice(0, 2);
    }
    const q = words.length ? words.map((w) => `"${w}"`).join(" OR ") : null;
    if (!q) return [];
    const filter = threadId === undefined ? "" : "WHERE e.thread_id = ?";
    const args: unknown[] = threadId === undefined ? [q, limit] : [q, limit * 4, threadId];
    return this.run(() =>
      (
        this.db
          .prepare(
            `SELECT e.event_id AS eventId, e.thread_id AS threadId, e.seq, e.type, e.ts, e.preview, -r.rank AS score
             FROM (SELECT rowid, bm25(events_fts, 1.0, 0.5) AS rank FROM events_fts WHERE events_fts MATCH ? ORDER BY rank LIMIT ?) r
             JOIN events e ON e.id = r.rowid ${filter} ORDER BY r.rank`,
          )
          .all(...args) as RankedEvent[]
      ).slice(0, limit),
    );
  }

  counts(): { files: number; chunks: number; symbols: number; events: number } {
    return this.run(() => this.stmts.counts.get() as { files: number; chunks: number; symbols: number; events: number });
  }

  /** Merges the FTS b-trees after a bulk load: fewer segments, faster queries. */
  optimize(): void {
    this.run(() => {
      for (const t of ["chunks_fts", "paths_fts", "symbols_fts", "events_fts"]) this.db.exec(`INSERT INTO ${t}(${t}) VALUES ('optimize')`);
    });
  }

  /** Folds the write-ahead log back into the file after a bulk load (keeps index.db-wal small). */
  checkpoint(): void {
    this.run(() => this.db.pragma("wal_checkpoint(TRUNCATE)"));
  }

  /** Runs `fn` in one write transaction (much faster than one per statement for bulk loads). */
  transaction<T>(fn: () => T): T {
    return this.run(() => this.db.transaction(fn)());
  }

  sizeBytes(): number {
    return ["", "-wal"].reduce((n, s) => n + (fs.statSync(this.file + s, { throwIfNoEntry: false })?.size ?? 0), 0);
  }

  close(): void {
    if (!this.db.open) return;
    try {
      this.db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('open', '0')").run();
    } catch {
      // closing must not fail because the file went bad; the next open checks it
    }
    this.db.close();
  }

  /** Maps SQLite's corruption errors to {@link IndexCorruptError}, which the retriever answers with a rebuild. */
  private run<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw asIndexError(err, this.file);
    }
  }
}

function toChunkRow(r: Omit<ChunkRow, "symbols"> & { symbols: string | string[] }): ChunkRow {
  return {
    id: r.id,
    path: r.path,
    startLine: r.startLine,
    endLine: r.endLine,
    symbols: Array.isArray(r.symbols) ? r.symbols : r.symbols ? r.symbols.split(" ") : [],
  };
}
