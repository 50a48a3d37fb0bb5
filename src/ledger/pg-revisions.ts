import type pg from "pg";
import { LedgerloopError, StateStoreError, errorMessage } from "../errors.js";
import { inTransaction } from "./pg-db.js";
import { RevisionError } from "../workspace/rev-errors.js";
import { decodeTree, sha256 } from "../workspace/rev-tree.js";
import type { PreparedBlob, RevisionInfo, RevisionStore } from "../workspace/revisions.js";

// The PostgreSQL replica of the workspace revision stores (tables of pg-db.ts's migration 2).
//
// The local store (revisions.ts, SQLite) stays the working copy's store, synchronous and fast; this
// replica receives every revision a run takes (push, from the runtime's afterSnapshot hook) so that
// a worker on another machine can copy any of them into its own local store (pull) and restore it.
//
// Order makes a reader safe: blobs are committed first, then the trees and the revision row in one
// transaction. So a revision row in PostgreSQL means all its objects are there, and so does a tree:
// a push that finds a tree there skips everything under it. A sweep (sweepReplica, below) keeps
// this: it removes only what no kept revision reaches, in one transaction that bumps the sweep
// generation, and a push commits only under the generation it asked its questions in.
//
// Concurrency: every write is INSERT … ON CONFLICT DO NOTHING, and rows go in sorted by hash, so
// processes pushing the same objects at once wait for each other's rows instead of deadlocking,
// and each object is written once.

/** What a push or pull moved: objects written to the other side and their stored bytes. */
export interface ReplicaTransfer {
  trees: number;
  blobs: number;
  /** Stored (compressed) bytes of those trees and blobs. */
  bytes: number;
}

/** Result of {@link PgRevisionReplica.push}. */
export interface PushResult extends ReplicaTransfer {
  /** Hashes this push asked PostgreSQL about (those this replica did not already know were there). */
  queried: number;
}

/** Pushes of one revision before a run of sweeps is reported as an error. */
const PUSH_ATTEMPTS = 3;
/** Hashes per `= ANY($1)` question. */
const ASK_BATCH = 1000;
/** Rows per INSERT (4 parameters each, far below PostgreSQL's 65,535). */
const PUT_ROWS = 500;
/** Stored bytes per INSERT or SELECT of blobs: keeps one statement's memory bounded. */
const BATCH_BYTES = 8 * 1024 * 1024;
/** Past this many hashes the known set is dropped and relearnt (one question per batch of hashes). */
const KNOWN_MAX = 1_000_000;

/**
 * Pushes revisions of local stores to PostgreSQL and pulls them back into (other) local stores.
 * One instance per process and pool; it remembers which objects it saw in PostgreSQL, so pushing
 * step after step asks about and sends only what changed.
 */
export class PgRevisionReplica {
  private readonly knownRevs = new Set<string>();
  private readonly knownTrees = new Set<string>();
  private readonly knownBlobs = new Set<string>();
  /** The sweep generation the known sets were learnt under (null: not read yet). */
  private generation: string | null = null;

  constructor(private readonly pool: pg.Pool) {}

  /** Whether PostgreSQL has the revision (and so all its objects). */
  async has(revId: string): Promise<boolean> {
    return guarded(`looking up workspace revision ${revId} in PostgreSQL`, async () => {
      await this.syncGeneration();
      return this.hasOnce(revId);
    });
  }

  private async hasOnce(revId: string): Promise<boolean> {
    if (this.knownRevs.has(revId)) return true;
    const r = await this.pool.query("SELECT 1 FROM ll_rev_revisions WHERE rev_id = $1", [revId]);
    if (r.rowCount) this.know(this.knownRevs, [revId]);
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Uploads a revision of `store` with the trees and blobs PostgreSQL does not have yet; the
   * revision row last. Idempotent; a revision already there costs one question, or none when this
   * replica pushed or saw it before.
   */
  async push(store: RevisionStore, revId: string): Promise<PushResult> {
    return guarded(`pushing workspace revision ${revId} to PostgreSQL`, () => this.pushOnce(store, revId));
  }

  private async pushOnce(store: RevisionStore, revId: string): Promise<PushResult> {
    // A sweep (sweepReplica) between this push's questions and its commit may have removed objects
    // it found there: the commit then sees a new generation, and the push starts again from what
    // PostgreSQL has now. A second sweep in a row is rare; a third means sweeps run back to back.
    for (let attempt = 1; ; attempt++) {
      const generation = await this.syncGeneration();
      const out = await this.pushAttempt(store, revId, generation);
      if (out) return out;
      if (attempt >= PUSH_ATTEMPTS) {
        throw new StateStoreError(
          "STATE_DB_UNREADABLE",
          `pushing workspace revision ${revId} to PostgreSQL failed: the revision store was garbage-collected during each of ${PUSH_ATTEMPTS} attempts`,
        );
      }
    }
  }

  /**
   * The replica's garbage-collection generation; when it moved since this replica last looked, what
   * it remembered seeing in PostgreSQL may have been swept, so it forgets it.
   */
  private async syncGeneration(): Promise<string> {
    const g = await gcGeneration(this.pool);
    if (g !== this.generation) {
      this.knownRevs.clear();
      this.knownTrees.clear();
      this.knownBlobs.clear();
      this.generation = g;
    }
    return g;
  }

  /** Renews a revision's push time, under `generation`; false when it is gone or a sweep moved the generation. */
  private async touch(revId: string, generation: string): Promise<boolean> {
    const r = await this.pool.query(
      "UPDATE ll_rev_revisions SET pushed_at = now() WHERE rev_id = $1 AND EXISTS (SELECT 1 FROM ll_rev_gc WHERE id = 1 AND generation = $2 FOR SHARE)",
      [revId, generation],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /** One push under `generation`; null when a sweep moved it before the revision could be committed. */
  private async pushAttempt(store: RevisionStore, revId: string, generation: string): Promise<PushResult | null> {
    const out: PushResult = { trees: 0, blobs: 0, bytes: 0, queried: 0 };
    let there = this.knownRevs.has(revId);
    if (!there) {
      out.queried++;
      there = await this.hasOnce(revId);
    }
    if (there) {
      // Already there (an edit undone, a rewind): its push time is renewed, so a sweep's grace
      // covers it until the ledger or a checkpoint names it, as it does a new one.
      if (await this.touch(revId, generation)) return out;
      this.knownRevs.delete(revId);
      return null;
    }

    // Trees: those not known to be there, then again without those PostgreSQL turns out to have.
    let objs = store.exportObjects(revId, this.knownTrees);
    const asked = [...objs.trees.keys()];
    out.queried += asked.length;
    const treesThere = await this.existing("ll_rev_trees", asked);
    if (treesThere.size > 0) {
      this.know(this.knownTrees, treesThere);
      objs = store.exportObjects(revId, this.knownTrees);
    }

    // Blobs first, each batch committed on its own.
    const unknown = objs.blobs.filter((h) => !this.knownBlobs.has(h));
    out.queried += unknown.length;
    const blobsThere = await this.existing("ll_rev_blobs", unknown);
    this.know(this.knownBlobs, blobsThere);
    let batch: PreparedBlob[] = [];
    let batchBytes = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const written = await this.insert(
        this.pool,
        "ll_rev_blobs (hash, size, codec, data)",
        batch.map((b) => [b.hash, b.size, b.codec, b.data]),
      );
      for (const b of batch) {
        if (written.has(b.hash)) {
          out.blobs++;
          out.bytes += b.data.length;
        }
      }
      this.know(
        this.knownBlobs,
        batch.map((b) => b.hash),
      );
      batch = [];
      batchBytes = 0;
    };
    for (const h of unknown) {
      if (blobsThere.has(h)) continue;
      const b = store.storedBlob(h);
      if (batch.length >= PUT_ROWS || (batch.length > 0 && batchBytes + b.data.length > BATCH_BYTES)) await flush();
      batch.push(b);
      batchBytes += b.data.length;
    }
    await flush();

    // Then the trees and the row, together.
    const trees = [...objs.trees].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const info = objs.info;
    const committed = await inTransaction(this.pool, async (c) => {
      // FOR SHARE: a sweep (its UPDATE of the same row) waits for this commit, or this for its.
      if ((await gcGeneration(c, true)) !== generation) return false;
      for (let i = 0; i < trees.length; i += PUT_ROWS) {
        const rows = trees.slice(i, i + PUT_ROWS);
        const written = await this.insert(c, "ll_rev_trees (hash, data)", rows);
        for (const [h, data] of rows) {
          if (written.has(h)) {
            out.trees++;
            out.bytes += data.length;
          }
        }
      }
      await c.query("INSERT INTO ll_rev_revisions (rev_id, created_at, label, files, bytes) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING", [
        info.revId,
        info.createdAt,
        info.label,
        info.files,
        info.bytes,
      ]);
      return true;
    });
    if (!committed) return null;
    this.know(this.knownTrees, objs.trees.keys());
    this.know(this.knownRevs, [revId]);
    return out;
  }

  /**
   * Copies a revision from PostgreSQL into `store` (row, trees, blobs), so `store.restore(revId)`
   * works. Every tree and blob is checked against its hash on the way in: a damaged row is a
   * RevisionError naming the hash, and the revision is then not stored locally.
   */
  async pull(store: RevisionStore, revId: string): Promise<ReplicaTransfer> {
    return guarded(`pulling workspace revision ${revId} from PostgreSQL`, () => this.pullOnce(store, revId));
  }

  private async pullOnce(store: RevisionStore, revId: string): Promise<ReplicaTransfer> {
    // What this pull learns is remembered under the generation it was read in.
    await this.syncGeneration();
    const out: ReplicaTransfer = { trees: 0, blobs: 0, bytes: 0 };
    const row = (
      await this.pool.query<{ rev_id: string; created_at: string; label: string | null; files: string; bytes: string }>(
        "SELECT rev_id, created_at, label, files, bytes FROM ll_rev_revisions WHERE rev_id = $1",
        [revId],
      )
    ).rows[0];
    if (!row) {
      throw new RevisionError("REV_NOT_FOUND", `workspace revision ${revId} is not in the PostgreSQL state database (no run pushed it there)`);
    }
    this.know(this.knownRevs, [revId]);
    if (store.info(revId)) return out;
    const info: RevisionInfo = { revId: row.rev_id, createdAt: row.created_at, label: row.label, files: Number(row.files), bytes: Number(row.bytes) };

    // Trees level by level from the root; a tree the local store has brings everything under it.
    const trees = new Map<string, Buffer>();
    const blobs = new Set<string>();
    let level = [revId];
    while (level.length > 0) {
      const need = [...new Set(level)].filter((h) => !trees.has(h) && !store.hasTree(h));
      const next: string[] = [];
      for (let i = 0; i < need.length; i += ASK_BATCH) {
        const ask = need.slice(i, i + ASK_BATCH);
        const got = new Map(
          (await this.pool.query<{ hash: string; data: Buffer }>("SELECT hash, data FROM ll_rev_trees WHERE hash = ANY($1)", [ask])).rows.map((r) => [
            r.hash,
            r.data,
          ]),
        );
        for (const h of ask) {
          const data = got.get(h);
          if (!data) throw new RevisionError("REV_TREE_MISSING", `tree object ${h} of revision ${revId} is missing from PostgreSQL`);
          if (sha256(data) !== h) {
            throw new RevisionError("REV_TREE_CORRUPT", `tree object ${h} in PostgreSQL is corrupt: its content does not hash to its name`);
          }
          trees.set(h, data);
          out.trees++;
          out.bytes += data.length;
          for (const e of decodeTree(data, h)) {
            if (e.kind === "tree") next.push(e.hash);
            else if (e.kind !== "large") blobs.add(e.hash);
          }
        }
      }
      level = next;
    }

    // Blobs: sizes first (all must be there before anything is stored), then the contents in
    // batches of bounded size.
    const missing = [...blobs].filter((h) => !store.hasBlob(h)).sort();
    const sizes = new Map<string, number>();
    for (let i = 0; i < missing.length; i += ASK_BATCH) {
      const ask = missing.slice(i, i + ASK_BATCH);
      const r = await this.pool.query<{ hash: string; n: number }>("SELECT hash, octet_length(data) AS n FROM ll_rev_blobs WHERE hash = ANY($1)", [ask]);
      for (const x of r.rows) sizes.set(x.hash, Number(x.n));
    }
    const absent = missing.find((h) => !sizes.has(h));
    if (absent) throw new RevisionError("REV_BLOB_MISSING", `blob ${absent} of revision ${revId} is missing from PostgreSQL`);
    let batch: string[] = [];
    let batchBytes = 0;
    const fetch = async () => {
      if (batch.length === 0) return;
      const r = await this.pool.query<{ hash: string; size: string; codec: number; data: Buffer }>(
        "SELECT hash, size, codec, data FROM ll_rev_blobs WHERE hash = ANY($1)",
        [batch],
      );
      const got: PreparedBlob[] = r.rows.map((x) => {
        if (x.codec !== 0 && x.codec !== 1) {
          throw new RevisionError("REV_BLOB_CORRUPT", `blob ${x.hash} in PostgreSQL is corrupt: unknown codec ${x.codec}`);
        }
        return { hash: x.hash, size: Number(x.size), codec: x.codec, data: x.data };
      });
      store.importBlobs(got, "from PostgreSQL");
      out.blobs += got.length;
      out.bytes += got.reduce((n, b) => n + b.data.length, 0);
      batch = [];
      batchBytes = 0;
    };
    for (const h of missing) {
      const n = sizes.get(h)!;
      if (batch.length >= ASK_BATCH || (batch.length > 0 && batchBytes + n > BATCH_BYTES)) await fetch();
      batch.push(h);
      batchBytes += n;
    }
    await fetch();

    store.importObjects(info, trees, "from PostgreSQL");
    return out;
  }

  /**
   * Makes sure `store` has the revision, pulling it when it does not: what a process does before
   * restoring a revision another machine may have recorded. Returns what was copied (zeros when the
   * revision was already local).
   */
  async ensure(store: RevisionStore, revId: string): Promise<ReplicaTransfer> {
    if (store.info(revId)) return { trees: 0, blobs: 0, bytes: 0 };
    return this.pull(store, revId);
  }

  /** Which of `hashes` a table has, asked in batches. */
  private async existing(table: "ll_rev_trees" | "ll_rev_blobs", hashes: string[]): Promise<Set<string>> {
    const there = new Set<string>();
    for (let i = 0; i < hashes.length; i += ASK_BATCH) {
      const r = await this.pool.query<{ hash: string }>(`SELECT hash FROM ${table} WHERE hash = ANY($1)`, [hashes.slice(i, i + ASK_BATCH)]);
      for (const x of r.rows) there.add(x.hash);
    }
    return there;
  }

  /** Inserts rows (first column the hash) unless present; returns the hashes this statement wrote. */
  private async insert(q: pg.Pool | pg.PoolClient, into: string, rows: unknown[][]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const width = rows[0]!.length;
    const values = rows.map((_r, i) => `(${Array.from({ length: width }, (_c, j) => `$${i * width + j + 1}`).join(", ")})`).join(", ");
    const r = await q.query<{ hash: string }>(`INSERT INTO ${into} VALUES ${values} ON CONFLICT DO NOTHING RETURNING hash`, rows.flat());
    return new Set(r.rows.map((x) => x.hash));
  }

  private know(set: Set<string>, hashes: Iterable<string>): void {
    if (set.size > KNOWN_MAX) set.clear();
    for (const h of hashes) set.add(h);
  }
}

/** The replica's sweep generation; `forShare` row-locks it until the caller's transaction ends. */
async function gcGeneration(q: pg.Pool | pg.PoolClient, forShare = false): Promise<string> {
  try {
    const r = await q.query<{ generation: string }>(`SELECT generation FROM ll_rev_gc WHERE id = 1${forShare ? " FOR SHARE" : ""}`);
    return String(r.rows[0]?.generation ?? "0");
  } catch (err) {
    // No sweep table, so never swept (a database without the replica's tables says so on the next
    // statement); inside a transaction the error stands, as it aborted the transaction.
    if (!forShare && (err as { code?: unknown })?.code === "42P01") return "0";
    throw err;
  }
}

/** What a sweep of the replica removed. */
export interface ReplicaSweep {
  revisionsKept: number;
  revisionsDeleted: number;
  treesDeleted: number;
  blobsDeleted: number;
  /** Stored bytes of the removed trees and blobs. */
  bytesFreed: number;
}

/**
 * Removes from the replica every revision that is neither in `live` nor pushed within `graceMs`,
 * and the trees and blobs no kept revision reaches. One transaction, holding the sweep row: pushes
 * commit before or after it, never across it (a push that straddles it starts again, see push).
 * A tree a kept revision names but the replica lacks is left as it is (pull reports it).
 */
export async function sweepReplica(pool: pg.Pool, live: ReadonlySet<string>, opts: { graceMs: number }): Promise<ReplicaSweep> {
  return guarded("sweeping the workspace revisions in PostgreSQL", () =>
    inTransaction(pool, async (c) => {
      // The UPDATE holds the row until commit: pushes (FOR SHARE of it) commit before or after.
      await c.query("UPDATE ll_rev_gc SET generation = generation + 1 WHERE id = 1");
      const kept = (
        await c.query<{ rev_id: string }>("SELECT rev_id FROM ll_rev_revisions WHERE rev_id = ANY($1) OR pushed_at > now() - make_interval(secs => $2)", [
          [...live],
          opts.graceMs / 1000,
        ])
      ).rows.map((r) => r.rev_id);
      // Mark: every tree and blob reachable from a kept revision (a revision's id is its root tree).
      await c.query("CREATE TEMP TABLE ll_sweep_keep (hash TEXT PRIMARY KEY) ON COMMIT DROP");
      const seen = new Set<string>();
      const blobs = new Set<string>();
      let level = kept;
      while (level.length > 0) {
        const need = [...new Set(level)].filter((h) => !seen.has(h));
        const next: string[] = [];
        for (let i = 0; i < need.length; i += ASK_BATCH) {
          const rows = (
            await c.query<{ hash: string; data: Buffer }>("SELECT hash, data FROM ll_rev_trees WHERE hash = ANY($1)", [need.slice(i, i + ASK_BATCH)])
          ).rows;
          for (const r of rows) {
            for (const e of decodeTree(r.data, r.hash)) {
              if (e.kind === "tree") next.push(e.hash);
              else if (e.kind !== "large") blobs.add(e.hash);
            }
          }
          for (const h of need.slice(i, i + ASK_BATCH)) seen.add(h);
        }
        level = next;
      }
      const keep = [...seen, ...blobs];
      for (let i = 0; i < keep.length; i += ASK_BATCH * 10) {
        await c.query("INSERT INTO ll_sweep_keep (hash) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING", [keep.slice(i, i + ASK_BATCH * 10)]);
      }
      const revs = await c.query("DELETE FROM ll_rev_revisions WHERE NOT (rev_id = ANY($1))", [kept]);
      const gone = async (table: "ll_rev_trees" | "ll_rev_blobs") =>
        (
          await c.query<{ n: string; bytes: string }>(
            `WITH d AS (DELETE FROM ${table} t WHERE NOT EXISTS (SELECT 1 FROM ll_sweep_keep k WHERE k.hash = t.hash) RETURNING octet_length(t.data) AS b)
             SELECT COUNT(*) AS n, COALESCE(SUM(b), 0) AS bytes FROM d`,
          )
        ).rows[0]!;
      const trees = await gone("ll_rev_trees");
      const blobRows = await gone("ll_rev_blobs");
      return {
        revisionsKept: kept.length,
        revisionsDeleted: revs.rowCount ?? 0,
        treesDeleted: Number(trees.n),
        blobsDeleted: Number(blobRows.n),
        bytesFreed: Number(trees.bytes) + Number(blobRows.bytes),
      };
    }),
  );
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ECONNRESET",
  "57P01",
  "57P03",
  "08000",
  "08003",
  "08006",
]);

/**
 * Runs a replica operation; a failure of PostgreSQL itself (no server, a lost connection, a missing
 * table) becomes a one-line StateStoreError saying what was being done. RevisionErrors (a missing or
 * damaged object) pass as they are.
 */
async function guarded<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof LedgerloopError) throw err;
    const code = String((err as { code?: unknown })?.code ?? "");
    const msg = errorMessage(err).split("\n")[0]!;
    const lost = CONNECTION_CODES.has(code) || /terminated unexpectedly|Connection terminated|timeout/i.test(msg);
    const detail = [code, msg].filter(Boolean).join(": ");
    throw new StateStoreError(
      lost ? "STATE_DB_UNREACHABLE" : "STATE_DB_UNREADABLE",
      `${what} failed: ${lost ? "cannot reach the server" : "the database refused it"} (${detail})`,
      { cause: err },
    );
  }
}
