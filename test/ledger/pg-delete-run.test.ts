import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { expect, it } from "vitest";
import type { RunFootprint } from "../../src/ledger/delete-run.js";
import { RedactingPostgresSaver } from "../../src/ledger/pg-checkpoints.js";
import { openPgState, type PgState } from "../../src/ledger/pg-db.js";
import { deletePgRunRecords, pgRunFootprint } from "../../src/ledger/pg-delete-run.js";
import { PgLedger } from "../../src/ledger/pg-ledger.js";
import { PgRunRegistry } from "../../src/ledger/pg-runs.js";
import { rememberLessons } from "../../src/memory/lessons.js";
import { PgStore } from "../../src/ledger/pg-store.js";
import { createRedactor } from "../../src/secrets.js";
import type { RunSettings } from "../../src/settings.js";
import { seedRunEvents } from "./delete-run-seed.js";
import { describePg, freshSchema, useTestDatabase } from "../helpers/postgres.js";

// Deleting one run whole from a PostgreSQL state, on real tables: the ledger with its append-only
// trigger (migration 8), PostgresSaver's checkpoints, blobs and writes, the registry, the queue's rows.

const SETTINGS = { workspace: "/nowhere", model: "scripted:x" } as unknown as RunSettings;

describePg("deleting a run whole (PostgreSQL)", () => {
  const db = useTestDatabase("delrun");

  /** Runs A and B, each with its own prompt and one they share, checkpoints with writes, an action start and queue rows; a lesson from B. */
  async function seed(): Promise<{
    st: PgState;
    ledger: PgLedger;
    shared: string;
    own: Record<string, string>;
    n: (sql: string, ...args: unknown[]) => Promise<number>;
  }> {
    const st = await openPgState(db.url, { schema: freshSchema("del") });
    const saver = new RedactingPostgresSaver(st.pool, createRedactor([]), { schema: st.schema });
    await saver.setup();
    const ledger = new PgLedger(st.pool);
    const shared = await ledger.putBlob("the prompt both runs saw");
    const own: Record<string, string> = {};
    for (const t of ["A", "B"]) {
      await new PgRunRegistry(st.pool).register(t, `goal of ${t}`, SETTINGS, { origin: "cli" });
      own[t] = await seedRunEvents(ledger, t, shared);
      const cp = await saver.put(
        { configurable: { thread_id: t, checkpoint_ns: "" } },
        { ...emptyCheckpoint(), id: uuid6(1), channel_values: { goal: `goal of ${t}` }, channel_versions: { goal: 1 } },
        { source: "input", step: -1, parents: {} },
        { goal: 1 },
      );
      await saver.putWrites(cp, [["goal", "x"]], "task-1");
      await st.pool.query("INSERT INTO ll_submissions (thread_id, task, source, settings, submitted_at) VALUES ($1, 'task', '{}', '{}', now()::text)", [t]);
      await st.pool.query("INSERT INTO ll_run_leases (thread_id, state) VALUES ($1, 'done')", [t]);
    }
    await rememberLessons(new PgStore(st.pool), ["Run the tests before committing"], {
      threadId: "B",
      trigger: "done",
      eventIds: [],
      at: new Date().toISOString(),
    });
    const n = async (sql: string, ...args: unknown[]) => Number((await st.pool.query<{ n: string }>(sql, args)).rows[0]!.n);
    return { st, ledger, shared, own, n };
  }

  const whole = (thread: string, prompts: number, lessons: number): RunFootprint => ({
    thread,
    events: 3,
    checkpoints: 1,
    writes: 1,
    prompts,
    registered: true,
    lessons,
  });

  it("removes every record of the run in one transaction and nothing of another", async () => {
    const { st, ledger, shared, own, n } = await seed();
    try {
      expect(await pgRunFootprint(st.pool, "B")).toEqual(whole("B", 1, 1));
      expect(await n("SELECT count(*) AS n FROM checkpoint_blobs WHERE thread_id = 'B'")).toBeGreaterThan(0);
      expect(await ledger.deletedThreads()).toEqual([]);
      expect(await deletePgRunRecords(st.pool, "B")).toEqual(whole("B", 1, 1));
      expect(await ledger.deletedThreads()).toEqual(["B"]);
      for (const t of [
        "ll_events",
        "ll_event_files",
        "ll_forks",
        "checkpoints",
        "checkpoint_blobs",
        "checkpoint_writes",
        "ll_runs",
        "ll_submissions",
        "ll_run_leases",
      ]) {
        expect(await n(`SELECT count(*) AS n FROM ${t} WHERE thread_id = 'B'`), t).toBe(0);
      }
      expect(await n("SELECT count(*) AS n FROM ll_action_starts WHERE action_id LIKE 'task-B/%'")).toBe(0);
      expect(await ledger.getBlob(own.B!)).toBeNull();
      expect(await ledger.getBlob(shared)).toBe("the prompt both runs saw");
      // A is whole, and the lesson drawn from B stays.
      expect(await pgRunFootprint(st.pool, "A")).toEqual(whole("A", 2, 0));
      expect(await n("SELECT count(*) AS n FROM ll_action_starts WHERE action_id LIKE 'task-A/%'")).toBe(1);
      expect(await n("SELECT count(*) AS n FROM ll_run_leases WHERE thread_id = 'A'")).toBe(1);
      expect(await n("SELECT count(*) AS n FROM ll_store")).toBe(1);
      // The guard's opening closed with the transaction.
      expect((await st.pool.query("SELECT current_setting('ledgerloop.deleting_thread', true) AS v")).rows[0].v ?? "").toBe("");
    } finally {
      await st.close();
    }
  });

  it("keeps the ledger append-only for everything else: by hand, another thread, a truncate, an update", async () => {
    const { st, n } = await seed();
    try {
      await expect(st.pool.query("DELETE FROM ll_events WHERE thread_id = 'A'")).rejects.toThrow(/append-only: events cannot be deleted/);
      await expect(st.pool.query("TRUNCATE ll_events CASCADE")).rejects.toThrow(/append-only: events cannot be truncated/);
      await expect(st.pool.query("UPDATE ll_events SET payload = '{}' WHERE thread_id = 'A'")).rejects.toThrow(/append-only: events cannot be updated/);
      // A transaction that names B cannot delete A's events.
      const c = await st.pool.connect();
      try {
        await c.query("BEGIN");
        await c.query("SELECT set_config('ledgerloop.deleting_thread', 'B', true)");
        await expect(c.query("DELETE FROM ll_events WHERE thread_id IN ('A', 'B')")).rejects.toThrow(/append-only/);
        await c.query("ROLLBACK");
      } finally {
        c.release();
      }
      expect(await n("SELECT count(*) AS n FROM ll_events")).toBe(6);
    } finally {
      await st.close();
    }
  });

  it("deletes all or nothing: a failure part way leaves every record in place", async () => {
    const { st, ledger, own } = await seed();
    try {
      await st.pool.query(
        "CREATE FUNCTION block_it() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'registry locked for the test'; END $$; " +
          "CREATE TRIGGER block_run_delete BEFORE DELETE ON ll_runs FOR EACH ROW EXECUTE FUNCTION block_it()",
      );
      await expect(deletePgRunRecords(st.pool, "B")).rejects.toThrow(/registry locked/);
      expect(await pgRunFootprint(st.pool, "B")).toEqual(whole("B", 1, 1));
      expect(await ledger.getBlob(own.B!)).toBe("the prompt only B saw");
    } finally {
      await st.close();
    }
  });
});
