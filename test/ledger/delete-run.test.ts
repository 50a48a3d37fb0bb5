import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { SqliteCheckpointSaver } from "../../src/ledger/sqlite-saver.js";
import type { Database } from "../../src/sqlite/driver.js";
import { afterAll, describe, expect, it } from "vitest";
import { deleteRunRecords, runExists, runFootprint } from "../../src/ledger/delete-run.js";
import { RunRegistry } from "../../src/ledger/runs.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { rememberLessons } from "../../src/memory/lessons.js";
import { SqliteStore } from "../../src/memory/sqlite-store.js";
import type { RunSettings } from "../../src/settings.js";
import { reportFile, runLogFile } from "../../src/workspace/location.js";
import { seedRunEvents } from "./delete-run-seed.js";

// Deleting one run whole from a SQLite state, on real tables: the ledger (with its append-only
// triggers), the SQLite checkpointer's checkpoints and writes, the run registry, the lessons store.

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
const SETTINGS = { workspace: "/nowhere", model: "scripted:x" } as unknown as RunSettings;

/** The old guard, as states written before whole-run deletion have it. */
const OLD_GUARD = `CREATE TRIGGER ll_events_no_delete BEFORE DELETE ON ll_events
  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: events cannot be deleted'); END`;

interface Seeded {
  dir: string;
  db: Database;
  ledger: SqliteLedger;
  shared: string;
  own: Record<string, string>;
}

/** Two runs, A and B, each with a prompt of its own and one they share (as a fork's copy shares them), checkpoints, writes, an action start, lessons. */
async function seed(): Promise<Seeded> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-del-"));
  dirs.push(dir);
  const db = openStateDb(path.join(dir, "state.db"));
  const ledger = new SqliteLedger(db);
  const saver = new SqliteCheckpointSaver(db);
  const shared = await ledger.putBlob("the prompt both runs saw");
  const own: Record<string, string> = {};
  for (const t of ["A", "B"]) {
    new RunRegistry(db).register(t, `goal of ${t}`, SETTINGS, { origin: "cli" });
    own[t] = await seedRunEvents(ledger, t, shared);
    const cp = await saver.put(
      { configurable: { thread_id: t, checkpoint_ns: "" } },
      { ...emptyCheckpoint(), id: uuid6(1) },
      { source: "input", step: -1, parents: {} },
    );
    await saver.putWrites(cp, [["goal", "x"]], "task-1");
    fs.mkdirSync(path.dirname(runLogFile(dir, t)), { recursive: true });
    fs.writeFileSync(runLogFile(dir, t), "{}\n");
    fs.mkdirSync(path.dirname(reportFile(dir, t)), { recursive: true });
    fs.writeFileSync(reportFile(dir, t), "# report\n");
  }
  const store = new SqliteStore(db);
  await rememberLessons(store, ["Run the tests before committing"], { threadId: "B", trigger: "done", eventIds: [], at: new Date().toISOString() });
  return { dir, db, ledger, shared, own };
}

const rows = (db: Database, sql: string, ...args: unknown[]) =>
  db
    .prepare(sql)
    .pluck()
    .get(...args) as number;

describe("deleting a run whole (SQLite)", () => {
  it("says what would go without writing, then removes every record of the run and nothing of another", async () => {
    const s = await seed();
    const fp = runFootprint(s.db, "B");
    expect(fp).toEqual({ thread: "B", events: 3, checkpoints: 1, writes: 1, prompts: 1, registered: true, lessons: 1 });
    expect(rows(s.db, "SELECT COUNT(*) FROM ll_events WHERE thread_id = 'B'")).toBe(3);

    expect(await s.ledger.deletedThreads()).toEqual([]);
    expect(deleteRunRecords(s.db, s.dir, "B")).toEqual(fp);
    expect(await s.ledger.deletedThreads()).toEqual(["B"]);
    for (const [table, column] of [
      ["ll_events", "thread_id"],
      ["checkpoints", "thread_id"],
      ["writes", "thread_id"],
      ["ll_runs", "thread_id"],
      ["ll_deleting", "thread_id"],
    ]) {
      expect(rows(s.db, `SELECT COUNT(*) FROM ${table} WHERE ${column} = 'B'`), table).toBe(0);
    }
    expect(rows(s.db, "SELECT COUNT(*) FROM ll_action_starts WHERE action_id LIKE 'task-B/%'")).toBe(0);
    expect(runExists(runFootprint(s.db, "B"))).toBe(false);
    // B's own prompt is gone; the one A shares stays readable.
    expect(await s.ledger.getBlob(s.own.B!)).toBeNull();
    expect(await s.ledger.getBlob(s.shared)).toBe("the prompt both runs saw");
    expect(fs.existsSync(runLogFile(s.dir, "B"))).toBe(false);
    expect(fs.existsSync(reportFile(s.dir, "B"))).toBe(false);
    // A is whole.
    expect(runFootprint(s.db, "A")).toEqual({ thread: "A", events: 3, checkpoints: 1, writes: 1, prompts: 2, registered: true, lessons: 0 });
    expect(rows(s.db, "SELECT COUNT(*) FROM ll_action_starts WHERE action_id LIKE 'task-A/%'")).toBe(1);
    expect(await s.ledger.getBlob(s.own.A!)).toBe("the prompt only A saw");
    expect(fs.existsSync(runLogFile(s.dir, "A"))).toBe(true);
    // The lesson drawn from B stays in long-term memory.
    expect(rows(s.db, "SELECT COUNT(*) FROM ll_store")).toBe(1);
  });

  it("keeps the ledger append-only for every other delete, by hand too", async () => {
    const s = await seed();
    deleteRunRecords(s.db, s.dir, "B");
    expect(() => s.db.prepare("DELETE FROM ll_events WHERE thread_id = 'A'").run()).toThrow(/append-only: events cannot be deleted/);
    const one = s.db.prepare("SELECT id FROM ll_events WHERE thread_id = 'A' LIMIT 1").pluck().get() as string;
    expect(() => s.db.prepare("DELETE FROM ll_events WHERE id = ?").run(one)).toThrow(/append-only/);
    expect(() => s.db.prepare("UPDATE ll_events SET payload = '{}' WHERE thread_id = 'A'").run()).toThrow(/append-only/);
    expect(rows(s.db, "SELECT COUNT(*) FROM ll_events WHERE thread_id = 'A'")).toBe(3);
  });

  it("upgrades the guard of a state written before whole-run deletion, in the same transaction", async () => {
    const s = await seed();
    s.db.exec("DROP TRIGGER ll_events_no_delete; DROP TABLE ll_deleting");
    s.db.exec(OLD_GUARD);
    expect(() => s.db.prepare("DELETE FROM ll_events WHERE thread_id = 'B'").run()).toThrow(/append-only/);
    deleteRunRecords(s.db, s.dir, "B");
    expect(rows(s.db, "SELECT COUNT(*) FROM ll_events WHERE thread_id = 'B'")).toBe(0);
    expect(s.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'll_events_no_delete'").pluck().get()).toContain("ll_deleting");
    expect(() => s.db.prepare("DELETE FROM ll_events WHERE thread_id = 'A'").run()).toThrow(/append-only/);
  });

  it("deletes all or nothing: a failure part way leaves every record of the run in place", async () => {
    const s = await seed();
    // The last step (the registry row) fails: the events, checkpoints and prompts deleted before it come back.
    s.db.exec("CREATE TRIGGER block_run_delete BEFORE DELETE ON ll_runs BEGIN SELECT RAISE(ABORT, 'registry locked for the test'); END");
    const before = runFootprint(s.db, "B");
    expect(() => deleteRunRecords(s.db, s.dir, "B")).toThrow(/registry locked/);
    expect(runFootprint(s.db, "B")).toEqual(before);
    expect(await s.ledger.getBlob(s.own.B!)).toBe("the prompt only B saw");
    expect(rows(s.db, "SELECT COUNT(*) FROM ll_deleting")).toBe(0);
    expect(await s.ledger.deletedThreads()).toEqual([]);
    // Still append-only afterwards.
    expect(() => s.db.prepare("DELETE FROM ll_events WHERE thread_id = 'B'").run()).toThrow(/append-only/);
  });

  it("removes only files inside the state directory, whatever the thread id says", async () => {
    const s = await seed();
    const outside = path.join(path.dirname(s.dir), `${path.basename(s.dir)}-victim.md`);
    fs.writeFileSync(outside, "not ledgerloop's\n");
    dirs.push(outside);
    // reports/<thread>.md with this id resolves to the victim, outside the state directory.
    const sneaky = `../../${path.basename(s.dir)}-victim`;
    expect(path.resolve(reportFile(s.dir, sneaky))).toBe(outside);
    deleteRunRecords(s.db, s.dir, sneaky);
    expect(fs.readFileSync(outside, "utf8")).toBe("not ledgerloop's\n");
  });
});
