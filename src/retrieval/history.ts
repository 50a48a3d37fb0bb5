// The repository's history as a retrieval source. Commit messages are written in the words people
// search with ("fix default shown in help for flags"), and files that change together belong
// together: a query that matches commit messages votes for the files those commits touched, and a
// strongly voted file lends a little of its score to its co-change neighbours.
//
// Stored in index.db next to the n-gram tables (derived data: rebuilt with it). Reading is
// incremental (only commits since the remembered HEAD), bounded (newest N commits per file, a total
// cap, a time budget per read) and runs in the background: a search uses whatever has been read.
import type { Database } from "../sqlite/driver.js";
import { errorMessage } from "../errors.js";
import { defaultRedactor } from "../secrets.js";
import { gitHead, isAncestor, readLog, type GitCommit, type ReadEnd } from "./git-log.js";
import { identifierParts, STOPWORDS, wordsColumn } from "./tokens.js";

/** Bounds of the history read; all have defaults. */
export interface HistorySettings {
  /** Newest commits remembered per file (older ones stop voting for it). */
  perFile?: number;
  /** Commits read at most (newest first). */
  maxCommits?: number;
  /** Time one read may take; a longer history is read as far as it gets. */
  timeBudgetMs?: number;
}

export const HISTORY_DEFAULTS = { perFile: 40, maxCommits: 20_000, timeBudgetMs: 10_000 } as const;

/** Commits touching more files than this are bulk changes (reformat, rename, vendoring): they vote for nothing. */
const BULK_COMMIT_FILES = 50;
/** Co-change is learnt only from commits this small: a 30-file commit does not make its files related. */
const COCHANGE_MAX_FILES = 12;
const MATCHED_COMMITS = 120;
/** How many of the best files lend to their neighbours. */
const COCHANGE_TOP = 3;

/**
 * The ranking's constants, in one object so the benchmark can try others (BENCH_HISTORY_TUNING);
 * the values are those chosen on the five localization tuning sets (hono and rich, each at two
 * points of their history, and vite: 350 queries), for the best mean MRR gain with no set worse off.
 */
export const HISTORY_TUNING = {
  /** Weight of the history list in the file fusion (1.5: +0.065 MRR mean, +0.035 on the worst set; 2: +0.052, +0.010). */
  weight: 1.5,
  /** Recency: a commit this many days older than the newest weighs half. */
  halfLifeDays: 365,
  /** Share of a strong hit's score lent to a co-change neighbour (times how often they changed together). */
  cochangeShare: 0.3,
  /** A commit's vote is divided by (files it touched)^this. */
  fileExponent: 1,
  /**
   * How many of the best fused files (all sources) lend to their co-change neighbours (0: none).
   * Off: lending after the fusion lifted a file's siblings in the same module over the file itself
   * (hono's client/types.ts over client/utils.ts); on the tuning sets it cost 0.009 MRR on average
   * and 0.034 on hono. Co-change still lends inside the history list (`cochangeShare`).
   */
  fusedCochangeTop: 0,
  /** Part of such a file's fused score a neighbour gets, times their shared-commit share. */
  fusedCochangeShare: 0.2,
  /** Weights of the other sources in the fusion when history is part of it. */
  fusionWeights: {} as { bm25?: number; path?: number; symbol?: number; vector?: number },
  /** How much a history vote's strength counts beside its rank (0: rank only). */
  scoreExponent: 0.5,
};

const SCHEMA = `
CREATE TABLE IF NOT EXISTS hist_commits (id INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE, ts INTEGER NOT NULL, subject TEXT NOT NULL, nfiles INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS hist_commits_ts ON hist_commits(ts);
CREATE TABLE IF NOT EXISTS hist_files (path TEXT NOT NULL, commit_id INTEGER NOT NULL, PRIMARY KEY (path, commit_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS hist_files_commit ON hist_files(commit_id);
CREATE VIRTUAL TABLE IF NOT EXISTS hist_fts USING fts5(words, tokenize='porter unicode61', content='', contentless_delete=1);
`;

/** What the history source knows, for stats and doctor. */
export interface HistoryStatus {
  state: "ok" | "off" | "reading";
  /** Why it is off (not a git repository, disabled), or how the last read ended. */
  detail: string;
  head: string | null;
  commits: number;
  shallow: boolean;
  /** Set when the last read stopped at a cap, or where git could not read on ("error"): older history is missing. */
  partial: ReadEnd | null;
}

/** A file voted for by the history, with the subjects of the commits that voted most. */
export interface HistoryHit {
  path: string;
  score: number;
  commits: string[];
}

/** History read from git into index.db, and searched there. */
export class HistorySource {
  private readonly s: Required<HistorySettings>;
  private running: Promise<void> | null = null;
  /** Set by {@link HistorySource.stop}: the retriever is closing, nothing more is read or stored. */
  private stopped = false;
  private again = false;
  private status: HistoryStatus = { state: "off", detail: "not read yet", head: null, commits: 0, shallow: false, partial: null };
  private readonly ready = new WeakMap<Database, ReturnType<typeof prepareSearch>>();
  /** Co-change lists by path, valid while the connection has written nothing (see {@link HistorySource.neighbours}). */
  private cochangeMemo: { db: Database; stamp: string; lists: Map<string, CoChange[]> } | null = null;

  constructor(
    private readonly workspace: string,
    /** The current index.db handle (it changes when the index is rebuilt). */
    private readonly db: () => Database,
    settings: HistorySettings = {},
    /**
     * Applied to every message before it is stored. Without one, the process-wide redactor (credential
     * formats, secret-looking assignments, the environment's secret values) still applies: a token
     * pasted into a commit message never reaches index.db, whoever opened the retriever.
     */
    private readonly redact: (text: string) => string = (t) => defaultRedactor.redact(t),
    private readonly warn: (m: string) => void = () => {},
  ) {
    this.s = { ...HISTORY_DEFAULTS, ...settings };
  }

  private handle(): Database {
    const db = this.db();
    if (!this.ready.has(db)) {
      db.exec(SCHEMA);
      this.ready.set(db, prepareSearch(db));
    }
    return db;
  }

  /** The search's statements, prepared once per index handle. */
  private stmts(db: Database): ReturnType<typeof prepareSearch> {
    return this.ready.get(db)!;
  }

  private meta(key: string): string | undefined {
    return this.handle().prepare("SELECT value FROM meta WHERE key = ?").pluck().get(key) as string | undefined;
  }

  private setMeta(key: string, value: string): void {
    this.handle().prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)").run(key, value);
  }

  /**
   * Ends a read under way after its current batch (git is stopped) and starts no new one; resolves
   * when it has ended. The retriever calls it before closing index.db: a batch stored into a closed
   * handle would otherwise fail after the close, with no one left to catch it.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.whenIdle();
  }

  /**
   * Starts bringing the stored history up to HEAD in the background (a no-op when it is). With
   * `budgetFrom`, the time budget starts when that settles (a full index: the read runs beside the
   * files but gets few turns of the event loop while they are indexed, and on a loaded machine its
   * budget would run out waiting, not reading; the count cap still bounds it).
   */
  sync(opts: { budgetFrom?: Promise<unknown> } = {}): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.syncOnce(opts.budgetFrom);
          opts = {}; // a second pass (HEAD moved meanwhile) has its budget from its start
        } catch (err) {
          if (this.stopped) break; // closing: what was stored stays, the rest is read next time
          // History is an extra: a failure leaves the other sources searching as before.
          this.status = { ...this.status, state: "off", detail: `history could not be read (${errorMessage(err)})` };
          this.warn(`the git history could not be read (${errorMessage(err)}); searching without it`);
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Resolves when no read is under way. */
  async whenIdle(): Promise<void> {
    while (this.running) await this.running;
  }

  getStatus(): HistoryStatus {
    let commits = this.status.commits;
    try {
      commits = this.handle().prepare("SELECT COUNT(*) FROM hist_commits").pluck().get() as number;
    } catch {
      // a closed or rebuilt index: keep the last count
    }
    return { ...this.status, commits };
  }

  private async syncOnce(budgetFrom?: Promise<unknown>): Promise<void> {
    const h = await gitHead(this.workspace);
    if (h.head === null) {
      // A plain directory has no history and needs no word; a repository git refuses is said once.
      if (h.refused && this.status.detail !== h.reason) this.warn(`the git history is not read: ${h.reason}`);
      this.status = { state: "off", detail: h.reason, head: null, commits: 0, shallow: false, partial: null };
      return;
    }
    const known = this.meta("history_head");
    if (known === h.head) {
      if (this.status.head === h.head && this.status.state === "ok") return;
      this.status = {
        state: "ok",
        detail: `${h.shallow ? "shallow clone: only the history present is used; " : ""}up to date`,
        head: h.head,
        commits: 0,
        shallow: h.shallow,
        partial: null,
      };
      return;
    }
    let range = "HEAD";
    let fresh = true;
    if (known && (await isAncestor(this.workspace, known, h.head))) {
      range = `${known}..${h.head}`;
      fresh = false;
    }
    this.status = {
      state: "reading",
      detail: fresh ? "reading the history" : "reading new commits",
      head: h.head,
      commits: 0,
      shallow: h.shallow,
      partial: null,
    };
    if (fresh) this.clear(); // first read, or a rewritten history (rebase, force-push, another clone)
    const perPath = new Map<string, number>();
    const touched = new Set<string>();
    let budgetStart = budgetFrom ? Infinity : Date.now();
    void budgetFrom?.finally(() => (budgetStart = Date.now()));
    const read = (range: string, stopAt?: string) =>
      readLog({
        cwd: this.workspace,
        range,
        ...(stopAt ? { stopAt } : {}),
        maxCommits: this.s.maxCommits,
        deadline: () => budgetStart + this.s.timeBudgetMs,
        shouldStop: () => this.stopped,
        onBatch: async (commits) => {
          if (this.stopped) return;
          this.store(commits, fresh ? perPath : null, touched);
          // Let searches and the index run between batches.
          await new Promise<void>((res) => setImmediate(res));
        },
      });
    let r = await read(range);
    if (!fresh && r.end === "error" && r.read === 0 && !this.stopped) {
      // `known..HEAD` walks below the remembered HEAD to learn what to leave out, and in a damaged
      // .git dies there before it gives a commit; reading down from HEAD to the remembered HEAD does
      // not go below it (on a linear history the same commits; a branch merged since with commits
      // older than the remembered HEAD may lose those).
      r = await read("HEAD", known!);
    }
    // Stopped (closing): history_head is not advanced, so the next open reads this range again.
    if (this.stopped || r.end === "stopped") return;
    if (!fresh) this.prune(touched);
    // git failed before it gave a single commit: off, and tried again on the next refresh.
    const gitSaid = r.error ?? "git log failed";
    if (r.end === "error" && r.read === 0) throw new Error(gitSaid);
    // A capped read keeps what it got (the newest part of the history); later reads add only newer
    // commits, so a huge history costs one bounded read, not one per refresh. So does a read git gave
    // up part-way (a corrupt or missing object in a damaged .git): it would fail at the same place on
    // every refresh.
    const partial = r.end === "count-cap" || r.end === "time-cap" || r.end === "error";
    this.setMeta("history_head", h.head);
    const detail =
      (h.shallow ? "shallow clone: only the history present is used; " : "") +
      (r.end === "complete"
        ? `read ${r.read} commit(s)`
        : r.end === "count-cap"
          ? `read the newest ${r.read} commits (cap ${this.s.maxCommits})`
          : r.end === "error"
            ? `read ${r.read} commit(s); git could not read further (${gitSaid})`
            : `read ${r.read} commits before the time budget (${this.s.timeBudgetMs} ms) ran out`);
    this.status = { state: "ok", detail, head: h.head, commits: 0, shallow: h.shallow, partial: partial ? r.end : null };
    if (r.end === "error")
      this.warn(`the git history could not be read past its newest ${r.read} commit(s) (${gitSaid}); searching with the ${r.read} commit(s) read`);
  }

  private clear(): void {
    const db = this.handle();
    db.transaction(() => {
      db.exec("DELETE FROM hist_files; DELETE FROM hist_commits; DELETE FROM hist_fts;");
      db.prepare("DELETE FROM meta WHERE key = 'history_head'").run();
    })();
  }

  /** Stores commits (newest first); `perPath` counts per file during a fresh read, to apply the per-file cap. */
  private store(commits: GitCommit[], perPath: Map<string, number> | null, touched: Set<string>): void {
    const db = this.handle();
    const exists = db.prepare("SELECT id FROM hist_commits WHERE hash = ?").pluck();
    const insC = db.prepare("INSERT INTO hist_commits(hash, ts, subject, nfiles) VALUES (?, ?, ?, ?)");
    const insF = db.prepare("INSERT OR IGNORE INTO hist_files(path, commit_id) VALUES (?, ?)");
    const insT = db.prepare("INSERT INTO hist_fts(rowid, words) VALUES (?, ?)");
    db.transaction(() => {
      for (const c of commits) {
        if (exists.get(c.hash) !== undefined) continue;
        // Messages can carry tokens ("use key sk-…"): they pass the runtime's redactor before storage.
        const message = this.redact(`${c.subject}\n${c.body}`);
        const subject = message.split("\n", 1)[0]!.slice(0, 200);
        const id = Number(insC.run(c.hash, c.ts, subject, c.files.length).lastInsertRowid);
        insT.run(id, wordsColumn(message.slice(0, 4000)));
        if (c.files.length > BULK_COMMIT_FILES) continue;
        for (const f of c.files) {
          if (perPath) {
            const n = perPath.get(f) ?? 0;
            if (n >= this.s.perFile) continue;
            perPath.set(f, n + 1);
          }
          insF.run(f, id);
          touched.add(f);
        }
      }
    })();
  }

  /** After new commits arrived, keeps only the newest `perFile` commits of each touched file. */
  private prune(paths: Set<string>): void {
    const db = this.handle();
    const del = db.prepare(
      `DELETE FROM hist_files WHERE path = @p AND commit_id NOT IN
         (SELECT h.commit_id FROM hist_files h JOIN hist_commits c ON c.id = h.commit_id WHERE h.path = @p ORDER BY c.ts DESC, c.id DESC LIMIT @n)`,
    );
    db.transaction(() => {
      for (const p of paths) del.run({ p, n: this.s.perFile });
    })();
  }

  /**
   * Files voted for by commits whose messages match the query: each matching commit gives its BM25
   * score × recency ÷ the number of files it touched to each (indexed) file, then the best few files
   * lend a share of their score to the files they most often changed with.
   */
  search(query: string, limit: number): HistoryHit[] {
    const words = historyWords(query);
    if (words.length === 0) return [];
    const db = this.handle();
    const st = this.stmts(db);
    const matched = st.matched.all(words.map((w) => `"${w}"`).join(" OR "), MATCHED_COMMITS) as Array<{
      id: number;
      ts: number;
      subject: string;
      nfiles: number;
      score: number;
    }>;
    if (matched.length === 0) return [];
    const newest = (st.newest.get() as number | null) ?? 0;
    const byId = new Map(matched.map((m) => [m.id, m]));
    // Only files the index knows (present in the workspace now) can be results.
    const rows = st.touched.all(JSON.stringify(matched.map((m) => m.id))) as Array<{ id: number; path: string }>;
    const votes = new Map<string, { score: number; why: Array<{ subject: string; w: number }> }>();
    for (const { id, path } of rows) {
      const m = byId.get(id)!;
      const ageDays = Math.max(0, newest - m.ts) / 86400;
      const w = (m.score * Math.pow(0.5, ageDays / HISTORY_TUNING.halfLifeDays)) / Math.pow(Math.max(1, m.nfiles), HISTORY_TUNING.fileExponent);
      let v = votes.get(path);
      if (!v) votes.set(path, (v = { score: 0, why: [] }));
      v.score += w;
      v.why.push({ subject: m.subject, w });
    }
    const ranked = [...votes.entries()].sort((a, b) => b[1].score - a[1].score);
    this.lendToNeighbours(db, ranked.slice(0, COCHANGE_TOP), votes);
    return [...votes.entries()]
      .map(([path, v]) => ({
        path,
        score: v.score,
        commits: [...new Set(v.why.sort((a, b) => b.w - a.w).map((x) => x.subject))].slice(0, 3),
      }))
      .sort((a, b) => b.score - a.score || (a.path < b.path ? -1 : 1))
      .slice(0, limit);
  }

  private lendToNeighbours(
    db: Database,
    top: Array<[string, { score: number }]>,
    votes: Map<string, { score: number; why: Array<{ subject: string; w: number }> }>,
  ): void {
    for (const [path, v] of top) {
      for (const r of this.neighboursIn(db, path)) {
        const lent = HISTORY_TUNING.cochangeShare * v.score * r.share;
        let t = votes.get(r.path);
        if (!t) votes.set(r.path, (t = { score: 0, why: [] }));
        t.score += lent;
        t.why.push({ subject: `changes with ${path}`, w: lent });
      }
    }
  }

  /**
   * The files that changed with `path` in at least two small commits (best first, at most 10), each
   * with the share of `path`'s remembered commits that touched it too. Empty when history is off.
   */
  neighbours(path: string): CoChange[] {
    try {
      return this.neighboursIn(this.handle(), path);
    } catch {
      return []; // a closed or rebuilt index: no neighbours rather than a failed search
    }
  }

  private neighboursIn(db: Database, path: string): CoChange[] {
    // Remembered until this connection writes anything (an index, a refresh, new commits) or another
    // connection commits: a search asks for the same few lists twice (history's own lending, then the
    // fused one), and the next search often for the same files again.
    const st = this.stmts(db);
    const stamp = `${st.changes.get() as number}:${st.dataVersion.get() as number}`;
    if (this.cochangeMemo?.db !== db || this.cochangeMemo.stamp !== stamp || this.cochangeMemo.lists.size > 4096)
      this.cochangeMemo = { db, stamp, lists: new Map() };
    const known = this.cochangeMemo.lists.get(path);
    if (known) return known.map((r) => ({ ...r }));
    const n = (st.commitsOf.get(path) as number) || 1;
    // Once together is chance.
    const list = (st.cochange.all(path) as Array<{ path: string; n: number }>).filter((r) => r.n >= 2).map((r) => ({ path: r.path, share: r.n / n }));
    this.cochangeMemo.lists.set(path, list);
    return list.map((r) => ({ ...r }));
  }
}

/** The statements of a history search (history tables and the files table of the same index.db). */
function prepareSearch(db: Database) {
  return {
    matched: db.prepare(
      `SELECT c.id, c.ts, c.subject, c.nfiles, -r.rank AS score
       FROM (SELECT rowid, bm25(hist_fts) AS rank FROM hist_fts WHERE hist_fts MATCH ? ORDER BY rank LIMIT ?) r
       JOIN hist_commits c ON c.id = r.rowid`,
    ),
    newest: db.prepare("SELECT MAX(ts) FROM hist_commits").pluck(),
    touched: db.prepare(
      `SELECT h.commit_id AS id, h.path FROM hist_files h JOIN files f ON f.path = h.path WHERE h.commit_id IN (SELECT value FROM json_each(?))`,
    ),
    cochange: db.prepare(
      `SELECT o.path, COUNT(*) AS n FROM hist_files h
         JOIN hist_commits c ON c.id = h.commit_id AND c.nfiles <= ${COCHANGE_MAX_FILES}
         JOIN hist_files o ON o.commit_id = h.commit_id AND o.path <> h.path
         JOIN files f ON f.path = o.path
       WHERE h.path = ? GROUP BY o.path ORDER BY n DESC, o.path LIMIT 10`,
    ),
    commitsOf: db.prepare("SELECT COUNT(*) FROM hist_files WHERE path = ?").pluck(),
    changes: db.prepare("SELECT total_changes()").pluck(),
    dataVersion: db.prepare("PRAGMA data_version").pluck(),
  };
}

/** A co-change neighbour: how often (share of the file's commits) it changed with the file. */
export interface CoChange {
  path: string;
  share: number;
}

/** The query's content words for the porter-stemmed message index (identifiers split, stopwords out). */
export function historyWords(query: string): string[] {
  const out = new Set<string>();
  for (const m of query.matchAll(/[A-Za-z0-9_$]+/g)) {
    for (const p of identifierParts(m[0])) if (p.length >= 2 && !STOPWORDS.has(p) && !/^[0-9]+$/.test(p)) out.add(p);
  }
  return [...out].slice(0, 32);
}
