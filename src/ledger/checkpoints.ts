import type { Database } from "../sqlite/driver.js";

// Besides the checkpointer that writes them (sqlite-saver.ts, on LangGraph's SqliteSaver tables
// `checkpoints` and `writes`), the one module that knows those tables: every other module asks here
// instead of writing SQL over them, so a change of the storage is met in one place. It reads them without loading LangGraph: the inspection commands (history,
// context, report) must start in a few hundred milliseconds, and @langchain/langgraph-checkpoint
// alone costs ~400 ms to import. The graph itself keeps using the saver (runtime.ts) for every
// write; only gc deletes rows here. test/api/open-agent.test.ts checks the history rows against
// LangGraph's own getStateHistory, test/ledger/checkpoints.test.ts the rest against a real saver, so a
// change of the stored format cannot go unnoticed.

/** One checkpoint of a thread as the inspection commands show it. */
export interface CheckpointRow {
  checkpointId: string;
  parentCheckpointId: string | null;
  /** LangGraph's superstep number (metadata.step): -1 for the input checkpoint. */
  step: number;
  /** "input", "loop", "update" or "fork". */
  source: string;
  createdAt: string;
  /** The graph state's channel values at this checkpoint. */
  values: Record<string, unknown>;
  /** Nodes that run next from this checkpoint (empty at the end of a run). */
  next: string[];
}

interface StoredCheckpoint {
  ts?: string;
  channel_values?: Record<string, unknown>;
  channel_versions?: Record<string, number | string>;
  versions_seen?: Record<string, Record<string, number | string>>;
}

interface Row {
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  type: string | null;
  checkpoint: Buffer | string | null;
  metadata: Buffer | string | null;
}

const COLUMNS = "checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata";

/** Undoes the two encodings of LangGraph's JSON serializer that plain state values can carry. */
function revive(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(revive);
  if (value && typeof value === "object") {
    const o = value as Record<string, unknown>;
    if (o.lc === 2 && o.type === "undefined") return undefined;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      const r = revive(v);
      if (r !== undefined) out[k] = r;
    }
    return out;
  }
  return value;
}

function decode(type: string | null, data: Buffer | string | null): unknown {
  if (data === null) return {};
  if (type !== null && type !== "json") return {};
  return revive(JSON.parse(typeof data === "string" ? data : data.toString("utf8")));
}

const newer = (a: number | string | undefined, b: number | string | undefined): boolean =>
  a !== undefined && (b === undefined || (typeof a === "number" && typeof b === "number" ? a > b : String(a) > String(b)));

/**
 * The nodes a StateGraph runs next: those whose trigger channel (`branch:to:<node>`, or
 * `__start__`) holds a value written after the node last saw it.
 */
function nextNodes(cp: StoredCheckpoint): string[] {
  const values = cp.channel_values ?? {};
  const versions = cp.channel_versions ?? {};
  const out: string[] = [];
  for (const channel of Object.keys(values)) {
    const node = channel === "__start__" ? "__start__" : channel.startsWith("branch:to:") ? channel.slice("branch:to:".length) : null;
    if (node === null) continue;
    if (newer(versions[channel], cp.versions_seen?.[node]?.[channel])) out.push(node);
  }
  return out;
}

function toRow(r: Row): CheckpointRow {
  return rowOf(r.checkpoint_id, r.parent_checkpoint_id, decode(r.type, r.checkpoint) as StoredCheckpoint, decode(r.type, r.metadata) as CheckpointMeta);
}

type CheckpointMeta = { step?: number; source?: string };

function rowOf(id: string, parent: string | null, cp: StoredCheckpoint, meta: CheckpointMeta): CheckpointRow {
  const values = { ...(cp.channel_values ?? {}) };
  for (const k of Object.keys(values)) if (k.startsWith("branch:to:") || k.startsWith("__")) delete values[k];
  return {
    checkpointId: id,
    parentCheckpointId: parent,
    step: meta.step ?? -1,
    source: meta.source ?? "",
    createdAt: cp.ts ?? "",
    values,
    next: nextNodes(cp),
  };
}

/**
 * The same row from a checkpoint a saver read (a CheckpointTuple's fields): how `history` lists a
 * run whose checkpoints are in PostgreSQL, read through the PostgresSaver rather than its tables.
 */
export function checkpointRowOf(t: {
  checkpoint: StoredCheckpoint & { id: string };
  metadata?: CheckpointMeta;
  parentConfig?: { configurable?: { checkpoint_id?: unknown } };
}): CheckpointRow {
  const parent = t.parentConfig?.configurable?.checkpoint_id;
  return rowOf(t.checkpoint.id, typeof parent === "string" ? parent : null, t.checkpoint, t.metadata ?? {});
}

/**
 * The state values of a thread's newest checkpoint, read through a saver (PostgreSQL's, or a
 * runtime's); undefined when it has none. The SQLite twin reading the table is latestCheckpoint.
 */
export async function latestValues<T = Record<string, unknown>>(
  saver: { getTuple(config: { configurable: { thread_id: string } }): Promise<{ checkpoint: { channel_values: unknown } } | undefined> },
  thread: string,
): Promise<Partial<T> | undefined> {
  return (await saver.getTuple({ configurable: { thread_id: thread } }))?.checkpoint.channel_values as Partial<T> | undefined;
}

/** Every checkpoint of a thread (root graph only), newest first. */
export function checkpointHistory(db: Database, thread: string): CheckpointRow[] {
  const rows = db.prepare(`SELECT ${COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC`).all(thread) as Row[];
  return rows.map(toRow);
}

/** The newest checkpoint of a thread, or undefined when it has none. */
export function latestCheckpoint(db: Database, thread: string): CheckpointRow | undefined {
  const row = db.prepare(`SELECT ${COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1`).get(thread) as
    Row | undefined;
  return row ? toRow(row) : undefined;
}

/** True when LangGraph's `checkpoints` or `writes` table exists in this database. */
export function hasTable(db: Database, name: "checkpoints" | "writes"): boolean {
  return Boolean(db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name));
}

/** True when LangGraph has created its checkpoint table in this database (a run was checkpointed here). */
export function hasCheckpointTable(db: Database): boolean {
  return hasTable(db, "checkpoints");
}

/** True when LangGraph has at least one checkpoint for the thread (any namespace) in this database. */
export function threadHasCheckpoints(db: Database, thread: string): boolean {
  if (!hasTable(db, "checkpoints")) return false;
  return Boolean(db.prepare("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1").get(thread));
}

/** Number of checkpoints (all namespaces) of every thread that has some. */
export function checkpointCounts(db: Database): Map<string, number> {
  const counts = new Map<string, number>();
  if (!hasTable(db, "checkpoints")) return counts;
  for (const r of db.prepare("SELECT thread_id, COUNT(*) AS n FROM checkpoints GROUP BY thread_id").all() as Array<{ thread_id: string; n: number }>) {
    counts.set(r.thread_id, r.n);
  }
  return counts;
}

/**
 * A check, prepared once, of whether a thread is paused by interrupt(): its newest root checkpoint has
 * a pending `__interrupt__` write. Null when the database has no checkpoint or write table.
 */
export function interruptedCheck(db: Database): ((thread: string) => boolean) | null {
  if (!hasTable(db, "checkpoints") || !hasTable(db, "writes")) return null;
  const stmt = db.prepare<[string, string], { one: number }>(
    `SELECT 1 AS one FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND channel = '__interrupt__'
       AND checkpoint_id = (SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '') LIMIT 1`,
  );
  return (thread) => Boolean(stmt.get(thread, thread));
}

/** One root-graph checkpoint and its parent, as gc sees the checkpoint tree. */
export interface CheckpointLink {
  thread_id: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
}

/** Every root-graph checkpoint of every thread with its parent (empty without a checkpoint table). */
export function checkpointLinks(db: Database): CheckpointLink[] {
  if (!hasTable(db, "checkpoints")) return [];
  return db.prepare("SELECT thread_id, checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE checkpoint_ns = ''").all() as CheckpointLink[];
}

/**
 * Deletes root-graph checkpoints (and their pending writes) and points kept ones at new parents, in
 * one transaction, so the history LangGraph reads stays a chain.
 */
export function pruneCheckpoints(
  db: Database,
  drop: ReadonlyArray<{ thread_id: string; checkpoint_id: string }>,
  reparent: ReadonlyArray<{ thread_id: string; checkpoint_id: string; parent: string | null }>,
): void {
  if (!hasTable(db, "checkpoints")) return;
  db.transaction(() => {
    const delCp = db.prepare("DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?");
    const delW = hasTable(db, "writes") ? db.prepare("DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?") : null;
    const setParent = db.prepare("UPDATE checkpoints SET parent_checkpoint_id = ? WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?");
    for (const r of reparent) setParent.run(r.parent, r.thread_id, r.checkpoint_id);
    for (const r of drop) {
      delCp.run(r.thread_id, r.checkpoint_id);
      delW?.run(r.thread_id, r.checkpoint_id);
    }
  })();
}

/** Deletes every checkpoint (all namespaces) and pending write of a thread; the caller holds the transaction. */
export function deleteThreadCheckpoints(db: Database, thread: string): { checkpoints: number; writes: number } {
  const checkpoints = hasTable(db, "checkpoints") ? db.prepare("DELETE FROM checkpoints WHERE thread_id = ?").run(thread).changes : 0;
  const writes = hasTable(db, "writes") ? db.prepare("DELETE FROM writes WHERE thread_id = ?").run(thread).changes : 0;
  return { checkpoints, writes };
}

/** The workspace revisions (`workspaceRev`) that some stored checkpoint's state names. */
export function checkpointWorkspaceRevs(db: Database): Set<string> {
  const live = new Set<string>();
  if (!hasTable(db, "checkpoints")) return live;
  for (const r of db.prepare("SELECT checkpoint FROM checkpoints").all() as Array<{ checkpoint: Buffer }>) {
    try {
      const rev = JSON.parse(r.checkpoint.toString("utf8"))?.channel_values?.workspaceRev;
      if (typeof rev === "string") live.add(rev);
    } catch {
      /* a checkpoint in another encoding keeps nothing alive: revisions are kept by the store's heads */
    }
  }
  return live;
}

/** Count and bytes of the stored checkpoints (with their metadata) and of the pending writes. */
export function checkpointStorage(db: Database): { count: number; bytes: number; writesBytes: number } {
  const cp = hasTable(db, "checkpoints")
    ? (db.prepare("SELECT COUNT(*) AS n, SUM(length(checkpoint) + length(metadata)) AS b FROM checkpoints").get() as { n: number; b: number | null })
    : { n: 0, b: 0 };
  const wr = hasTable(db, "writes") ? (db.prepare("SELECT SUM(length(value)) AS b FROM writes").get() as { b: number | null }) : { b: 0 };
  return { count: cp.n, bytes: cp.b ?? 0, writesBytes: wr.b ?? 0 };
}
