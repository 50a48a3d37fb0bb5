import type pg from "pg";
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
import { inTransaction } from "./pg-db.js";
import { defaultRedactor, type Redactor } from "../secrets.js";
import { SEP, listNamespaces, matches, nsKey, nsOf, queryWords, textOf } from "../memory/store-common.js";

interface Row {
  namespace: string;
  key: string;
  value: string;
  created_at: string;
  updated_at: string;
  score?: number;
}

/**
 * LangGraph's BaseStore on PostgreSQL, with the SqliteStore's contract: values redacted before
 * they are stored, `query` matching items that share any word with it (stemmed, best first),
 * namespace prefixes matched label by label.
 *
 * Not the package's PostgresStore: without an embedding index its text search needs every word of
 * the query (plainto_tsquery), so recalling lessons by a task's goal would find almost nothing,
 * and its namespace prefix is a plain string prefix (["a"] also finds ["ab"]).
 */
export class PgStore extends BaseStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly redactor: Redactor = defaultRedactor,
  ) {
    super();
  }

  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    return inTransaction(this.pool, async (c) => {
      const results: unknown[] = [];
      for (const op of operations) {
        if ("value" in op) results.push(await this.doPut(c, op as PutOperation));
        else if ("key" in op) results.push(await this.doGet(c, op as GetOperation));
        else if ("namespacePrefix" in op) results.push(await this.doSearch(c, op as SearchOperation));
        else results.push(await this.doList(c, op as ListNamespacesOperation));
      }
      return results as OperationResults<Op>;
    });
  }

  private toItem(r: Row): Item {
    return {
      namespace: nsOf(r.namespace),
      key: r.key,
      value: JSON.parse(r.value),
      createdAt: new Date(r.created_at),
      updatedAt: new Date(r.updated_at),
    };
  }

  private async doGet(c: pg.PoolClient, op: GetOperation): Promise<Item | null> {
    const r = (await c.query<Row>("SELECT * FROM ll_store WHERE namespace = $1 AND key = $2", [nsKey(op.namespace), op.key])).rows[0];
    return r ? this.toItem(r) : null;
  }

  private async doPut(c: pg.PoolClient, op: PutOperation): Promise<void> {
    const ns = nsKey(op.namespace);
    if (op.value === null) {
      await c.query("DELETE FROM ll_store WHERE namespace = $1 AND key = $2", [ns, op.key]);
      return;
    }
    const value = this.redactor.redactDeep(op.value);
    const now = new Date().toISOString();
    await c.query(
      `INSERT INTO ll_store (namespace, key, value, created_at, updated_at, tsv)
       VALUES ($1, $2, $3, $4, $4, CASE WHEN $5::boolean THEN to_tsvector('english', $6) END)
       ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, tsv = excluded.tsv`,
      [ns, op.key, JSON.stringify(value), now, op.index !== false, textOf(value)],
    );
  }

  private async doSearch(c: pg.PoolClient, op: SearchOperation): Promise<SearchItem[]> {
    const prefix = nsKey(op.namespacePrefix);
    const limit = op.limit ?? 10;
    const offset = op.offset ?? 0;
    const words = op.query ? queryWords(op.query) : [];
    const args: unknown[] = [prefix, prefix + SEP];
    const inNs = "($1 = '' OR namespace = $1 OR starts_with(namespace, $2))";
    let rows: Row[];
    if (op.query) {
      if (!words.length) return [];
      // Any word: the OR of one stemmed query per word (stop words drop out as empty queries).
      const q = words.map((w) => (args.push(w), `plainto_tsquery('english', $${args.length})`)).join(" || ");
      rows = (
        await c.query<Row>(
          `SELECT *, ts_rank(tsv, q) AS score FROM ll_store, (SELECT ${q} AS q) x
           WHERE ${inNs} AND tsv @@ q ORDER BY score DESC, updated_at DESC`,
          args,
        )
      ).rows;
    } else {
      rows = (await c.query<Row>(`SELECT * FROM ll_store WHERE ${inNs} ORDER BY updated_at DESC`, args)).rows;
    }
    return rows
      .map((r) => ({ ...this.toItem(r), score: r.score !== undefined ? Number(r.score) : undefined }))
      .filter((item) => matches(item.value, op.filter))
      .slice(offset, offset + limit);
  }

  private async doList(c: pg.PoolClient, op: ListNamespacesOperation): Promise<string[][]> {
    const all = (await c.query<{ namespace: string }>('SELECT DISTINCT namespace COLLATE "C" AS namespace FROM ll_store ORDER BY 1')).rows.map((r) =>
      nsOf(r.namespace),
    );
    return listNamespaces(all, op);
  }
}
