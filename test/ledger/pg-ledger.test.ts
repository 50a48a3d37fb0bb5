import { expect, it } from "vitest";
import { openPgState } from "../../src/ledger/pg-db.js";
import { PgLedger } from "../../src/ledger/pg-ledger.js";
import { describePg, freshSchema, useTestDatabase } from "../helpers/postgres.js";
import { pgStatePortForTest } from "../helpers/state-port.js";
import { ledgerConformance } from "./conformance.js";

// The same conformance suite as SQLite's, on a real server: each test gets an empty schema in
// this file's own database.
describePg("PostgreSQL ledger", () => {
  const db = useTestDatabase("ledger");

  // The ledger of the state port's PostgreSQL adapter, on a pool shared as a worker shares its own.
  ledgerConformance("postgres", {
    async create() {
      const { port, dispose } = await pgStatePortForTest(db.url, "ledger");
      return { ledger: port.ledger, dispose };
    },
  });

  it("cannot be updated, deleted or truncated behind its back", async () => {
    const st = await openPgState(db.url, { schema: freshSchema("ledger") });
    try {
      const ledger = new PgLedger(st.pool);
      const e = await ledger.append({ threadId: "t", parentId: null, type: "decision", payload: { text: "a", step: 0 } });
      await expect(st.pool.query("UPDATE ll_events SET payload = '{}' WHERE id = $1", [e.id])).rejects.toThrow(/append-only: events cannot be updated/);
      await expect(st.pool.query("DELETE FROM ll_events")).rejects.toThrow(/append-only: events cannot be deleted/);
      await expect(st.pool.query("TRUNCATE ll_events CASCADE")).rejects.toThrow(/append-only/);
      expect(await ledger.list("t")).toHaveLength(1);
    } finally {
      await st.close();
    }
  });

  it("gives concurrent writers of one thread one gap-free seq (two pools, as two machines)", async () => {
    const schema = freshSchema("ledger");
    const a = await openPgState(db.url, { schema });
    const b = await openPgState(db.url, { schema });
    try {
      const la = new PgLedger(a.pool);
      const lb = new PgLedger(b.pool);
      const writes = Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? la : lb).append({ threadId: "t", parentId: null, type: "decision", payload: { text: `d${i}`, step: i }, idempotencyKey: `k${i}` }),
      );
      await Promise.all(writes);
      const seqs = (await la.list("t")).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      // A retried append with a used key returns the stored event, even from the other "machine".
      const again = await lb.append({ threadId: "t", parentId: null, type: "decision", payload: { text: "x", step: 0 }, idempotencyKey: "k3" });
      expect(again.payload).toMatchObject({ text: "d3" });
      expect(await la.list("t")).toHaveLength(40);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
