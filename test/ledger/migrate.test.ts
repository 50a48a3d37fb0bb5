import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { emptyCheckpoint, uuid6, type BaseCheckpointSaver, type Checkpoint, type CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteCheckpointSaver } from "../../src/ledger/sqlite-saver.js";
import { afterAll, expect, it } from "vitest";
import { MigrationError } from "../../src/errors.js";
import { migrateState } from "../../src/ledger/migrate.js";
import { openPgState } from "../../src/ledger/pg-db.js";
import { RunRegistry, currentRunner } from "../../src/ledger/runs.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { SqliteStore } from "../../src/memory/sqlite-store.js";
import { RedactingSqliteSaver } from "../../src/runtime.js";
import { createRedactor } from "../../src/secrets.js";
import type { RunSettings } from "../../src/settings.js";
import { createTestDatabase, describePg } from "../helpers/postgres.js";

// migrateState with what a CLI run does not make: checkpoints in a subgraph namespace, pending
// writes of several tasks with special channels (interrupt, error), lessons in several
// namespaces, a lesson that differs on the target, and a run whose runner is alive.

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "ll-mig-"));
  dirs.push(d);
  return d;
};
const SETTINGS = { workspace: "/nowhere", model: "scripted:x" } as unknown as RunSettings;

function checkpoint(id: string, values: Record<string, unknown>): Checkpoint {
  const versions = Object.fromEntries(Object.keys(values).map((k) => [k, 1]));
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: versions };
}

/** A SQLite state with thread N: two root checkpoints and one in a subgraph, writes of two tasks, events, lessons. */
async function sqliteSource(opts: { runner?: boolean } = {}): Promise<string> {
  const dir = tempDir();
  const db = openStateDb(path.join(dir, "state.db"));
  const saver = new RedactingSqliteSaver(db, createRedactor([]));
  const ledger = new SqliteLedger(db);
  new RunRegistry(db).register("N", "a goal", SETTINGS, { origin: "script", ...(opts.runner ? { runner: currentRunner() } : {}) });
  const c1 = await saver.put({ configurable: { thread_id: "N", checkpoint_ns: "" } }, checkpoint(uuid6(1), { goal: "a goal" }), {
    source: "input",
    step: -1,
    parents: {},
  });
  const c2 = await saver.put(c1, checkpoint(uuid6(2), { goal: "a goal", step: 1 }), { source: "loop", step: 0, parents: {} });
  await saver.putWrites(
    c2,
    [
      ["step", 2],
      ["goal", "next"],
    ],
    "task-a",
  );
  await saver.putWrites(c2, [["__error__", { message: "boom" }]], "task-a");
  await saver.putWrites(c2, [["__interrupt__", [{ value: "approve?" }]]], "task-b");
  await saver.put({ configurable: { thread_id: "N", checkpoint_ns: "sub:1" } }, checkpoint(uuid6(3), { inner: true }), {
    source: "loop",
    step: 0,
    parents: { "": c2.configurable!.checkpoint_id },
  });
  const e1 = await ledger.append({ threadId: "N", parentId: null, type: "decision", payload: { text: "one", step: 0 } });
  await ledger.append({ threadId: "N", parentId: e1.id, type: "decision", payload: { text: "two", step: 1 } });
  const store = new SqliteStore(db);
  await store.put(["ledgerloop", "lessons"], "l1", { text: "run the tests first" });
  await store.put(["ledgerloop", "lessons"], "l2", { text: "read before editing" });
  await store.put(["other", "deep", "ns"], "k", { n: 1 });
  db.close();
  return dir;
}

async function tuples(saver: BaseCheckpointSaver, thread: string): Promise<unknown[]> {
  const out: CheckpointTuple[] = [];
  for await (const t of saver.list({ configurable: { thread_id: thread } })) out.push(t);
  return out
    .map((t) => ({
      ns: t.config.configurable?.checkpoint_ns,
      id: t.config.configurable?.checkpoint_id,
      parent: t.parentConfig?.configurable?.checkpoint_id ?? null,
      values: t.checkpoint.channel_values,
      versions: t.checkpoint.channel_versions,
      metadata: t.metadata,
      writes: [...(t.pendingWrites ?? [])].map((w) => JSON.stringify(w)).sort(),
    }))
    .sort((a, b) => `${a.ns}/${a.id}`.localeCompare(`${b.ns}/${b.id}`));
}

function sqliteTuples(dir: string, thread: string): Promise<unknown[]> {
  const db = openStateDb(path.join(dir, "state.db"), { create: false, readonly: true });
  return tuples(new SqliteCheckpointSaver(db), thread).finally(() => db.close());
}

describePg("migrateState", () => {
  it("keeps every namespace's checkpoints and every task's writes (special channels too) through SQLite → PostgreSQL → SQLite, and copies lessons of every namespace", async () => {
    const target = await createTestDatabase("migrate_ns");
    try {
      const src = await sqliteSource();
      const original = await sqliteTuples(src, "N");
      expect(original).toHaveLength(3);
      expect((original[1] as { writes: string[] }).writes).toHaveLength(4);

      const there = await migrateState({ from: src, to: target.url });
      expect(there.threads).toEqual([
        expect.objectContaining({ thread: "N", result: "migrated", source: expect.objectContaining({ checkpoints: 3, writes: 4, events: 2 }) }),
      ]);
      expect(there.lessons).toEqual({ source: 3, copied: 3, present: 0, kept: 0, missing: 0 });
      const st = await openPgState(target.url, { migrate: false });
      try {
        expect(await tuples(new PostgresSaver(st.pool), "N")).toEqual(original);
      } finally {
        await st.close();
      }

      // Back into a new state directory, and into one that already has lesson l1 with another value.
      const back = path.join(tempDir(), "state");
      const again = await migrateState({ from: target.url, to: back });
      expect(again.threads[0]).toMatchObject({ result: "migrated", target: there.threads[0]!.target });
      expect(await sqliteTuples(back, "N")).toEqual(original);

      const other = tempDir();
      const odb = openStateDb(path.join(other, "state.db"));
      await new SqliteStore(odb).put(["ledgerloop", "lessons"], "l1", { text: "changed there" });
      await new SqliteStore(odb).put(["ledgerloop", "lessons"], "l2", { text: "read before editing" });
      odb.close();
      const merged = await migrateState({ from: target.url, to: other });
      expect(merged.lessons).toEqual({ source: 3, copied: 1, present: 1, kept: 1, missing: 0 });
      const check = openStateDb(path.join(other, "state.db"), { create: false, readonly: true });
      expect((await new SqliteStore(check).get(["ledgerloop", "lessons"], "l1"))?.value).toEqual({ text: "changed there" });
      expect((await new SqliteStore(check).get(["other", "deep", "ns"], "k"))?.value).toEqual({ n: 1 });
      check.close();
    } finally {
      await target.drop();
    }
  });

  it("refuses a run whose runner is alive, before anything is written", async () => {
    const target = await createTestDatabase("migrate_live");
    try {
      const src = await sqliteSource({ runner: true });
      const err = await migrateState({ from: src, to: target.url }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MigrationError);
      expect((err as MigrationError).code).toBe("MIGRATE_RUN_ACTIVE");
      expect((err as Error).message).toMatch(new RegExp(`run "N" is running \\(pid ${process.pid} on `));
      const st = await openPgState(target.url, { migrate: false });
      try {
        expect(st.version).toBe(0);
      } finally {
        await st.close();
      }
    } finally {
      await target.drop();
    }
  });
});
