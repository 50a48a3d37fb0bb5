import type Database from "better-sqlite3";

// The prepared statements of the n-gram index (ngram-index.ts), prepared once per open, not per call.

/** The prepared statements of an n-gram index. */
export type NgramStatements = ReturnType<typeof prepareNgramStatements>;

/** Prepares every fixed statement the n-gram index runs. */
export function prepareNgramStatements(db: Database.Database) {
  return {
    getMeta: db.prepare("SELECT value FROM meta WHERE key = ?").pluck(),
    setMeta: db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)"),
    allFiles: db.prepare("SELECT id, path, hash, size, mtime_ms AS mtimeMs, lang, lines, vec_hash AS vecHash FROM files"),
    getFile: db.prepare("SELECT id, path, hash, size, mtime_ms AS mtimeMs, lang, lines, vec_hash AS vecHash FROM files WHERE path = ?"),
    // A range on the path's unique index: "a/b/" .. "a/b0" ('0' follows '/') is everything under a/b/.
    pathsBetween: db.prepare("SELECT path FROM files WHERE path >= ? AND path < ?").pluck(),
    needingVectors: db.prepare("SELECT id, path, hash, size, mtime_ms AS mtimeMs, lang, lines, vec_hash AS vecHash FROM files WHERE vec_hash IS NOT hash ORDER BY id"),
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
    eventsByIds: db.prepare("SELECT event_id AS eventId, thread_id AS threadId, seq, type, ts, preview FROM events WHERE event_id IN (SELECT value FROM json_each(?))"),
  };
}
