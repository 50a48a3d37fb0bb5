import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startViewer } from "../../src/web/server.js";
import { cli } from "../helpers/cli.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// A state database with garbage in the middle (header and schema intact) must stop every command
// with one line naming the file: readers must not show a run with sections missing, writers must
// not add to it.

afterAll(() => cleanupTemp());

const PAGE = 4096;

/** sha256 of every state.db* file of a state dir: what "nothing was written" is checked against. */
function stateFiles(stateDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fs
    .readdirSync(stateDir)
    .filter((n) => n.startsWith("state.db"))
    .sort()) {
    const bytes = fs.readFileSync(path.join(stateDir, f));
    // An empty WAL or shared-memory file created by opening is not a write to the database.
    if (bytes.length > 0 && !f.endsWith("-shm")) out[f] = createHash("sha256").update(bytes).digest("hex");
  }
  return out;
}

/** Overwrites pages [first, first+count) of the file with garbage, keeping everything else. */
function garble(file: string, first: number, count: number): void {
  const fd = fs.openSync(file, "r+");
  const junk = Buffer.alloc(count * PAGE);
  for (let i = 0; i < junk.length; i++) junk[i] = (i * 2654435761) >>> 24;
  fs.writeSync(fd, junk, 0, junk.length, first * PAGE);
  fs.closeSync(fd);
}

describe("a state database damaged in the middle", () => {
  let demo: string;
  let thread: string;
  let checkpoint: string;
  let revTreesPage: number;
  let pages: number;

  beforeAll(() => {
    demo = path.join(tempWorkspace(), "demo");
    const r = cli(["demo", "--workspace", demo, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    thread = JSON.parse(r.stdout).thread;
    const db = new Database(path.join(demo, ".ledgerloop/state.db"));
    db.pragma("wal_checkpoint(TRUNCATE)");
    checkpoint = db.prepare("SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id LIMIT 1 OFFSET 10").pluck().get(thread) as string;
    revTreesPage = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'll_rev_trees'").pluck().get() as number;
    pages = db.pragma("page_count", { simple: true }) as number;
    db.close();
  }, 120_000);

  /** A fresh copy of the demo workspace with pages garbled. */
  function damagedCopy(first: number, count: number): { ws: string; stateDir: string; dbPath: string } {
    const ws = path.join(tempWorkspace(), "ws");
    fs.cpSync(demo, ws, { recursive: true });
    const stateDir = path.join(ws, ".ledgerloop");
    const dbPath = path.join(stateDir, "state.db");
    for (const f of ["state.db-wal", "state.db-shm"]) fs.rmSync(path.join(stateDir, f), { force: true });
    garble(dbPath, first, count);
    // The header (page 1) is intact: SQLite opens the file without complaint.
    expect(fs.readFileSync(dbPath).subarray(0, 16).toString("latin1")).toBe("SQLite format 3\0");
    return { ws, stateDir, dbPath };
  }

  const cases = () => [
    // The workspace-revision tables: `report` used to print the run without its "Files changed".
    { name: "the revision tables' pages", first: revTreesPage - 1, count: 1 },
    { name: "a run of pages in the middle", first: Math.floor(pages * 0.4), count: 8 },
  ];

  it("`report` fails naming the file instead of printing a report with sections missing", () => {
    for (const c of cases()) {
      const { ws, stateDir, dbPath } = damagedCopy(c.first, c.count);
      const before = stateFiles(stateDir);
      const r = cli(["report", thread, "-w", ws]);
      expect(r.code, `${c.name}: ${r.stdout}`).toBe(1);
      expect(r.stdout, c.name).toBe("");
      expect(r.stderr.trim().split("\n"), c.name).toHaveLength(1);
      expect(r.stderr).toContain(dbPath);
      expect(r.stderr).toMatch(/damaged|corrupt/);
      expect(r.stderr).toMatch(/restore it from a backup|\.recover/);
      expect(stateFiles(stateDir), c.name).toEqual(before);
    }
  }, 120_000);

  it("`rewind --force` refuses and writes nothing", () => {
    for (const c of cases()) {
      const { ws, stateDir, dbPath } = damagedCopy(c.first, c.count);
      const before = stateFiles(stateDir);
      fs.writeFileSync(path.join(ws, "outside-edit.txt"), "made by hand\n");
      const r = cli(["rewind", thread, "--to", checkpoint, "--force", "-w", ws]);
      expect(r.code, `${c.name}: ${r.stderr}`).toBe(1);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(dbPath);
      expect(r.stderr).toMatch(/nothing was written to it/);
      expect(stateFiles(stateDir), c.name).toEqual(before);
      // The workspace itself was not rewound either.
      expect(fs.readFileSync(path.join(ws, "outside-edit.txt"), "utf8")).toBe("made by hand\n");
    }
  }, 120_000);

  it("every reading and writing command names the file (ledger, history, threads, context, stats, gc, memory forget, resume)", () => {
    const { ws, stateDir, dbPath } = damagedCopy(revTreesPage - 1, 1);
    const before = stateFiles(stateDir);
    for (const args of [
      ["ledger", thread],
      ["history", thread],
      ["threads"],
      ["context", thread],
      ["stats"],
      ["gc"],
      ["memory", "forget", "some-key"],
      ["resume", thread],
    ]) {
      const r = cli([...args, "-w", ws]);
      expect(r.code, `${args.join(" ")}: ${r.stdout}`).toBe(1);
      expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(r.stderr, args.join(" ")).toContain(dbPath);
    }
    expect(stateFiles(stateDir)).toEqual(before);
  }, 180_000);

  it("the web viewer answers with an error naming the file, not a thread with parts missing", async () => {
    const { ws, dbPath } = damagedCopy(revTreesPage - 1, 1);
    const viewer = await startViewer({ workspace: ws, onError: () => {} });
    try {
      for (const route of ["/api/threads", `/api/threads/${thread}`]) {
        const res = await fetch(new URL(route, viewer.url));
        const body = (await res.json()) as { error?: string };
        expect(res.status, route).toBe(503);
        expect(body.error, route).toContain(dbPath);
      }
    } finally {
      await viewer.close();
    }
  }, 60_000);
});

describe("stats and gc errors name the file", () => {
  let demo: string;
  beforeAll(() => {
    demo = path.join(tempWorkspace(), "demo");
    expect(cli(["demo", "--workspace", demo, "--json"]).code).toBe(0);
  }, 120_000);
  const copy = () => {
    const ws = path.join(tempWorkspace(), "ws");
    fs.cpSync(demo, ws, { recursive: true });
    const stateDir = path.join(fs.realpathSync(ws), ".ledgerloop");
    return { ws, stateDir, dbPath: path.join(stateDir, "state.db") };
  };

  it("a state database locked by another writer: gc says which file", () => {
    const { ws, dbPath } = copy();
    // Another process holds the write lock for longer than gc waits (its busy timeout is 5 s).
    const holder = new Database(dbPath);
    holder.exec("BEGIN EXCLUSIVE");
    try {
      const r = cli(["gc", "-w", ws]);
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(dbPath);
      expect(r.stderr).toMatch(/locked/);
    } finally {
      holder.exec("ROLLBACK");
      holder.close();
    }
  }, 120_000);

  it("a table that cannot be read is an error naming the file, not a zero in the stats", () => {
    const { ws, dbPath } = copy();
    // The pages are fine, the query is not: the old stats printed "+ 0.00 MB pending writes".
    const db = new Database(dbPath);
    db.exec("ALTER TABLE writes RENAME COLUMN value TO value_moved");
    db.close();
    const r = cli(["stats", "-w", ws]);
    expect(r.code, r.stdout).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(dbPath);
    expect(r.stderr).toMatch(/no such column: value/);
  }, 120_000);

  it("a blobs path that is not a directory: gc names it", () => {
    const { ws, stateDir } = copy();
    // A copy's writers are refused until it is adopted (workspace-identity.ts): adopt it first.
    expect(cli(["adopt", "-w", ws]).code).toBe(0);
    fs.rmSync(path.join(stateDir, "blobs"), { recursive: true, force: true });
    fs.writeFileSync(path.join(stateDir, "blobs"), "not a directory");
    const r = cli(["gc", "-w", ws]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(path.join(stateDir, "blobs"));
  }, 120_000);
});
