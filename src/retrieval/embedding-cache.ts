import type { Database } from "../sqlite/driver.js";
import type { EmbeddingCache } from "./embedders/openai.js";

const SCHEMA = "CREATE TABLE IF NOT EXISTS embed_cache (space TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (space, hash)) WITHOUT ROWID";

/**
 * Vectors by (embedder id, content hash) in index.db: a chunk already embedded is never sent to a
 * paid or slow endpoint again, whether the index was rebuilt, the run rewound or forked. Stored as
 * float32 (what every embedding model computes in); `db` is read at each call, as the retriever
 * replaces the handle when it rebuilds a corrupt index.
 */
export function sqliteEmbeddingCache(db: () => Database): EmbeddingCache {
  const ready = new WeakSet<Database>();
  const handle = () => {
    const d = db();
    if (!ready.has(d)) {
      d.exec(SCHEMA);
      ready.add(d);
    }
    return d;
  };
  return {
    get(space, hashes) {
      const out = new Map<string, number[]>();
      if (hashes.length === 0) return out;
      const rows = handle()
        .prepare("SELECT hash, vec FROM embed_cache WHERE space = ? AND hash IN (SELECT value FROM json_each(?))")
        .all(space, JSON.stringify(hashes)) as Array<{ hash: string; vec: Buffer }>;
      for (const r of rows) out.set(r.hash, Array.from(new Float32Array(r.vec.buffer, r.vec.byteOffset, r.vec.byteLength / 4)));
      return out;
    },
    put(space, entries) {
      const d = handle();
      const ins = d.prepare("INSERT OR REPLACE INTO embed_cache(space, hash, vec) VALUES (?, ?, ?)");
      d.transaction(() => {
        for (const e of entries) ins.run(space, e.hash, Buffer.from(new Float32Array(e.vector).buffer));
      })();
    },
  };
}
