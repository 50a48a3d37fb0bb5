import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, describe, expect, it } from "vitest";
import { createRetriever, type CodeHit, type Retriever, type RetrieverOptions } from "../../src/retrieval/hybrid.js";
import { HistorySource, historyWords } from "../../src/retrieval/history.js";
import { NgramIndex } from "../../src/retrieval/ngram-index.js";
import { describeHistory } from "../../src/retrieval/history-doctor.js";
import { handleDoctor } from "../../src/cli/doctor.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { git, makeRepo, type RepoCommit } from "./helpers/git-repo.js";

const open: Retriever[] = [];
afterAll(async () => {
  for (const r of open.splice(0)) await r.close();
  cleanupTemp();
});

/** A retriever without vectors (the history source is what is tested), history read to the end. */
async function retriever(ws: string, opts: Partial<RetrieverOptions> = {}) {
  const warnings: string[] = [];
  const r = await createRetriever({ workspace: ws, stateDir: path.join(ws, ".ledgerloop"), vectorIndex: "off", onWarning: (m) => warnings.push(m), ...opts });
  open.push(r);
  await r.index();
  await r.whenIdle();
  return { r, warnings };
}

const paths = (hits: CodeHit[]) => [...new Set(hits.map((h) => h.path))];

// The code never says "help" or "default": only the history connects the words to the file.
const BASE: RepoCommit[] = [
  {
    message: "initial layout",
    files: {
      "src/render.ts": "export function extraOf(opt: { dflt?: string }) {\n  return opt.dflt ? [`(dflt ${opt.dflt})`] : [];\n}\n",
      "src/table.ts": "export function columns(n: number) {\n  return Array.from({ length: n }, (_, i) => i);\n}\n",
      "src/parse.ts": "export function tokens(s: string) {\n  return s.split(/\\s+/);\n}\n",
      "src/types.ts": "export interface Opt { dflt?: string }\n",
    },
  },
  {
    message: "show default values in help text for flags",
    files: {
      "src/render.ts": "export function extraOf(opt: { dflt?: string }) {\n  return opt.dflt ? [`[dflt: ${opt.dflt}]`] : [];\n}\n",
      "src/types.ts": "export interface Opt { dflt?: string; show?: boolean }\n",
    },
  },
  {
    message: "columns: pad the last column",
    files: { "src/table.ts": "export function columns(n: number) {\n  return Array.from({ length: n + 1 }, (_, i) => i);\n}\n" },
  },
  {
    message: "help text: hide default when the option says so",
    files: {
      "src/render.ts":
        "export function extraOf(opt: { dflt?: string; show?: boolean }) {\n  return opt.dflt && opt.show !== false ? [`[dflt: ${opt.dflt}]`] : [];\n}\n",
      "src/types.ts": "export interface Opt { dflt?: string; show?: boolean; hidden?: boolean }\n",
    },
  },
];

/** A digest of everything under .git (paths, sizes, contents, mtimes): reading history must not change it. */
function gitDirDigest(ws: string): string {
  const h = createHash("sha256");
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = path.join(d, e.name);
      const st = fs.lstatSync(p);
      h.update(`${p}\0${st.size}\0${st.mtimeMs}\0`);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) h.update(fs.readFileSync(p));
    }
  };
  walk(path.join(ws, ".git"));
  return h.digest("hex");
}

describe("history source", () => {
  it("finds a file by the words of the commits that changed it, with the matched subjects as provenance, and never writes .git", async () => {
    const ws = tempWorkspace();
    makeRepo(ws, BASE);
    const before = gitDirDigest(ws);
    const { r, warnings } = await retriever(ws);
    const hits = await r.search("how are default values shown in help", 5);
    expect(paths(hits)[0]).toBe("src/render.ts");
    const top = hits[0]!;
    expect(top.sources.history).toContain("show default values in help text for flags");
    // Without history the same query cannot find it (the code shares no word with the query).
    const without = (await r.searchAll("how are default values shown in help", { k: 5, sources: ["bm25", "path", "symbol"] })) as CodeHit[];
    expect(paths(without)).not.toContain("src/render.ts");
    const st = await r.stats();
    expect(st.history).toMatchObject({ state: "ok", commits: 4, shallow: false, partial: null });
    expect(warnings).toEqual([]);
    expect(gitDirDigest(ws)).toBe(before);
  });

  it("lends a little of a strong hit's score to the files it changes with", async () => {
    const ws = tempWorkspace();
    makeRepo(ws, BASE);
    const { r } = await retriever(ws);
    const hits = await r.search("help text default", 10);
    // types.ts changed in both help commits (with render.ts); its own votes are split with render.ts,
    // plus a share of render.ts's score.
    const types = hits.find((h) => h.path === "src/types.ts");
    expect(types?.sources.history?.some((s) => s.startsWith("changes with src/render.ts"))).toBe(true);
    expect(paths(hits)).not.toContain("src/parse.ts");
  });

  it("reads only new commits on a refresh, and re-reads a rewritten history", async () => {
    const ws = tempWorkspace();
    makeRepo(ws, BASE);
    const { r } = await retriever(ws);
    makeRepo(ws, [
      { message: "tokenizer: split on commas as well", files: { "src/parse.ts": "export function tokens(s: string) {\n  return s.split(/[\\s,]+/);\n}\n" } },
    ]);
    await r.refresh(["src/parse.ts"]);
    await r.whenIdle();
    let st = await r.stats();
    expect(st.history.detail).toBe("read 1 commit(s)");
    expect(st.history.commits).toBe(5);
    expect(paths(await r.search("split commas", 3))[0]).toBe("src/parse.ts");

    // A rewrite: the branch is replaced by an unrelated history (as a force-push or a new clone would).
    git(ws, ["checkout", "-q", "--orphan", "other"]);
    git(ws, ["commit", "-q", "-m", "rewritten: tables get a header row"]);
    git(ws, ["branch", "-q", "-D", "main"]);
    await r.refresh([]);
    await r.whenIdle();
    st = await r.stats();
    expect(st.history.commits).toBe(1);
    expect(st.history.detail).toBe("read 1 commit(s)");
    const hits = await r.search("split commas", 5);
    expect(hits.every((h) => !h.sources.history)).toBe(true);
  });

  it("is off for a workspace that is not a git repository, with no warning", async () => {
    const ws = tempWorkspace(undefined, { "alpha.ts": "export const alphabet = 1;\n" });
    const { r, warnings } = await retriever(ws);
    expect(paths(await r.search("alphabet", 3))).toEqual(["alpha.ts"]);
    const st = await r.stats();
    expect(st.history.state).toBe("off");
    expect(st.history.detail).toMatch(/not a git repository/);
    expect(warnings).toEqual([]);
  });

  it("says why when git refuses the repository (a broken config), once, and searches the code", async () => {
    const ws = tempWorkspace();
    makeRepo(ws, BASE);
    fs.appendFileSync(path.join(ws, ".git", "config"), "[core\n  this is not config\n");
    const { r, warnings } = await retriever(ws);
    expect(paths(await r.search("columns", 3))[0]).toBe("src/table.ts");
    await r.refresh([]);
    await r.whenIdle();
    const st = await r.stats();
    expect(st.history.state).toBe("off");
    expect(st.history.detail).toMatch(/^git refuses to read this repository \(fatal: bad config line \d+ in file (\S*\/)?\.git\/config\)$/);
    expect(warnings).toEqual([`the git history is not read: ${st.history.detail}`]);
    expect(await describeHistory(ws)).toMatch(/^off: git refuses to read this repository \(fatal: bad config/);
  });

  const root = process.getuid?.() === 0;
  it.skipIf(!root)(
    `${root ? "" : "SKIPPED (needs root to give the repository to another user): "}reads another user's repository, running nothing its config names`,
    async () => {
      // git's ownership check (safe.directory) exists so that another user's config cannot run programs
      // as you; ledgerloop's git pins the repository and neutralises every program key, so it reads on.
      const ws = tempWorkspace();
      makeRepo(ws, BASE);
      const marker = path.join(ws, "..", `fsmonitor-ran-${path.basename(ws)}`);
      fs.appendFileSync(path.join(ws, ".git", "config"), `[core]\n\tfsmonitor = touch ${marker}\n`);
      execFileSync("chown", ["-R", "nobody", ws]);
      try {
        expect(await describeHistory(ws)).toMatch(/^4 commit\(s\) readable from HEAD/);
        expect(fs.existsSync(marker)).toBe(false);
      } finally {
        execFileSync("chown", ["-R", "root", ws]);
      }
    },
  );

  it("redacts commit messages before they are stored", async () => {
    const ws = tempWorkspace();
    const secret = "sk-live-" + "A1b2C3d4E5f6G7h8I9j0K1l2";
    makeRepo(ws, [...BASE, { message: `rotate the billing key ${secret} in the tokenizer`, files: { "src/parse.ts": "export const x = 1;\n" } }]);
    const { r } = await retriever(ws, { redact: (t) => t.split(secret).join("[REDACTED]") });
    const hits = await r.search("rotate billing key", 3);
    expect(hits[0]?.sources.history).toEqual(["rotate the billing key [REDACTED] in the tokenizer"]);
    await r.close();
    const db = new Database(path.join(ws, ".ledgerloop", "index.db"), { readonly: true });
    const stored = JSON.stringify(db.prepare("SELECT * FROM hist_commits").all());
    db.close();
    expect(stored).toContain("[REDACTED]");
    expect(stored).not.toContain(secret);
  });

  it("redacts a secret-looking token in a commit message when the retriever was given no redactor", async () => {
    const ws = tempWorkspace();
    const token = "ghp_" + "Q7wX2mZ9kLp4Rt8Vb3Nc6Hd1Jf5Gs0Ya2Ue4";
    makeRepo(ws, [
      ...BASE,
      { message: `tokenizer: authenticate the release with ${token}\n\nbody: GITHUB_TOKEN=${token}`, files: { "src/parse.ts": "export const x = 2;\n" } },
    ]);
    const { r } = await retriever(ws); // no redact option: the history source's own default applies
    const hits = await r.search("authenticate release tokenizer", 3);
    expect(hits[0]?.sources.history?.[0]).toMatch(/^tokenizer: authenticate the release with \[REDACTED\]:github$/);
    await r.close();
    const db = new Database(path.join(ws, ".ledgerloop", "index.db"), { readonly: true });
    const stored = JSON.stringify(db.prepare("SELECT * FROM hist_commits").all());
    // The message words are indexed from the redacted text: the token's parts match nothing.
    const matchesToken = db.prepare("SELECT COUNT(*) FROM hist_fts WHERE hist_fts MATCH ?").pluck().get('"Q7wX2mZ9kLp4Rt8Vb3Nc6Hd1Jf5Gs0Ya2Ue4"');
    db.close();
    expect(stored).toContain("[REDACTED]:github");
    expect(stored).not.toContain(token.slice(4));
    expect(matchesToken).toBe(0);
  });

  it("keeps the newest commits within the caps, and says the read was capped", async () => {
    const ws = tempWorkspace();
    const many: RepoCommit[] = Array.from({ length: 300 }, (_, i) => ({
      message: `tweak ${i % 7 === 0 ? "parser" : "table"} step ${i}`,
      files: { [`src/f${i % 10}.ts`]: `export const v = ${i};\n` },
    }));
    makeRepo(ws, many);
    const { r } = await retriever(ws, { history: { maxCommits: 50, perFile: 3 } });
    const st = await r.stats();
    expect(st.history).toMatchObject({ state: "ok", commits: 50, partial: "count-cap" });
    expect(st.history.detail).toMatch(/newest 50 commits/);
    await r.close();
    const db = new Database(path.join(ws, ".ledgerloop", "index.db"), { readonly: true });
    const perFile = db.prepare("SELECT path, COUNT(*) AS n FROM hist_files GROUP BY path").all() as Array<{ n: number }>;
    const oldest = db.prepare("SELECT MIN(subject) AS s FROM hist_commits WHERE subject LIKE '%step 2__'").get() as { s: string };
    db.close();
    expect(perFile.every((p) => p.n <= 3)).toBe(true);
    expect(perFile).toHaveLength(10);
    expect(oldest.s).toMatch(/step 25\d/); // the newest 50 of 300 are steps 250..299
  });

  it("stops at the time budget and a search does not wait for the read", async () => {
    const ws = tempWorkspace();
    makeRepo(
      ws,
      Array.from({ length: 3000 }, (_, i) => ({ message: `change number ${i} of the widget`, files: { [`src/w${i % 50}.ts`]: `export const w = ${i};\n` } })),
    );
    const r = await createRetriever({
      workspace: ws,
      stateDir: path.join(ws, ".ledgerloop"),
      vectorIndex: "off",
      onWarning: () => {},
      history: { timeBudgetMs: 1 },
    });
    open.push(r);
    await r.index();
    await r.search("widget change", 5); // answers whatever has been read so far
    await r.whenIdle();
    const st = await r.stats();
    expect(st.history.partial).toBe("time-cap");
    expect(st.history.commits).toBeLessThan(3000);
    expect(st.history.detail).toMatch(/time budget/);
  });

  it("closes while the history is still being read: the read stops with no error, and the next open reads it all", async () => {
    const ws = tempWorkspace();
    makeRepo(
      ws,
      Array.from({ length: 6000 }, (_, i) => ({ message: `change number ${i} of the widget`, files: { [`src/w${i % 50}.ts`]: `export const w = ${i};\n` } })),
    );
    const warnings: string[] = [];
    const first = await createRetriever({ workspace: ws, stateDir: path.join(ws, ".ledgerloop"), vectorIndex: "off", onWarning: (m) => warnings.push(m) });
    await first.index();
    const during = await first.stats();
    await first.close(); // before this fix a later batch was stored into the closed index.db: an unhandled rejection
    await new Promise((res) => setTimeout(res, 300));
    expect(warnings).toEqual([]);
    const { r } = await retriever(ws);
    const st = await r.stats();
    expect(st.history).toMatchObject({ state: "ok", commits: 6000, partial: null });
    // Only meaningful when the close really came during the read (a fast machine may finish first).
    if (during.history.state === "reading") expect(during.history.commits).toBeLessThan(6000);
  });

  it("works on a shallow clone with the history present, and says it is shallow", async () => {
    const origin = tempWorkspace();
    makeRepo(origin, BASE);
    const ws = tempWorkspace();
    fs.rmSync(ws, { recursive: true, force: true });
    git(path.dirname(ws), ["clone", "-q", "--depth", "2", `file://${origin}`, ws]);
    const { r } = await retriever(ws);
    const st = await r.stats();
    expect(st.history).toMatchObject({ state: "ok", shallow: true, commits: 2 });
    expect(st.history.detail).toMatch(/shallow clone/);
    expect(paths(await r.search("hide default option", 3))[0]).toBe("src/render.ts");
    // doctor says so too; a full clone and a plain directory get their own lines.
    expect(await describeHistory(ws)).toMatch(/^shallow clone: 2 commit\(s\) readable; only the history present is used/);
    expect(await describeHistory(origin)).toMatch(/^4 commit\(s\) readable from HEAD [0-9a-f]{12}/);
    expect(await describeHistory(tempWorkspace())).toMatch(/^off: not a git repository/);
    // And the doctor command's report carries that line as its history check.
    const report = await handleDoctor({ workspace: ws });
    expect(report.checks.find((c) => c.name === "history")).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/^shallow clone: 2 commit\(s\) readable; .*git fetch --unshallow/),
    });
  });

  it("keeps the commits it read before a corrupt object, says so once, and reads only new commits after it", async () => {
    const ws = tempWorkspace();
    makeRepo(ws, [
      ...BASE,
      {
        message: "columns: number them from one",
        files: { "src/table.ts": "export function columns(n: number) {\n  return Array.from({ length: n }, (_, i) => i + 1);\n}\n" },
      },
      {
        message: "tokenizer: keep quoted words together",
        files: { "src/parse.ts": 'export function tokens(s: string) {\n  return s.match(/"[^"]*"|\\S+/g) ?? [];\n}\n' },
      },
    ]);
    // Loose objects (fast-import wrote a pack), then one older commit's object overwritten: git log
    // dies when it reaches it, as it does on a disk or copy that damaged .git.
    const packDir = path.join(ws, ".git", "objects", "pack");
    for (const f of fs.readdirSync(packDir).filter((n) => n.endsWith(".pack"))) {
      const moved = path.join(path.dirname(ws), `${path.basename(ws)}.pack`);
      fs.renameSync(path.join(packDir, f), moved);
      for (const g of fs.readdirSync(packDir)) fs.rmSync(path.join(packDir, g));
      execFileSync("sh", ["-c", 'git unpack-objects -q < "$1"', "sh", moved], { cwd: ws });
      fs.rmSync(moved);
    }
    const bad = git(ws, ["rev-parse", "HEAD~3"]).trim();
    const obj = path.join(ws, ".git", "objects", bad.slice(0, 2), bad.slice(2));
    fs.chmodSync(obj, 0o644);
    fs.writeFileSync(obj, "not a zlib stream");
    expect(() => git(ws, ["log", "--format=%s"])).toThrow();

    const { r, warnings } = await retriever(ws);
    let st = await r.stats();
    expect(st.history).toMatchObject({ state: "ok", partial: "error" });
    expect(st.history.commits).toBeGreaterThanOrEqual(1);
    expect(st.history.commits).toBeLessThan(6);
    expect(st.history.detail).toMatch(/^read \d+ commit\(s\); git could not read further \(.*corrupt/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/history.*corrupt.*searching with the \d+ commit\(s\) read/);
    const newest = (await r.search("quoted words", 3)).find((h) => h.path === "src/parse.ts");
    expect(newest?.sources.history).toContain("tokenizer: keep quoted words together");

    // The next refresh reads only the commit that came since, not the damaged history again.
    const before = st.history.commits;
    makeRepo(ws, [{ message: "table: right-align numbers", files: { "src/table.ts": "export const align = 'right';\n" } }]);
    await r.refresh(["src/table.ts"]);
    await r.whenIdle();
    st = await r.stats();
    expect(st.history).toMatchObject({ state: "ok", commits: before + 1, partial: null, detail: "read 1 commit(s)" });
    expect(warnings).toHaveLength(1);

    // doctor names the damage instead of blaming the time.
    const line = await describeHistory(ws);
    expect(line).not.toMatch(/too long/);
    expect(line).toMatch(/^damaged: git cannot walk the history from HEAD [0-9a-f]{12} \(fatal: .*corrupt\); the search uses the newest commits/);
  });

  it("answers co-change from a remembered list until the index is written, then from the new history", async () => {
    const ws = tempWorkspace();
    const pair = (n: number, other: string) => ({ message: `step ${n}`, files: { "a.ts": `export const a = ${n};\n`, [other]: `export const o = ${n};\n` } });
    makeRepo(ws, [pair(1, "b.ts"), pair(2, "b.ts"), pair(3, "b.ts")]);
    const ngram = NgramIndex.open(path.join(ws, ".ledgerloop", "index.db"));
    try {
      for (const p of ["a.ts", "b.ts", "c.ts"]) ngram.putFile({ path: p, hash: p, size: 1, mtimeMs: 0, lang: null, lines: 1 }, [], []);
      const h = new HistorySource(ws, () => ngram.db);
      await h.sync();
      expect(h.neighbours("a.ts")).toEqual([{ path: "b.ts", share: 1 }]);
      // A caller changing the list it got does not change the remembered one.
      h.neighbours("a.ts")[0]!.share = 99;
      expect(h.neighbours("a.ts")).toEqual([{ path: "b.ts", share: 1 }]);
      makeRepo(ws, [pair(4, "c.ts"), pair(5, "c.ts"), pair(6, "c.ts"), pair(7, "c.ts")]);
      await h.sync();
      expect(h.neighbours("a.ts")).toEqual([
        { path: "c.ts", share: 4 / 7 },
        { path: "b.ts", share: 3 / 7 },
      ]);
      ngram.removeFile("c.ts"); // only files the index knows are neighbours
      expect(h.neighbours("a.ts")).toEqual([{ path: "b.ts", share: 3 / 7 }]);
    } finally {
      ngram.close();
    }
  });

  it("takes content words of a query, identifiers split", () => {
    expect(historyWords("How are default values shown in getHelpText?")).toEqual(["default", "values", "shown", "get", "help", "text"]);
  });
});
