import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  copyCheckpoint,
  maxChannelVersion,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { Database, Statement } from "../sqlite/driver.js";
import { hasTable } from "./checkpoints.js";

/**
 * LangGraph's checkpoint tables, column for column as `@langchain/langgraph-checkpoint-sqlite` creates
 * them: state databases written by its SqliteSaver are read and extended by this saver, and the
 * other way round, so neither the names nor the keys may drift.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS checkpoints (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  parent_checkpoint_id TEXT,
  type TEXT,
  checkpoint BLOB,
  metadata BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS writes (
  thread_id TEXT NOT NULL,
  checkpoint_ns TEXT NOT NULL DEFAULT '',
  checkpoint_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  channel TEXT NOT NULL,
  type TEXT,
  value BLOB,
  PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);`;

const CHECKPOINT_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata";

/** A stored BLOB as the driver may hand it back (a Buffer; text if some writer stored text). */
type Stored = Uint8Array | ArrayBuffer | string | null;

interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  type: string | null;
  checkpoint: Stored;
  metadata: Stored;
}

interface WriteRow {
  task_id: string;
  channel: string;
  type: string | null;
  value: Stored;
}

interface SendRow {
  type: string | null;
  value: Stored;
}

/** A checkpoint row with its pending writes, read in one snapshot so the two agree. */
interface Found {
  row: CheckpointRow;
  writes: WriteRow[];
}

type WriteParams = [string, string, string, string, number, string, string, Uint8Array];

interface Statements {
  latest: Statement<[unknown, unknown], CheckpointRow>;
  byId: Statement<[unknown, unknown, unknown], CheckpointRow>;
  writesOf: Statement<[string, string, string], WriteRow>;
  sendsOf: Statement<[string, string], SendRow>;
  put: Statement<[string, string, string, string | null, string, Uint8Array, Uint8Array], unknown>;
  replaceWrite: Statement<WriteParams, unknown>;
  ignoreWrite: Statement<WriteParams, unknown>;
  deleteCheckpoints: Statement<[string], unknown>;
  deleteWrites: Statement<[string], unknown>;
}

/** Serializer bytes as a Buffer view (no copy): the form every SQLite binding takes as a BLOB. */
function blob(bytes: Uint8Array): Uint8Array {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A stored value as the serializer reads it. A NULL reads as "", as LangGraph's saver passes it. */
function payload(value: Stored): Uint8Array | string {
  if (value === null) return "";
  return value instanceof ArrayBuffer ? new Uint8Array(value) : value;
}

/** Special channels (errors, interrupts, …) have fixed negative slots; own keys only, not `toString`. */
function isSpecial(channel: string): boolean {
  return Object.hasOwn(WRITES_IDX_MAP, channel);
}

/** The key of one stored checkpoint, in the shape LangGraph hands back as a config. */
function keyConfig(thread_id: string, checkpoint_ns: string, checkpoint_id: string): RunnableConfig {
  return { configurable: { thread_id, checkpoint_ns, checkpoint_id } };
}

/**
 * The WHERE/LIMIT of `list`, with its parameters built alongside each clause so the two never
 * disagree. A thread or namespace left out lists every thread or namespace, as LangGraph's does.
 * Metadata filters compare the JSON text at `$.key` with the filter value's JSON text.
 */
function listQuery(config: RunnableConfig, options: CheckpointListOptions): { sql: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  const where = (clause: string, ...values: unknown[]): void => {
    clauses.push(clause);
    params.push(...values);
  };
  const { thread_id, checkpoint_ns } = config.configurable ?? {};
  if (thread_id) where("thread_id = ?", thread_id);
  if (checkpoint_ns !== undefined && checkpoint_ns !== null) where("checkpoint_ns = ?", checkpoint_ns);
  const beforeId: unknown = options.before?.configurable?.checkpoint_id;
  if (beforeId !== undefined && beforeId !== null) where("checkpoint_id < ?", beforeId);
  for (const [key, value] of Object.entries(options.filter ?? {})) {
    if (value !== undefined) where("(CAST(metadata AS TEXT) -> ?) = ?", `$.${key}`, JSON.stringify(value));
  }
  let sql = `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints`;
  if (clauses.length > 0) sql += ` WHERE ${clauses.join(" AND ")}`;
  sql += " ORDER BY checkpoint_id DESC";
  if (options.limit) {
    sql += " LIMIT ?";
    params.push(Math.trunc(options.limit));
  }
  return { sql, params };
}

/**
 * LangGraph's checkpointer over ledgerloop's SQLite driver, interchangeable with
 * `@langchain/langgraph-checkpoint-sqlite`'s SqliteSaver on the same file: same tables, keys,
 * serialization and query semantics. It exists because that package loads better-sqlite3 itself.
 */
export class SqliteCheckpointSaver extends BaseCheckpointSaver {
  private statements: Statements | undefined;
  private readonly listStatements = new Map<string, Statement<unknown[], CheckpointRow>>();

  constructor(
    public readonly db: Database,
    serde?: SerializerProtocol,
  ) {
    super(serde);
  }

  /**
   * Creates the tables when either is missing and prepares the statements; later calls do nothing.
   * A file that has both tables is not written to, so a read-only connection can read checkpoints.
   * The journal mode is the opener's business: the state database is opened in WAL already.
   */
  setup(): void {
    this.ready();
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const s = this.ready();
    const { thread_id = null, checkpoint_ns = "", checkpoint_id } = config.configurable ?? {};
    const found = this.snapshot(() => {
      const row = checkpoint_id ? s.byId.get(thread_id, checkpoint_ns, checkpoint_id) : s.latest.get(thread_id, checkpoint_ns);
      return row && { row, writes: s.writesOf.all(row.thread_id, row.checkpoint_ns, row.checkpoint_id) };
    });
    if (!found) return undefined;
    // Asked for one checkpoint: the caller's config comes back as given, as LangGraph's saver does.
    const own = checkpoint_id ? config : keyConfig(found.row.thread_id, checkpoint_ns, found.row.checkpoint_id);
    return this.toTuple(found, own, checkpoint_ns);
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const s = this.ready();
    const { sql, params } = listQuery(config, options);
    let stmt = this.listStatements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare<unknown[], CheckpointRow>(sql);
      this.listStatements.set(sql, stmt);
    }
    const query = stmt;
    // Rows are read up front: the caller may write through this connection between two yields.
    const found = this.snapshot(() =>
      query.all(...params).map((row) => ({ row, writes: s.writesOf.all(row.thread_id, row.checkpoint_ns, row.checkpoint_id) })),
    );
    for (const f of found) {
      const { thread_id, checkpoint_ns, checkpoint_id } = f.row;
      yield await this.toTuple(f, keyConfig(thread_id, checkpoint_ns, checkpoint_id), checkpoint_ns);
    }
  }

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    const s = this.ready();
    if (!config.configurable) throw new Error("Empty configuration supplied.");
    const { thread_id, checkpoint_ns = "", checkpoint_id: parentId } = config.configurable;
    if (!thread_id) throw new Error(`Missing "thread_id" field in passed "config.configurable".`);
    const [[type, stored], [metadataType, storedMetadata]] = await Promise.all([
      this.serde.dumpsTyped(copyCheckpoint(checkpoint)),
      this.serde.dumpsTyped(metadata),
    ]);
    // One `type` column serves both blobs, so they must have been serialized the same way.
    if (type !== metadataType) throw new Error("Failed to serialized checkpoint and metadata to the same type.");
    s.put.run(thread_id, checkpoint_ns, checkpoint.id, parentId ?? null, type, blob(stored), blob(storedMetadata));
    return keyConfig(thread_id, checkpoint_ns, checkpoint.id);
  }

  /**
   * Stores a task's writes. Slots are the write's position, or a special channel's fixed negative
   * slot. A batch of special writes only replaces earlier ones (the latest error or interrupt wins);
   * any other batch keeps what is stored, so a task's writes replayed after a crash change nothing.
   * The task path is not stored: the tables have no column for it (pending writes sort by task id).
   */
  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, _taskPath?: string): Promise<void> {
    const s = this.ready();
    if (!config.configurable) throw new Error("Empty configuration supplied.");
    const { thread_id, checkpoint_ns, checkpoint_id } = config.configurable;
    if (!thread_id) throw new Error("Missing thread_id field in config.configurable.");
    if (!checkpoint_id) throw new Error("Missing checkpoint_id field in config.configurable.");
    // LangGraph's saver binds a missing namespace as NULL, which SQLite's conflict clauses turn into
    // '' (REPLACE) or a silently dropped row (IGNORE). Here it is '' always, as in put and getTuple.
    const ns: string = checkpoint_ns ?? "";
    const rows = await Promise.all(
      writes.map(async ([channel, value], position): Promise<WriteParams> => {
        const [type, bytes] = await this.serde.dumpsTyped(value);
        const idx = isSpecial(channel) ? WRITES_IDX_MAP[channel]! : position;
        return [thread_id, ns, checkpoint_id, taskId, idx, channel, type, blob(bytes)];
      }),
    );
    const stmt = writes.every(([channel]) => isSpecial(channel)) ? s.replaceWrite : s.ignoreWrite;
    this.db.transaction(() => {
      for (const row of rows) stmt.run(...row);
    })();
  }

  /** Deletes every checkpoint and write of the thread, in all namespaces, in one transaction. */
  async deleteThread(threadId: string): Promise<void> {
    const s = this.ready();
    this.db.transaction(() => {
      s.deleteCheckpoints.run(threadId);
      s.deleteWrites.run(threadId);
    })();
  }

  private ready(): Statements {
    if (this.statements) return this.statements;
    if (!hasTable(this.db, "checkpoints") || !hasTable(this.db, "writes")) this.db.exec(SCHEMA);
    const writeInsert = (conflict: "REPLACE" | "IGNORE") =>
      this.db.prepare<WriteParams, unknown>(
        `INSERT OR ${conflict} INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      );
    const select = `SELECT ${CHECKPOINT_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?`;
    this.statements = {
      latest: this.db.prepare(`${select} ORDER BY checkpoint_id DESC LIMIT 1`),
      byId: this.db.prepare(`${select} AND checkpoint_id = ?`),
      // No task path is stored, so (task id, slot) is the writesSortKey order BaseCheckpointSaver asks for.
      writesOf: this.db.prepare(
        "SELECT task_id, channel, type, value FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_id, idx",
      ),
      // Any namespace, as LangGraph's saver looks them up: checkpoint ids are unique uuid6s anyway.
      sendsOf: this.db.prepare(
        `SELECT type, value FROM writes WHERE thread_id = ? AND checkpoint_id = ? AND channel = '${TASKS}' ORDER BY checkpoint_ns, task_id, idx`,
      ),
      put: this.db.prepare(`INSERT OR REPLACE INTO checkpoints (${CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`),
      replaceWrite: writeInsert("REPLACE"),
      ignoreWrite: writeInsert("IGNORE"),
      deleteCheckpoints: this.db.prepare("DELETE FROM checkpoints WHERE thread_id = ?"),
      deleteWrites: this.db.prepare("DELETE FROM writes WHERE thread_id = ?"),
    };
    return this.statements;
  }

  /** Runs synchronous reads in one (deferred, read-only) transaction: one consistent snapshot. */
  private snapshot<T>(read: () => T): T {
    return this.db.transaction(read)();
  }

  private async toTuple({ row, writes }: Found, config: RunnableConfig, checkpoint_ns: string): Promise<CheckpointTuple> {
    // Checkpoint and metadata share the row's one type column.
    const type = row.type ?? "json";
    const checkpoint = (await this.serde.loadsTyped(type, payload(row.checkpoint))) as Checkpoint;
    if (checkpoint.v < 4 && row.parent_checkpoint_id != null) await this.migratePendingSends(checkpoint, row.thread_id, row.parent_checkpoint_id);
    const pendingWrites = await Promise.all(
      writes.map(async (w): Promise<CheckpointPendingWrite> => [w.task_id, w.channel, await this.serde.loadsTyped(w.type ?? "json", payload(w.value))]),
    );
    return {
      config,
      checkpoint,
      metadata: (await this.serde.loadsTyped(type, payload(row.metadata))) as CheckpointMetadata,
      parentConfig: row.parent_checkpoint_id ? keyConfig(row.thread_id, checkpoint_ns, row.parent_checkpoint_id) : undefined,
      pendingWrites,
    };
  }

  /**
   * Checkpoints older than format 4 kept the parent's Sends outside the checkpoint, as writes to the
   * TASKS channel. They are moved into `channel_values` as the newer format holds them, versioned at
   * the checkpoint's highest channel version (or the first version when it has none).
   */
  private async migratePendingSends(checkpoint: Checkpoint, threadId: string, parentId: string): Promise<void> {
    const rows = this.ready().sendsOf.all(threadId, parentId);
    const sends = await Promise.all(rows.map((r) => this.serde.loadsTyped(r.type ?? "json", payload(r.value))));
    checkpoint.channel_values ??= {};
    checkpoint.channel_values[TASKS] = sends;
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}
