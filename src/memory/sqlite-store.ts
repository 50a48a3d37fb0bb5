import type { Database } from "../sqlite/driver.js";
import { defaultRedactor, type Redactor } from "../secrets.js";
import { SEP, listNamespaces, matches, nsKey, nsOf, queryWords, textOf } from "./store-common.js";
import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
} from "@langchain/langgraph-checkpoint";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ll_store (
  namespace TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (namespace, key)
);
CREATE VIRTUAL TABLE IF NOT EXISTS ll_store_fts USING fts5(namespace UNINDEXED, key UNINDEXED, text, tokenize = 'porter unicode61');
`;

/** An FTS5 query matching any of the words of free text (quoted, so no syntax leaks through). */
export function ftsQuery(text: string): string | null {
  const words = queryWords(text);
  return words.length ? words.map((w) => `"${w}"`).join(" OR ") : null;
}

/**
 * LangGraph's BaseStore on SQLite (the run's state database), with full-text `query` search (BM25)
 * instead of embeddings: long-term memory must work offline and survive across runs.
 */
export class SqliteStore extends BaseStore {
  /** `redactor`: applied to every stored value (any graph node, or a LangGraph server client, can put). */
  constructor(
    private readonly db: Database,
    private readonly redactor: Redactor = defaultRedactor,
  ) {
    super();
    if (!db.readonly) db.exec(SCHEMA);
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    const run = this.db.transaction(() => {
      for (const op of operations) {
        if ("value" in op) results.push(this.doPut(op as PutOperation));
        else if ("key" in op) results.push(this.doGet(op as GetOperation));
        else if ("namespacePrefix" in op) results.push(this.doSearch(op as SearchOperation));
        else results.push(this.doList(op as ListNamespacesOperation));
      }
    });
    run();
    return results as OperationResults<Op>;
  }

  private toItem(r: { namespace: string; key: string; value: string; created_at: string; updated_at: string }): Item {
    return {
      namespace: nsOf(r.namespace),
      key: r.key,
      value: JSON.parse(r.value),
      createdAt: new Date(r.created_at),
      updatedAt: new Date(r.updated_at),
    };
  }

  private doGet(op: GetOperation): Item | null {
    const r = this.db.prepare("SELECT * FROM ll_store WHERE namespace = ? AND key = ?").get(nsKey(op.namespace), op.key) as
      { namespace: string; key: string; value: string; created_at: string; updated_at: string } | undefined;
    return r ? this.toItem(r) : null;
  }

  private doPut(op: PutOperation): void {
    const ns = nsKey(op.namespace);
    this.db.prepare("DELETE FROM ll_store_fts WHERE namespace = ? AND key = ?").run(ns, op.key);
    if (op.value === null) {
      this.db.prepare("DELETE FROM ll_store WHERE namespace = ? AND key = ?").run(ns, op.key);
      return;
    }
    op = { ...op, value: this.redactor.redactDeep(op.value) };
    const now = new Date().toISOString();
    this.db
      .prepare(
        `INSERT INTO ll_store (namespace, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      )
      .run(ns, op.key, JSON.stringify(op.value), now, now);
    if (op.index !== false) this.db.prepare("INSERT INTO ll_store_fts (namespace, key, text) VALUES (?, ?, ?)").run(ns, op.key, textOf(op.value));
  }

  private doSearch(op: SearchOperation): SearchItem[] {
    const prefix = nsKey(op.namespacePrefix);
    const like = prefix === "" ? "%" : `${prefix.replace(/[%_\\]/g, "\\$&")}%`;
    const limit = op.limit ?? 10;
    const offset = op.offset ?? 0;
    const q = op.query ? ftsQuery(op.query) : null;
    type Row = { namespace: string; key: string; value: string; created_at: string; updated_at: string; score?: number };
    let rows: Row[];
    if (q) {
      rows = this.db
        .prepare(
          `SELECT s.*, bm25(ll_store_fts) AS score FROM ll_store_fts f
           JOIN ll_store s ON s.namespace = f.namespace AND s.key = f.key
           WHERE ll_store_fts MATCH ? AND f.namespace LIKE ? ESCAPE '\\' ORDER BY score`,
        )
        .all(q, like) as Row[];
    } else {
      rows = this.db.prepare("SELECT * FROM ll_store WHERE namespace LIKE ? ESCAPE '\\' ORDER BY updated_at DESC").all(like) as Row[];
    }
    return rows
      .filter((r) => r.namespace === prefix || prefix === "" || r.namespace.startsWith(prefix + SEP) || r.namespace === prefix)
      .map((r) => ({ ...this.toItem(r), score: r.score !== undefined ? -r.score : undefined }))
      .filter((item) => matches(item.value, op.filter))
      .slice(offset, offset + limit);
  }

  private doList(op: ListNamespacesOperation): string[][] {
    const all = (this.db.prepare("SELECT DISTINCT namespace FROM ll_store ORDER BY namespace").all() as { namespace: string }[]).map((r) => nsOf(r.namespace));
    return listNamespaces(all, op);
  }
}
