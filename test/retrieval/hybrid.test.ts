import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deleteRunRecords } from "../../src/ledger/delete-run.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { createChromaIndex } from "../../src/retrieval/chroma-index.js";
import { externalChroma, type ChromaServer } from "../../src/retrieval/chroma-server.js";
import { createEmbedder } from "../../src/retrieval/embedders/factory.js";
import { createRetriever, isTestPath, type CodeHit, type EventHit, type Retriever, type RetrieverOptions } from "../../src/retrieval/hybrid.js";
import { NgramIndex } from "../../src/retrieval/ngram-index.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";
import { startTestChroma } from "./helpers/chroma.js";
import { twoTariffRuns } from "./helpers/tariff-runs.js";

let chroma: ChromaServer;
const open: Retriever[] = [];

beforeAll(async () => {
  chroma = await startTestChroma();
});
afterAll(async () => {
  for (const r of open.splice(0)) await r.close();
  await chroma?.release();
  cleanupTemp();
});

/** A retriever on a temp workspace, sharing the file's Chroma server; warnings are collected. */
async function setup(files: Record<string, string | Buffer>, opts: Partial<RetrieverOptions> = {}) {
  const ws = tempWorkspace();
  write(ws, files);
  const warnings: string[] = [];
  const r = await createRetriever({
    workspace: ws,
    stateDir: path.join(ws, ".ledgerloop"),
    chromaUrl: chroma.url,
    onWarning: (m) => warnings.push(m),
    ...opts,
  });
  open.push(r);
  return { ws, r, warnings };
}

function write(ws: string, files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(ws, rel), content);
  }
}

const paths = (hits: CodeHit[]) => [...new Set(hits.map((h) => h.path))];

const ROLES_TS = [
  "export enum UserRole {",
  "  Admin = 'admin',",
  "  Viewer = 'viewer',",
  "}",
  "",
  "export function checkRole(user: { role: UserRole }, wanted: UserRole): boolean {",
  "  return user.role === wanted;",
  "}",
].join("\n");

describe("hybrid retriever: search", () => {
  it("finds `user role` as UserRole, user_role and userRoles.ts, with every source's score", async () => {
    const { r } = await setup({
      "src/roles.ts": ROLES_TS,
      "app/models.py": "class Account:\n    user_role = 'viewer'\n\n    def promote(self):\n        self.user_role = 'admin'\n",
      "src/userRoles.ts": "export const list = [];\n",
      "src/chart.ts": "export function drawChart(points: number[]) {\n  return points.map((p) => p * 2);\n}\n",
    });
    const hits = await r.search("user role", 10);
    expect(paths(hits).slice(0, 3).sort()).toEqual(["app/models.py", "src/roles.ts", "src/userRoles.ts"]);
    // Vector search always returns neighbours; an unrelated file may trail, found by nothing else.
    const chart = hits.find((h) => h.path === "src/chart.ts");
    if (chart) expect(Object.keys(chart.sources)).toEqual(["vector"]);
    const roles = hits.find((h) => h.path === "src/roles.ts")!;
    expect(roles.sources.bm25).toBeGreaterThan(0);
    expect(roles.sources.symbol).toBeGreaterThan(0);
    expect(roles.sources.vector).toBeGreaterThan(0);
    expect(roles.symbols).toEqual(expect.arrayContaining(["UserRole", "checkRole"]));
    expect(roles.startLine).toBe(1);
    expect(roles.endLine).toBe(8);
    expect(roles.preview).toMatch(/^1\| export enum UserRole \{/);
    // Found by its name only: the path source says so.
    const byName = hits.find((h) => h.path === "src/userRoles.ts")!;
    expect(byName.sources.path).toBeGreaterThan(0);
    // Best first.
    for (let i = 1; i < hits.length; i++) expect(hits[i]!.score).toBeLessThanOrEqual(hits[i - 1]!.score);
  });

  it("returns symbol-aligned ranges of a long file, deduplicated, at most three per file", async () => {
    const fnBlock = (name: string) =>
      [`export function ${name}() {`, ...Array.from({ length: 45 }, (_, i) => `  const v${i} = compute(${i});`), "}", ""].join("\n");
    const { r } = await setup({ "big.ts": ["parseToken", "renderPage", "saveFile", "loadFile", "openSession"].map(fnBlock).join("\n") });
    const hits = await r.search("renderPage", 10);
    expect(hits[0]!.symbols).toContain("renderPage");
    expect(hits[0]!.endLine - hits[0]!.startLine).toBeLessThan(80);
    const keys = hits.map((h) => `${h.path}:${h.startLine}-${h.endLine}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(hits.filter((h) => h.path === "big.ts").length).toBeLessThanOrEqual(3);
  });

  it("counts what it skips: gitignored, binary and huge files; invalid UTF-8 is indexed as Latin-1", async () => {
    const { r } = await setup({
      ".gitignore": "dist/\n*.log\n",
      "dist/roles.js": "var UserRole;\n",
      "debug.log": "UserRole\n",
      "blob.bin": Buffer.concat([Buffer.from("UserRole"), Buffer.from([0, 1, 2])]),
      "huge.ts": `export const UserRoleHuge = "${"x".repeat(1024 * 1024 + 10)}";\n`,
      "latin1.ts": Buffer.from("// caf\xe9 UserRoleLatin\nexport const a = 1;\n", "latin1"),
      "ok.ts": "export const UserRole = 1;\n",
    });
    const rep = await r.index();
    expect(rep.skipped).toMatchObject({ ignored: 2, binary: 1, huge: 1 });
    expect(rep.invalidUtf8).toEqual({ count: 1, paths: ["latin1.ts"] });
    const found = paths(await r.search("UserRole", 10));
    expect(found).toContain("ok.ts");
    expect(found).toContain("latin1.ts");
    for (const p of ["dist/roles.js", "debug.log", "blob.bin", "huge.ts"]) expect(found).not.toContain(p);
  });

  it("damps test files below the code they test", async () => {
    const { r } = await setup({
      "src/parser.ts": "export function parseHeader(line: string) {\n  return line.split(':');\n}\n",
      "src/parser.test.ts": "import { parseHeader } from './parser';\ntest('parseHeader', () => parseHeader('a: b'));\n",
    });
    expect(isTestPath("src/parser.test.ts") && isTestPath("tests/test_x.py") && !isTestPath("src/testing.ts")).toBe(true);
    expect((await r.search("parseHeader", 5))[0]!.path).toBe("src/parser.ts");
  });
});

describe("hybrid retriever: incremental", () => {
  it("re-reads only what changed; refresh handles modify, create, delete and rename", async () => {
    const { ws, r } = await setup({
      "a.ts": "export function alphaOne() {}\n",
      "b.ts": "export function betaTwo() {}\n",
      "c.ts": "export const gammaThree = 3;\n",
    });
    const first = await r.index();
    expect(first.indexed).toBe(3);
    expect((await r.index()).indexed).toBe(0);

    write(ws, { "a.ts": "export function omegaRenamed() {}\n", "d.ts": "export function deltaFour() {}\n" });
    fs.rmSync(path.join(ws, "b.ts"));
    fs.renameSync(path.join(ws, "c.ts"), path.join(ws, "c2.ts"));
    const rep = await r.refresh(["a.ts", "b.ts", "c.ts", "c2.ts", path.join(ws, "d.ts")]);
    expect(rep).toMatchObject({ indexed: 3, removed: 2 });
    expect(paths(await r.search("omegaRenamed", 5))[0]).toBe("a.ts");
    // The old name is gone from the n-gram side (vector search still returns some neighbour).
    expect((await r.search("alphaOne", 5)).filter((h) => h.sources.bm25 !== undefined || h.sources.symbol !== undefined)).toEqual([]);
    expect(paths(await r.search("betaTwo", 5))).not.toContain("b.ts");
    expect(paths(await r.search("gammaThree", 5))[0]).toBe("c2.ts");
    expect(paths(await r.search("gammaThree", 5))).not.toContain("c.ts");
    expect(paths(await r.search("deltaFour", 5))[0]).toBe("d.ts");
    // The vector side followed: no stale ranges of deleted files come back.
    const st = await r.stats();
    expect(st.files).toBe(3);
    expect(st.vector.state).toBe("ok");

    // Touching a file without changing it costs a hash, not a re-index.
    const t = new Date(Date.now() + 5000);
    fs.utimesSync(path.join(ws, "d.ts"), t, t);
    expect((await r.refresh(["d.ts"])).indexed).toBe(0);
    // Paths outside the workspace and ignored ones are not indexed.
    write(ws, { ".gitignore": "secret.ts\n", "secret.ts": "export const hidden = 1;\n" });
    const rep2 = await r.refresh(["secret.ts", "../elsewhere.ts", ".gitignore"]);
    expect(rep2.skipped.ignored).toBe(1);
    expect(paths(await r.search("hidden", 5))).not.toContain("secret.ts");
  });

  it("refreshes a directory that appeared or vanished as a whole", async () => {
    const { ws, r } = await setup({ "keep.ts": "export const keep = 1;\n" });
    await r.index();
    write(ws, { "pkg/one.ts": "export const firstModule = 1;\n", "pkg/two.ts": "export const secondModule = 2;\n" });
    expect((await r.refresh(["pkg"])).indexed).toBe(2);
    expect(paths(await r.search("secondModule", 5))[0]).toBe("pkg/two.ts");
    fs.rmSync(path.join(ws, "pkg"), { recursive: true });
    expect((await r.refresh(["pkg"])).removed).toBe(2);
  });

  it("survives files that vanish mid-index", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`f${String(i).padStart(2, "0")}.ts`] = `export const value${i} = ${i};\n`;
    const { ws, r } = await setup(files);
    let removed = false;
    const rep = await r.index({
      onProgress: (p) => {
        if (!removed && p.phase === "index" && p.path === "f00.ts") {
          fs.rmSync(path.join(ws, "f29.ts"));
          removed = true;
        }
      },
    });
    expect(rep.skipped.vanished).toBe(1);
    expect(rep.indexed).toBe(29);
  });
});

describe("hybrid retriever: ledger events", () => {
  it("indexes actions, feedback with errors, decisions and reflections; results point at event ids", async () => {
    const ws = tempWorkspace(undefined, { "src/db.ts": "export function connect() {}\n" });
    const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
    const ledger = new SqliteLedger(db);
    const a1 = await ledger.append({
      threadId: "t1",
      parentId: null,
      type: "agent_action",
      payload: { tool: "run_tests", args: { command: "npm test" }, callId: "c1", step: 1, idempotencyKey: "k1", idempotent: false },
    });
    const f1 = await ledger.append({
      threadId: "t1",
      parentId: a1.id,
      causedBy: a1.id,
      type: "environment_feedback",
      payload: {
        tool: "run_tests",
        status: "error",
        output: "Error: ECONNREFUSED 127.0.0.1:5432 while connecting to postgres",
        durationMs: 12,
        exitCode: 1,
        errorClass: "connection_refused",
      },
    });
    const d1 = await ledger.append({
      threadId: "t1",
      parentId: f1.id,
      type: "decision",
      payload: { text: "Use SQLite in tests instead of a postgres server", step: 2 },
    });
    await ledger.append({
      threadId: "t1",
      parentId: d1.id,
      type: "reflection",
      payload: { trigger: "failure_streak", lessons: ["Start the database before running integration tests"], source: "model", fromEvents: [f1.id] },
    });
    // A fork from the action: a different branch of the same thread.
    const fork = await ledger.append({ threadId: "t1", parentId: a1.id, type: "decision", payload: { text: "Mock postgres with an in-memory fake", step: 2 } });

    const warnings: string[] = [];
    const r = await createRetriever({ workspace: ws, ledger, threadId: "t1", chromaUrl: chroma.url, onWarning: (m) => warnings.push(m) });
    open.push(r);
    const events = (await r.searchAll("postgres connection refused", { scope: "events", k: 5 })) as EventHit[];
    expect(events[0]!.kind).toBe("event");
    expect(events.map((e) => e.eventId)).toContain(f1.id);
    const fb = events.find((e) => e.eventId === f1.id)!;
    expect(fb).toMatchObject({ threadId: "t1", type: "environment_feedback", seq: f1.seq });
    expect(fb.sources.bm25).toBeGreaterThan(0);
    expect(fb.preview).toContain("ECONNREFUSED");

    const decisions = (await r.searchAll("SQLite", { scope: "events", k: 3 })) as EventHit[];
    expect(decisions[0]!.eventId).toBe(d1.id);
    // The fork's branch does not see the other branch's events.
    const onFork = (await r.searchAll("postgres", { scope: "events", k: 10, branchHead: fork.id })) as EventHit[];
    expect(onFork.map((e) => e.eventId)).not.toContain(d1.id);
    expect(onFork.map((e) => e.eventId)).toContain(fork.id);

    // New events are picked up on the next search; "all" mixes code and events.
    const later = await ledger.append({ threadId: "t1", parentId: d1.id, type: "decision", payload: { text: "Wrap connect() in a retry loop", step: 3 } });
    const all = await r.searchAll("connect retry", { scope: "all", k: 10 });
    expect(all.some((h) => h.kind === "event" && h.eventId === later.id)).toBe(true);
    expect(all.some((h) => h.kind === "code" && h.path === "src/db.ts")).toBe(true);
    // Code search alone never returns events.
    expect((await r.search("connect", 10)).every((h) => h.kind === "code")).toBe(true);
    // indexEvents is idempotent.
    expect(await r.indexEvents([later])).toBe(0);
    expect(warnings).toEqual([]);
    await r.close();
    db.close();
  });
});

describe("hybrid retriever: a run deleted whole", () => {
  it("leaves the n-gram index and the vector store at the index's next sync with the ledger, other runs untouched", async () => {
    const { ws, stateDir, db, ledger } = await twoTariffRuns({ "src/db.ts": "export function connect() {}\n" });
    const store = await createChromaIndex({
      server: await externalChroma(chroma.url),
      embedder: await createEmbedder("hashed"),
      namespace: `deleted-run ${ws}`,
    });
    const r = await createRetriever({ workspace: ws, stateDir, ledger, vectorIndex: store, chromaUrl: chroma.url });
    open.push(r);
    const threadsOf = async (q: string) => new Set(((await r.searchAll(q, { scope: "events", k: 10 })) as EventHit[]).map((e) => e.threadId));
    expect(await threadsOf("tariff")).toEqual(new Set(["kept", "gone"]));
    await r.whenIdle();
    expect(await store.count("events")).toBe(4);

    // The run is deleted from the state database only, as another machine's \`ledgerloop delete\` on a
    // shared state would: this index still holds its events until its next sync with the ledger.
    deleteRunRecords(db, stateDir, "gone");
    expect(await ledger.deletedThreads()).toEqual(["gone"]);
    const index = NgramIndex.open(path.join(stateDir, "index.db"));
    expect(index.indexedThreadsAmong(["gone", "never"])).toEqual(["gone"]);

    expect(await threadsOf("tariff redis")).toEqual(new Set(["kept"]));
    expect(index.indexedThreadsAmong(["gone"])).toEqual([]);
    await r.whenIdle();
    // That sync deleted the run's vectors too, and the index stopped naming it.
    expect(await store.count("events")).toBe(2);
    expect(index.forgottenThreads()).toEqual([]);
    index.close();
    await r.close();
    await store.close();
    db.close();
  });
});

describe("hybrid retriever: failures", () => {
  it("degrades to n-grams with one warning when its Chroma server is killed mid-run", async () => {
    const ws = tempWorkspace(undefined, { "src/roles.ts": ROLES_TS, "src/other.ts": "export const other = 1;\n" });
    const warnings: string[] = [];
    // Its own embedded server (no chromaUrl), so that killing it hurts nobody else.
    const r = await createRetriever({ workspace: ws, onWarning: (m) => warnings.push(m), chromaStartTimeoutMs: 45_000 });
    open.push(r);
    await r.index();
    expect((await r.search("user role", 5))[0]!.sources.vector).toBeGreaterThan(0);
    const record = JSON.parse(fs.readFileSync(path.join(ws, ".ledgerloop", "chroma.server.json"), "utf8")) as { pid: number };
    process.kill(record.pid, "SIGKILL");
    await new Promise((res) => setTimeout(res, 200));

    const hits = await r.search("user role", 5);
    expect(hits[0]!.path).toBe("src/roles.ts");
    expect(hits[0]!.sources.vector).toBeUndefined();
    write(ws, { "src/new.ts": "export function brandNewThing() {}\n" });
    await r.refresh(["src/new.ts"]);
    expect((await r.search("brandNewThing", 3))[0]!.path).toBe("src/new.ts");
    await r.search("user role", 5);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/vector search is unavailable .*n-gram index only/);
    expect((await r.stats()).vector.state).toBe("degraded");
    await r.close();
  });

  it("starts degraded, with a warning, when CHROMA_URL points at nothing", async () => {
    const { r, warnings } = await setup({ "a.ts": "export const UserRole = 1;\n" }, { chromaUrl: "http://127.0.0.1:9" });
    expect((await r.search("user role", 3))[0]!.path).toBe("a.ts");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/no Chroma server answers at http:\/\/127\.0\.0\.1:9/);
  });

  it("detects a corrupt index.db, moves it aside and rebuilds", async () => {
    const ws = tempWorkspace(undefined, { "a.ts": "export const UserRole = 1;\n" });
    const stateDir = path.join(ws, ".ledgerloop");
    fs.mkdirSync(stateDir, { recursive: true });
    fs.writeFileSync(path.join(stateDir, "index.db"), Buffer.alloc(8192, 0x41));
    const warnings: string[] = [];
    const r = await createRetriever({ workspace: ws, chromaUrl: chroma.url, onWarning: (m) => warnings.push(m) });
    open.push(r);
    expect(warnings[0]).toMatch(/index\.db was unusable .*rebuilt/);
    expect(fs.existsSync(path.join(stateDir, "index.db.corrupt"))).toBe(true);
    expect((await r.search("user role", 3))[0]!.path).toBe("a.ts");
    expect((await r.stats()).rebuiltBecause).toMatch(/cannot be read|not a ledgerloop index/);
    await r.close();

    // Damage inside the file (valid header, broken pages) is found by the integrity check after a crash.
    const file = path.join(stateDir, "index.db");
    const buf = fs.readFileSync(file);
    for (let i = 4096; i < buf.length; i += 97) buf[i] = 0xff;
    fs.writeFileSync(file, buf);
    const { Database } = await import("../../src/sqlite/driver.js");
    try {
      const raw = new Database(file);
      raw.prepare("UPDATE meta SET value = '1' WHERE key = 'open'").run();
      raw.close();
    } catch {
      // too damaged to even mark: opening it fails anyway
    }
    const warnings2: string[] = [];
    const r2 = await createRetriever({ workspace: ws, chromaUrl: chroma.url, onWarning: (m) => warnings2.push(m) });
    open.push(r2);
    expect((await r2.search("user role", 3))[0]!.path).toBe("a.ts");
    expect(warnings2.join("\n")).toMatch(/unusable|corrupt/);
  });
});
