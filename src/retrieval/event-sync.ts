// Ledger events into the index: new events are searchable by n-grams at once; their vectors follow
// in the background, one batch per turn of the retriever's lock.
import type { Ledger } from "../ledger/port.js";
import type { LedgerEvent } from "../state.js";
import type { Embedder } from "./embedders/port.js";
import { eventDoc } from "./event-docs.js";
import type { NgramIndex } from "./ngram-index.js";
import type { VectorConnection } from "./vector-connection.js";

const EVENT_BATCH = 256;

export interface EventSyncOptions {
  index: () => NgramIndex;
  vectors: VectorConnection;
  embedder: Embedder;
  ledger?: Ledger;
  /** Sync only this thread's events (default: every thread of the ledger). */
  threadId?: string;
  /** Runs fn under the retriever's lock, rebuilding a corrupt index once. */
  guarded: <T>(fn: () => Promise<T>) => Promise<T>;
  /** True once the retriever is closing: background work stops. */
  isClosed: () => boolean;
}

/** Keeps the index's copy of the ledger's events (and their vectors) up to date. */
export class EventSync {
  private vectorsRun: Promise<void> | null = null;
  private vectorsAgain = false;

  constructor(private readonly o: EventSyncOptions) {}

  /** Indexes events (other types are ignored); returns how many were new. Caller holds the lock. */
  async indexEvents(events: LedgerEvent[]): Promise<number> {
    const docs = events.map(eventDoc).filter((d): d is NonNullable<typeof d> => d !== null);
    const added = this.o.index().putEvents(docs);
    // Events are searchable in the n-gram index at once; their vectors follow in the background, so a
    // step's context does not wait for an embedding round trip to Chroma (they lag by about a step).
    if (added > 0) this.scheduleVectors();
    return added;
  }

  /** Pulls events appended to the ledger since the last sync: of `threadId` when given, else of every thread. Caller holds the lock. */
  async syncLedger(threadId?: string): Promise<void> {
    const ledger = this.o.ledger;
    if (!ledger) return;
    await this.forgetDeleted(ledger);
    await this.purgeForgotten();
    const only = threadId ?? this.o.threadId;
    const threads = only ? [only] : (await ledger.threads()).map((t) => t.threadId);
    for (const thread of threads) {
      const events = await ledger.list(thread, { afterSeq: this.o.index().eventCursor(thread) });
      if (events.length) await this.indexEvents(events);
    }
  }

  /**
   * Forgets the indexed events of runs deleted whole since the last sync, wherever they were deleted
   * (on a shared PostgreSQL state, another machine may have). A deleted run's id is never reused, so
   * everything indexed under it is the deleted run's.
   */
  private async forgetDeleted(ledger: Ledger): Promise<void> {
    const deleted = await ledger.deletedThreads();
    if (deleted.length === 0) return;
    const index = this.o.index();
    for (const thread of index.indexedThreadsAmong(deleted)) index.deleteThreadEvents(thread);
  }

  /** Deletes the event vectors of runs deleted since (index.db names them until this succeeds). */
  private async purgeForgotten(): Promise<void> {
    const threads = this.o.index().forgottenThreads();
    if (threads.length === 0 || !this.o.vectors.ok) return;
    const done = await this.o.vectors.use(async (v) => {
      await v.deleteWhere("events", "threadId", threads);
      return true;
    });
    if (done) this.o.index().clearForgotten(threads);
  }

  /**
   * Waits, at most `timeoutMs`, until every indexed event of `threadId` with seq < `before` has its
   * vector (normally made in the background already: no wait). False when they could not all be made
   * (vector store down, or too slow): the caller then leaves vectors out rather than use a partial set.
   */
  async vectorsBefore(threadId: string, before: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.o.vectors.ok) return false;
      if (this.pendingBefore(threadId, before) === 0) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      this.scheduleVectors();
      let timer: NodeJS.Timeout | undefined;
      const run = this.vectorsRun ?? Promise.resolve();
      const finished = await Promise.race([
        run.then(
          () => true,
          () => true,
        ),
        new Promise<false>((r) => (timer = setTimeout(() => r(false), left))),
      ]);
      clearTimeout(timer);
      // A run that ended with the events still pending failed to store them (it degrades the store, or it would retry forever).
      if (finished && this.pendingBefore(threadId, before) > 0) return false;
    }
  }

  private pendingBefore(threadId: string, before: number): number {
    const db = this.o.index().db;
    return (db.prepare("SELECT count(*) AS n FROM events WHERE thread_id = ? AND seq < ? AND vec = 0").get(threadId, before) as { n: number }).n;
  }

  /** Resolves when no event vectors are being made. */
  async whenIdle(): Promise<void> {
    while (this.vectorsRun) await this.vectorsRun.catch(() => {});
  }

  private scheduleVectors(): void {
    if (this.vectorsRun) {
      this.vectorsAgain = true;
      return;
    }
    this.vectorsRun = (async () => {
      // One batch at a time; syncVectors takes the retriever's lock only around index.db, never
      // around the vector store's round trips, so a search never waits behind a backlog or a write.
      let done = false;
      do {
        this.vectorsAgain = false;
        if (this.o.isClosed()) return;
        done = await this.syncVectors(1).catch(() => true);
      } while (!done || this.vectorsAgain);
    })().finally(() => {
      this.vectorsRun = null;
    });
  }

  /**
   * Embeds and stores the vectors of up to `batches` × 256 events; true when none are left. Which
   * events need vectors is read under the retriever's lock, and they are marked done under it; the
   * embedding and the store's write happen outside it (a fresh Chroma collection's first write takes
   * ~0.1 s, and a search waiting for it would be the run's wait). What changed meanwhile is checked
   * when marking: a store replaced by a reconnect (which cleared the vector state) gets the batch
   * again, and the vectors of a run forgotten meanwhile (deleted, its vectors purged) are deleted
   * again rather than left in the store.
   */
  private async syncVectors(batches = Infinity): Promise<boolean> {
    const vectors = this.o.vectors;
    for (let b = 0; b < batches; b++) {
      const batch = await this.o.guarded(async () => {
        const store = vectors.store;
        if (!store) return null;
        const ngram = this.o.index();
        const todo = ngram.eventsNeedingVectors(EVENT_BATCH);
        if (todo.length === 0) return null;
        return { store, todo, meta: new Map(ngram.eventsByIds(todo.map((t) => t.eventId)).map((e) => [e.eventId, e])) };
      });
      if (!batch) return true;
      const { store, todo, meta } = batch;
      let embedded: number[][];
      try {
        embedded = await this.o.embedder.embedDocuments(todo.map((t) => t.preview));
      } catch (err) {
        vectors.degrade(err);
        return true;
      }
      const ok = await vectors.use(async (v) => {
        if (v !== store) return false; // replaced since: the new store's vector state was cleared
        await v.upsert(
          "events",
          todo.map((t, i) => {
            const m = meta.get(t.eventId);
            return { id: t.eventId, vector: embedded[i]!, metadata: { threadId: m?.threadId ?? "", seq: m?.seq ?? 0, type: m?.type ?? "" } };
          }),
        );
        return true;
      });
      if (!ok) return true;
      const settled = await this.o.guarded(async () => {
        if (vectors.store !== store) return false;
        const ngram = this.o.index();
        const ids = todo.map((t) => t.eventId);
        const still = new Set(ngram.eventsByIds(ids).map((e) => e.eventId));
        ngram.markEventsVectorized(ids.filter((id) => still.has(id)));
        // Events gone from the index while their vectors were written: their run was forgotten, and
        // its purge may have run before this write landed.
        const gone = [...new Set(ids.filter((id) => !still.has(id)).map((id) => meta.get(id)?.threadId ?? ""))].filter(Boolean);
        if (gone.length) await vectors.use((v) => v.deleteWhere("events", "threadId", gone));
        return true;
      });
      if (!settled) return true;
    }
    return false;
  }
}
