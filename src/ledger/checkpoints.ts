import type Database from "better-sqlite3";

// Read-only access to the tables LangGraph's SqliteSaver writes, without loading LangGraph: the
// inspection commands (history, context, report) must start in a few hundred milliseconds, and
// @langchain/langgraph-checkpoint alone costs ~400 ms to import. The graph itself keeps using
// SqliteSaver for every write; test/ledger/checkpoints.test.ts checks these rows against
// LangGraph's own getStateHistory so a change of the stored format cannot go unnoticed.

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
  const cp = decode(r.type, r.checkpoint) as StoredCheckpoint;
  const meta = decode(r.type, r.metadata) as { step?: number; source?: string };
  const values = { ...(cp.channel_values ?? {}) };
  for (const k of Object.keys(values)) if (k.startsWith("branch:to:") || k.startsWith("__")) delete values[k];
  return {
    checkpointId: r.checkpoint_id,
    parentCheckpointId: r.parent_checkpoint_id,
    step: meta.step ?? -1,
    source: meta.source ?? "",
    createdAt: cp.ts ?? "",
    values,
    next: nextNodes(cp),
  };
}

/** Every checkpoint of a thread (root graph only), newest first. */
export function checkpointHistory(db: Database.Database, thread: string): CheckpointRow[] {
  const rows = db
    .prepare(`SELECT ${COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC`)
    .all(thread) as Row[];
  return rows.map(toRow);
}

/** The newest checkpoint of a thread, or undefined when it has none. */
export function latestCheckpoint(db: Database.Database, thread: string): CheckpointRow | undefined {
  const row = db
    .prepare(`SELECT ${COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1`)
    .get(thread) as Row | undefined;
  return row ? toRow(row) : undefined;
}
