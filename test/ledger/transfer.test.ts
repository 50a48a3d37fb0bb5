import { Database } from "../../src/sqlite/driver.js";
import { describe, expect, it } from "vitest";
import { LedgerError } from "../../src/errors.js";
import { openPgState } from "../../src/ledger/pg-db.js";
import { PgLedger } from "../../src/ledger/pg-ledger.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { ledgerHash, type LedgerTransfer } from "../../src/ledger/transfer.js";
import type { Ledger } from "../../src/ledger/port.js";
import { describePg, freshSchema, useTestDatabase, TEST_PG_URL } from "../helpers/postgres.js";

// exportThread/importThread, the ledger's part of `ledgerloop migrate`, across both backends: rows
// keep their ids, parents, seq and keys; forks and file links are rebuilt so branch views and
// by-file queries work on the copy; an import never adds to a thread that holds other events.

type TLedger = Ledger & LedgerTransfer;
type Maker = () => Promise<{ ledger: TLedger; dispose(): Promise<void> }>;

const sqlite: Maker = async () => {
  const db = new Database(":memory:");
  return {
    ledger: new SqliteLedger(db),
    dispose: async () => {
      db.close();
    },
  };
};

function pgMaker(ref: { url: string }): Maker {
  return async () => {
    const st = await openPgState(ref.url, { schema: freshSchema("tr"), max: 2 });
    return { ledger: new PgLedger(st.pool), dispose: () => st.close() };
  };
}

/** A thread with a fork (two children of one event), an action with its start, and a file link. */
async function sampleThread(l: TLedger, thread: string) {
  const root = await l.append({ threadId: thread, parentId: null, type: "decision", payload: { text: "start", step: 0 }, idempotencyKey: "k0" });
  const act = await l.append({
    threadId: thread,
    parentId: root.id,
    type: "agent_action",
    payload: { tool: "edit_file", args: { path: "src/a.ts" }, callId: "c1", step: 1, idempotencyKey: "a1", idempotent: false },
    idempotencyKey: "k1",
  });
  await l.markActionStarted({ actionId: `act:task1/start/${act.id}`, pid: null, pgid: null, procStart: null, guard: "g" });
  await l.markActionStarted({ actionId: "act:other/start/not-an-event", pid: null, pgid: null, procStart: null, guard: null });
  const a = await l.append({ threadId: thread, parentId: act.id, type: "decision", payload: { text: "branch a", step: 2 } });
  const b = await l.append({ threadId: thread, parentId: act.id, type: "decision", payload: { text: "branch b", step: 2 } });
  return { root, act, a, b };
}

function transferSuite(name: string, source: Maker, target: Maker): void {
  describe(`ledger transfer: ${name}`, () => {
    it("imports a thread as stored, and the copy answers branch, by-file, key and append like the original", async () => {
      const [src, dst] = [await source(), await target()];
      try {
        const s = await sampleThread(src.ledger, "T");
        const exported = await src.ledger.exportThread("T");
        expect(exported.events.map((e) => e.id)).toEqual([s.root.id, s.act.id, s.a.id, s.b.id]);
        expect(exported.actionStarts.map((x) => x.actionId)).toEqual([`act:task1/start/${s.act.id}`]);

        expect(await dst.ledger.importThread("T", exported)).toBe("imported");
        const back = await dst.ledger.exportThread("T");
        expect(ledgerHash(back.events)).toBe(ledgerHash(exported.events));
        expect(await dst.ledger.list("T")).toEqual(await src.ledger.list("T"));
        // The fork was recorded: each branch sees only its own head.
        expect((await dst.ledger.branch(s.a.id)).map((e) => e.id)).toEqual([s.root.id, s.act.id, s.a.id]);
        expect((await dst.ledger.branch(s.b.id)).map((e) => e.id)).toEqual([s.root.id, s.act.id, s.b.id]);
        expect((await dst.ledger.byFile("T", "src/a.ts")).map((e) => e.id)).toEqual([s.act.id]);
        expect((await dst.ledger.findByKey("T", "k1"))?.id).toBe(s.act.id);
        expect(await dst.ledger.actionStart(`act:task1/start/${s.act.id}`)).toMatchObject({ guard: "g" });
        expect(await dst.ledger.actionStart("act:other/start/not-an-event")).toBeNull();
        // Appends go on after the imported seq; a re-run's key finds the imported event.
        expect((await dst.ledger.append({ threadId: "T", parentId: s.a.id, type: "decision", payload: { text: "more", step: 3 } })).seq).toBe(5);
        expect(
          (await dst.ledger.append({ threadId: "T", parentId: null, type: "decision", payload: { text: "start", step: 0 }, idempotencyKey: "k0" })).id,
        ).toBe(s.root.id);
      } finally {
        await src.dispose();
        await dst.dispose();
      }
    });

    it("is a no-op for identical rows and refuses a thread holding other events, writing nothing", async () => {
      const [src, dst] = [await source(), await target()];
      try {
        await sampleThread(src.ledger, "T");
        await src.ledger.governingConfig("T", "sha-T");
        const exported = await src.ledger.exportThread("T");
        expect(await dst.ledger.importThread("T", exported)).toBe("imported");
        // The config the run started under came with it.
        expect(await dst.ledger.governingConfig("T", "sha-other")).toBe("sha-T");
        expect(await dst.ledger.importThread("T", exported)).toBe("identical");

        await dst.ledger.append({ threadId: "U", parentId: null, type: "decision", payload: { text: "other run", step: 0 } });
        const before = await dst.ledger.list("U");
        const err = await dst.ledger
          .importThread("U", { events: exported.events.map((e) => ({ ...e, thread_id: "U" })), actionStarts: [], configSha: null })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(LedgerError);
        expect((err as LedgerError).code).toBe("LEDGER_IMPORT_CONFLICT");
        expect((err as Error).message).toMatch(/thread U already has 1 ledger events that are not the 4 being imported/);
        expect(await dst.ledger.list("U")).toEqual(before);

        // Rows of another thread, or with a parent that is not an earlier row, are refused.
        await expect(dst.ledger.importThread("V", exported)).rejects.toThrow(/belongs to thread T, not V/);
        const orphan = [{ ...exported.events[1]!, thread_id: "W" }];
        await expect(dst.ledger.importThread("W", { events: orphan, actionStarts: [], configSha: null })).rejects.toThrow(
          /is not an earlier event of thread W/,
        );
        expect(await dst.ledger.list("W")).toEqual([]);
      } finally {
        await src.dispose();
        await dst.dispose();
      }
    });
  });
}

transferSuite("SQLite → SQLite", sqlite, sqlite);

describePg("ledger transfer across backends", () => {
  const db = useTestDatabase("transfer");
  const pgLedger = pgMaker(db);
  if (TEST_PG_URL) {
    transferSuite("SQLite → PostgreSQL", sqlite, pgLedger);
    transferSuite("PostgreSQL → SQLite", pgLedger, sqlite);
    transferSuite("PostgreSQL → PostgreSQL", pgLedger, pgLedger);
  }
});

it("ledgerHash depends on every stored field", () => {
  const row = {
    id: "e1",
    thread_id: "T",
    parent_id: null,
    seq: 1,
    type: "decision",
    ts: "2026-01-01T00:00:00.000Z",
    checkpoint_id: null,
    caused_by: null,
    idempotency_key: null,
    schema_version: 1,
    payload: "{}",
  };
  const h = ledgerHash([row]);
  expect(ledgerHash([{ ...row, seq: "1" as unknown as number }])).toBe(h);
  for (const change of [{ id: "e2" }, { parent_id: "x" }, { seq: 2 }, { ts: "2026-01-02T00:00:00.000Z" }, { idempotency_key: "k" }, { payload: '{"a":1}' }]) {
    expect(ledgerHash([{ ...row, ...change }])).not.toBe(h);
  }
});
