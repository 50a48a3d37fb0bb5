// The indexer: brings index.db (and the chunk vectors) up to date with the workspace, wholly (a walk)
// or for the paths a step changed (a refresh, whose cost follows what changed, not the workspace).
import fs from "node:fs";
import path from "node:path";
import { walkFiles } from "../workspace/files.js";
import type { Embedder } from "./embedders/port.js";
import { prepareFile, readLinesIfHash, unchangedRegularFile, type PrepareContext, type PreparedFile } from "./file-prep.js";
import type { HistorySource } from "./history.js";
import type { IgnoreChecker } from "../workspace/ignore-check.js";
import type { NgramIndex } from "./ngram-index.js";
import { chunkKey } from "./ranking.js";
import type { IndexProgress, IndexReport } from "./retriever-types.js";
import type { VectorConnection } from "./vector-connection.js";
import type { VectorItem, VectorMetadata } from "./vector-index.js";

const FILE_BATCH = 64;

export interface IndexerOptions {
  workspace: string;
  index: () => NgramIndex;
  vectors: VectorConnection;
  embedder: Embedder;
  ignore: IgnoreChecker;
  history: HistorySource | null;
  redact?: (text: string) => string;
  warnOnce: (key: string, message: string) => void;
  /** Pulls new ledger events; a full index ends with it (its time counts as vector time, as before). */
  syncLedger: () => Promise<void>;
  /** Settles once the vector side's first connection attempt has (a full index reads files meanwhile). */
  vectorsReady?: () => Promise<void>;
}

/** Indexes files: a full walk ({@link Indexer.index}) or the changed paths ({@link Indexer.refresh}). Callers hold the retriever's lock. */
export class Indexer {
  /** True once a full index has run in this process. */
  indexedOnce = false;
  /**
   * Settles once a full index has stored every file's n-gram rows (or failed), before its vectors
   * are made: what a search without vectors waits for.
   */
  readonly lexicalReady: Promise<void>;
  private filesStored!: () => void;
  lastReport: IndexReport | null = null;
  private readonly prep: PrepareContext;

  constructor(private readonly o: IndexerOptions) {
    this.lexicalReady = new Promise<void>((res) => (this.filesStored = res));
    this.prep = { workspace: o.workspace, redact: o.redact, warnOnce: o.warnOnce, touch: (rel, size, mtimeMs) => o.index().touch(rel, size, mtimeMs) };
  }

  private get ngram(): NgramIndex {
    return this.o.index();
  }

  /** A full index: {@link Indexer.indexFiles}, then {@link Indexer.indexVectors}. */
  async index(opts: { onProgress?: (p: IndexProgress) => void } = {}): Promise<IndexReport> {
    return this.indexVectors(await this.indexFiles(opts), opts);
  }

  /**
   * A full index's first half: walks, reads, parses and stores every file in index.db, while the
   * vector side connects (a Chroma server starting takes a second or more). Then the n-gram index
   * is complete and a search that needs no vectors can run ({@link Indexer.lexicalReady}), before
   * any vector is made. Storing before the connection leaves index.db as it would be after: putFile
   * resets a file's vector state, and a connection that finds another store clears every file's.
   * Only the store's deletes of removed files wait for it (they are in the returned half).
   */
  async indexFiles(opts: { onProgress?: (p: IndexProgress) => void } = {}): Promise<PendingIndex> {
    const t0 = performance.now();
    // History is read in the background, alongside the files (git log works in its own process): a
    // search never waits for a long history. Its time budget runs from the end of this index.
    let indexed!: () => void;
    const budgetFrom = new Promise<void>((res) => (indexed = res));
    void this.o.history?.sync({ budgetFrom });
    try {
      const pending = await this.storeFiles(opts, t0);
      return { ...pending, indexed };
    } catch (err) {
      indexed();
      throw err;
    } finally {
      // A failed index settles it too: a lexical search then runs on what index.db holds.
      this.filesStored();
    }
  }

  private async storeFiles(opts: { onProgress?: (p: IndexProgress) => void }, t0: number): Promise<Omit<PendingIndex, "indexed">> {
    opts.onProgress?.({ phase: "scan", done: 0, total: 0 });
    this.o.ignore.reset();
    const walk = await walkFiles(this.o.workspace);
    const stored = this.ngram.fileStamps();
    const report = emptyReport();
    report.skipped.ignored = walk.skippedIgnored;
    report.files = walk.files.length;
    const listed = new Set(walk.files);
    const toRemove = [...stored.keys()].filter((p) => !listed.has(p));

    let done = 0;
    for (let i = 0; i < walk.files.length; i += FILE_BATCH) {
      const batch = walk.files.slice(i, i + FILE_BATCH);
      const prepared: PreparedFile[] = [];
      for (const rel of batch) {
        const stamp = stored.get(rel);
        // An unchanged file (the common case on a search) costs one lstat here, with no call into
        // prepareFile; a changed one has its whole record read and goes through the confined reader.
        if (stamp && unchangedRegularFile(`${this.o.workspace}/${rel}`, stamp)) report.unchanged++;
        else {
          const outcome = await prepareFile(this.prep, rel, stamp ? this.ngram.fileRecord(rel) : undefined, report);
          if (outcome === "remove") toRemove.push(rel);
          else if (outcome) prepared.push(outcome);
        }
        opts.onProgress?.({ phase: "index", done: ++done, total: walk.files.length, path: rel });
      }
      this.store(prepared);
      report.indexed += prepared.length;
      if (i + FILE_BATCH < walk.files.length) await new Promise<void>((r) => setImmediate(r));
    }
    const removed = this.removeRows(toRemove);
    report.removed = removed.length;
    if (report.indexed > 200) this.ngram.optimize();
    if (report.indexed + report.removed > 0) this.ngram.checkpoint();
    return { report, removed, t0 };
  }

  /**
   * A full index's second half, once the vector side's first connection attempt has settled (a
   * failed side is tried again first, so its own clearing comes before any embedding): deletes the
   * removed files' vectors, embeds every file lacking them, and pulls the ledger's new events.
   */
  async indexVectors(pending: PendingIndex, opts: { onProgress?: (p: IndexProgress) => void } = {}): Promise<IndexReport> {
    const { report, removed, t0, indexed } = pending;
    try {
      await this.o.vectorsReady?.();
      await this.o.vectors.maybeRecover();
      this.o.vectors.takeRecovered(); // every file lacking vectors is embedded below anyway
      await this.removeVectors(removed);
      const tv = performance.now();
      const vectorsWereOk = this.o.vectors.ok;
      report.vectorized = await this.syncVectors(null, opts.onProgress);
      this.noteMissingVectors(report, vectorsWereOk);
      await this.o.syncLedger();
      report.vectorMs = performance.now() - tv;
      report.durationMs = performance.now() - t0;
      this.indexedOnce = true;
      this.lastReport = report;
      return report;
    } finally {
      indexed();
    }
  }

  /**
   * Re-indexes these paths: each is looked up on its own in index.db (a deleted directory by a range
   * of the path index), so a refresh never loads the whole files table.
   */
  async refresh(changedPaths: string[]): Promise<IndexReport> {
    if (!this.indexedOnce && !this.ngram.hasFiles()) return this.index({});
    const t0 = performance.now();
    await this.o.vectors.maybeRecover();
    const report = emptyReport();
    const rels = [...new Set(changedPaths.map((p) => this.toRel(p)).filter((p): p is string => p !== null))];
    if (rels.some((r) => r === ".gitignore" || r.endsWith("/.gitignore"))) this.o.ignore.reset();
    const toRemove: string[] = [];
    const prepared: PreparedFile[] = [];
    for (const rel of rels) {
      report.files++;
      const st = statOrNull(path.join(this.o.workspace, rel));
      if (!st?.isFile() || this.o.ignore.isIgnored(rel) || !this.isInside(rel)) {
        if (st?.isDirectory()) {
          // A directory (created, moved or deleted wholesale): refresh what is under it.
          const sub = await this.refreshDirectory(rel, report);
          prepared.push(...sub.prepared);
          toRemove.push(...sub.remove);
        } else {
          if (this.o.ignore.isIgnored(rel) && st?.isFile()) report.skipped.ignored++;
          toRemove.push(rel, ...this.ngram.pathsUnder(rel));
        }
        continue;
      }
      const outcome = await prepareFile(this.prep, rel, this.ngram.fileRecord(rel), report);
      if (outcome === "remove") toRemove.push(rel);
      else if (outcome) prepared.push(outcome);
    }
    this.store(prepared);
    report.indexed = prepared.length;
    report.removed = await this.removeFiles(toRemove);
    const tv = performance.now();
    const vectorsWereOk = this.o.vectors.ok;
    // Back from a failure (store or embedder): the files indexed meanwhile get their vectors now, not
    // at the next full index.
    const catchUp = this.o.vectors.takeRecovered();
    report.vectorized = await this.syncVectors(catchUp ? null : prepared.map((p) => p.rel));
    this.noteMissingVectors(report, vectorsWereOk);
    report.vectorMs = performance.now() - tv;
    report.durationMs = performance.now() - t0;
    // HEAD may have moved (a commit, a checkout): new commits are read in the background.
    void this.o.history?.sync();
    return report;
  }

  private async refreshDirectory(rel: string, report: IndexReport): Promise<{ prepared: PreparedFile[]; remove: string[] }> {
    const walk = await walkFiles(this.o.workspace, { under: rel });
    const listed = new Set(walk.files);
    const prepared: PreparedFile[] = [];
    const remove = this.ngram.pathsUnder(rel).filter((p) => !listed.has(p));
    for (const f of walk.files) {
      const outcome = await prepareFile(this.prep, f, this.ngram.fileRecord(f), report);
      if (outcome === "remove") remove.push(f);
      else if (outcome) prepared.push(outcome);
    }
    return { prepared, remove };
  }

  private toRel(p: string): string | null {
    const abs = path.resolve(this.o.workspace, p);
    const rel = path.relative(this.o.workspace, abs);
    if (!rel || rel.startsWith("..") || path.isAbsolute(rel)) return null;
    return rel.split(path.sep).join("/");
  }

  private isInside(rel: string): boolean {
    try {
      const real = fs.realpathSync(path.join(this.o.workspace, rel));
      return real === this.o.workspace || real.startsWith(this.o.workspace + path.sep);
    } catch {
      return false;
    }
  }

  private store(prepared: PreparedFile[]): void {
    if (prepared.length === 0) return;
    const ngram = this.ngram;
    ngram.transaction(() => {
      for (const p of prepared) {
        ngram.putFile({ path: p.rel, hash: p.hash, size: p.size, mtimeMs: p.mtimeMs, lang: p.lang, lines: p.lines.length }, p.chunks, p.symbols);
      }
    });
  }

  private async removeFiles(rels: string[]): Promise<number> {
    const removed = this.removeRows(rels);
    await this.removeVectors(removed);
    return removed.length;
  }

  /** Forgets these files in index.db; returns the ones it held. */
  private removeRows(rels: string[]): string[] {
    const unique = [...new Set(rels)];
    const ngram = this.ngram;
    return ngram.transaction(() => unique.filter((r) => ngram.removeFile(r)));
  }

  /** Deletes removed files' vectors from the store (when it is up). */
  private async removeVectors(removed: string[]): Promise<void> {
    if (removed.length) await this.o.vectors.use((v) => v.deleteWhere("code", "path", removed));
  }

  /**
   * Embeds and stores the chunks of files whose vectors are missing or stale (all such files, or only
   * `only`). Files are re-read and checked against their indexed hash, so a file that changed since
   * is left for the next refresh rather than embedded with the wrong line ranges.
   */
  private async syncVectors(only: string[] | null, onProgress?: (p: IndexProgress) => void): Promise<number> {
    const vectors = this.o.vectors;
    if (!vectors.ok) return 0;
    if (only && only.length === 0) return 0;
    const todo = this.ngram.filesNeedingVectors(only ?? undefined);
    let stored = 0;
    let pending: Promise<unknown> = Promise.resolve();
    let failed = false;
    for (let i = 0; i < todo.length && !failed; i += FILE_BATCH) {
      const batch = todo.slice(i, i + FILE_BATCH);
      const items: VectorItem[] = [];
      const texts: string[] = [];
      const done: Array<{ path: string; hash: string }> = [];
      const stale: string[] = [];
      // On a shared store another worker's clone may have stored these files' vectors already: a
      // file whose every chunk is there with its content hash is not embedded again.
      const present = await this.presentInStore(batch);
      const reused: Array<{ path: string; hash: string }> = [];
      for (const f of batch) {
        const chunks = this.ngram.chunksOf(f.path);
        if (chunks.length && chunks.every((c) => present?.get(chunkKey(f.path, c.startLine, c.endLine))?.hash === f.hash)) {
          reused.push({ path: f.path, hash: f.hash });
          continue;
        }
        // Redacted: a secret in a workspace file must not travel to an embeddings endpoint.
        const lines = readLinesIfHash(this.o.workspace, f.path, f.hash, this.o.redact);
        if (!lines) continue;
        if (f.vecHash !== null) stale.push(f.path);
        for (const c of chunks) {
          items.push({
            id: chunkKey(f.path, c.startLine, c.endLine),
            vector: [],
            metadata: { path: f.path, start: c.startLine, end: c.endLine, hash: f.hash },
          });
          texts.push(docText(f.path, c.symbols, lines.slice(c.startLine - 1, c.endLine).join("\n")));
        }
        done.push({ path: f.path, hash: f.hash });
      }
      if (reused.length) {
        const ngram = this.ngram;
        ngram.transaction(() => reused.forEach((d) => ngram.setVectorHash(d.path, d.hash)));
      }
      if (items.length === 0) {
        onProgress?.({ phase: "vectors", done: Math.min(i + batch.length, todo.length), total: todo.length });
        continue;
      }
      let embedded: number[][];
      try {
        embedded = await this.o.embedder.embedDocuments(texts);
      } catch (err) {
        // The endpoint died or answered garbage: the batch in flight is still stored, the rest waits
        // for a later index.
        await pending;
        vectors.degrade(err);
        break;
      }
      embedded.forEach((v, j) => (items[j]!.vector = v));
      // One batch in flight while the next is embedded: Chroma works while we compute.
      await pending;
      if (failed || !vectors.ok) break;
      pending = (async () => {
        const ok = await vectors.use(async (v) => {
          if (stale.length) await v.deleteWhere("code", "path", stale);
          await v.upsert("code", items);
          return true;
        });
        if (!ok) {
          failed = true;
          return;
        }
        const ngram = this.ngram;
        ngram.transaction(() => done.forEach((d) => ngram.setVectorHash(d.path, d.hash)));
        stored += items.length;
        onProgress?.({ phase: "vectors", done: Math.min(i + batch.length, todo.length), total: todo.length });
      })();
    }
    await pending;
    return stored;
  }

  /** The metadata the store holds for these files' chunk ids (null when it cannot say). */
  private async presentInStore(files: Array<{ path: string }>): Promise<Map<string, VectorMetadata> | null> {
    const ids = files.flatMap((f) => this.ngram.chunksOf(f.path).map((c) => chunkKey(f.path, c.startLine, c.endLine)));
    if (ids.length === 0) return null;
    return (await this.o.vectors.use((v) => (v.get ? v.get("code", ids) : Promise.resolve(null)))) ?? null;
  }

  /**
   * When vectors were wanted but the vector side failed, counts the files that still lack them, and
   * says so when it failed during this run (a side already down was announced when it went down).
   */
  private noteMissingVectors(report: IndexReport, wasOk: boolean): void {
    const vectors = this.o.vectors;
    if (vectors.disabled || vectors.ok) return;
    report.vectorsMissing = this.ngram.countFilesNeedingVectors();
    if (report.vectorsMissing > 0 && wasOk) {
      this.o.warnOnce(
        `missing:${vectors.error}`,
        `the n-gram index is complete; ${report.vectorsMissing} file(s) have no vectors yet (${vectors.error ?? "vector side unavailable"}); they are embedded on a later index once it works`,
      );
    }
  }
}

/** The text embedded for a chunk: where it is and what it declares, then the code. */
function docText(rel: string, symbols: string[], body: string): string {
  return `${rel}\n${symbols.join(" ")}\n${body}`;
}

/** A full index between its halves: what the files half found, for the vectors half. */
export interface PendingIndex {
  report: IndexReport;
  /** Files removed from index.db whose vectors the store may still hold. */
  removed: string[];
  t0: number;
  /** Starts the history read's time budget (at the end of the whole index). */
  indexed: () => void;
}

export function emptyReport(): IndexReport {
  return {
    files: 0,
    indexed: 0,
    unchanged: 0,
    removed: 0,
    skipped: { ignored: 0, binary: 0, huge: 0, unreadable: 0, vanished: 0 },
    invalidUtf8: { count: 0, paths: [] },
    vectorized: 0,
    durationMs: 0,
    vectorMs: 0,
    vectorsMissing: 0,
  };
}

function statOrNull(abs: string): fs.Stats | null {
  try {
    return fs.statSync(abs);
  } catch {
    return null;
  }
}
