import { afterAll, beforeAll, expect, it } from "vitest";
import { openPgState, STALLED_TRANSACTION_MS, type PgState } from "../../src/ledger/pg-db.js";
import { PgLedger, RunLeaseLostError } from "../../src/ledger/pg-ledger.js";
import { acquireRunLease, endRunLease, expiredRunLeases, getRunLease, renewRunLease, requeueRun } from "../../src/ledger/pg-run-leases.js";
import { describePg, useTestDatabase } from "../helpers/postgres.js";
import { until } from "../queue/queue-fixtures.js";

// The lease rows that decide which worker holds a queued run, and the ledger fence on them, at the
// SQL level (the worker processes that use them are in worker.test.ts and worker-load.test.ts).
describePg("run leases", () => {
  const db = useTestDatabase("leases");
  let st: PgState;
  let n = 0;
  const submitted = async () => {
    const thread = `t${++n}`;
    await st.pool.query("INSERT INTO ll_submissions (thread_id, task, source, settings, submitted_at) VALUES ($1, 'x', '{}', '{}', 'now')", [thread]);
    await st.pool.query("INSERT INTO ll_run_leases (thread_id, state) VALUES ($1, 'queued')", [thread]);
    return thread;
  };
  beforeAll(async () => {
    st = await openPgState(db.url);
  });
  afterAll(async () => {
    await st?.close();
  });

  it("one of many workers racing for a queued run gets it; the others see who holds it", async () => {
    const thread = await submitted();
    const results = await Promise.all(
      ["w1", "w2", "w3", "w4", "w5"].map((worker) => acquireRunLease(st.pool, { thread, worker, jobId: `j-${worker}`, ttlMs: 30_000 })),
    );
    const won = results.filter((r) => r.ok);
    expect(won).toHaveLength(1);
    const holder = (await getRunLease(st.pool, thread))!;
    expect(holder).toMatchObject({ state: "held", takeovers: 0 });
    for (const r of results.filter((x) => !x.ok)) expect(r).toMatchObject({ ok: false, lease: { state: "held", worker: holder.worker } });
  });

  it("stores a note redacted: a reason quoting a clone URL or a token is shown to every reader of the database", async () => {
    const thread = await submitted();
    const a = await acquireRunLease(st.pool, { thread, worker: "a", jobId: "ja", ttlMs: 30_000 });
    const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    expect(
      await endRunLease(st.pool, thread, (a as { token: string }).token, "failed", `cannot clone https://x-access-token:${token}@github.com/o/r.git`),
    ).toBe(true);
    const note = (await getRunLease(st.pool, thread))!.note!;
    expect(note).toMatch(/^cannot clone https:\/\/x-access-token:\[REDACTED/);
    expect(note).not.toContain(token);
  });

  it("an expired lease is taken over (counted); the old holder can neither renew nor end it, and its ledger appends are refused", async () => {
    const thread = await submitted();
    const a = await acquireRunLease(st.pool, { thread, worker: "a", jobId: "ja", ttlMs: 1 });
    expect(a.ok).toBe(true);
    const tokenA = (a as { token: string }).token;
    const fencedA = new PgLedger(st.pool, { fence: { thread, token: tokenA } });
    const first = await fencedA.append({ threadId: thread, parentId: null, type: "decision", payload: { text: "by a", step: 0 } });
    await st.pool.query("SELECT pg_sleep(0.01)");
    expect(await expiredRunLeases(st.pool)).toContain(thread);
    const b = await acquireRunLease(st.pool, { thread, worker: "b", jobId: "jb", ttlMs: 30_000 });
    expect(b).toMatchObject({ ok: true, takeover: true });
    expect(await getRunLease(st.pool, thread)).toMatchObject({ state: "held", worker: "b", takeovers: 1, note: "took over from a (its lease expired)" });
    expect(await renewRunLease(st.pool, thread, tokenA, 30_000)).toBe(false);
    expect(await endRunLease(st.pool, thread, tokenA, "done", "a thinks it finished")).toBe(false);
    await expect(fencedA.append({ threadId: thread, parentId: first.id, type: "decision", payload: { text: "late", step: 1 } })).rejects.toThrow(
      RunLeaseLostError,
    );
    // Nothing of the refused append was written; b's fenced appends go on from a's last event.
    const fencedB = new PgLedger(st.pool, { fence: { thread, token: (b as { token: string }).token } });
    const next = await fencedB.append({ threadId: thread, parentId: first.id, type: "decision", payload: { text: "by b", step: 1 } });
    expect((await fencedB.list(thread)).map((e) => [e.seq, (e.payload as { text: string }).text])).toEqual([
      [1, "by a"],
      [2, "by b"],
    ]);
    expect(next.seq).toBe(2);
    // Another thread's appends are not fenced by this lease.
    await expect(fencedA.append({ threadId: "unrelated", parentId: null, type: "decision", payload: { text: "free", step: 0 } })).resolves.toBeTruthy();
  });

  it("a reaper hands an expired holding back to the queue with its new job in one transaction, once", async () => {
    const thread = await submitted();
    const a = await acquireRunLease(st.pool, { thread, worker: "dead", jobId: "old", ttlMs: 1 });
    expect(a.ok).toBe(true);
    await st.pool.query("SELECT pg_sleep(0.01)");
    let jobs = 0;
    const reap = async () => {
      const c = await st.pool.connect();
      try {
        return await requeueRun(c, { thread, guard: "expired", note: "reaped", enqueue: async () => `new-${++jobs}` });
      } finally {
        c.release();
      }
    };
    const [r1, r2] = await Promise.all([reap(), reap()]);
    expect([r1, r2].filter(Boolean)).toHaveLength(1);
    expect(jobs).toBe(1);
    expect(await getRunLease(st.pool, thread)).toMatchObject({ state: "queued", worker: null, jobId: "new-1", takeovers: 1, note: "reaped" });
    // A job that fails to be queued leaves the holding as it was.
    const b = await acquireRunLease(st.pool, { thread, worker: "b", jobId: "new-1", ttlMs: 30_000 });
    const c = await st.pool.connect();
    try {
      await expect(requeueRun(c, { thread, guard: { token: (b as { token: string }).token }, note: "x", enqueue: async () => null })).rejects.toThrow(
        /refused a job/,
      );
    } finally {
      c.release();
    }
    expect(await getRunLease(st.pool, thread)).toMatchObject({ state: "held", worker: "b" });
  });

  it("a holder stopped inside a fenced append (its transaction left open) is cut off by the server, then reaped", async () => {
    // Every state pool asks the server to end sessions left idle in a transaction.
    const shown = await st.pool.query<{ t: string }>("SELECT current_setting('idle_in_transaction_session_timeout') AS t");
    expect(shown.rows[0]!.t).toBe(`${STALLED_TRANSACTION_MS / 1000}s`);

    const stalled = await openPgState(db.url, { migrate: false, stalledTransactionMs: 1_000 });
    try {
      const thread = await submitted();
      const a = await acquireRunLease(st.pool, { thread, worker: "stopped", jobId: "ja", ttlMs: 1 });
      // What a fenced append holds when its process is SIGSTOPped between two statements.
      const c = await stalled.pool.connect();
      await c.query("BEGIN");
      await c.query("SELECT 1 FROM ll_run_leases WHERE thread_id = $1 AND token = $2 FOR SHARE", [thread, (a as { token: string }).token]);
      const reap = async () => {
        const r = await st.pool.connect();
        try {
          return await requeueRun(r, { thread, guard: "expired", note: "reaped", enqueue: async () => "next" });
        } finally {
          r.release();
        }
      };
      // While the row is locked the reaper skips it (SKIP LOCKED: it never waits on a stalled holder)...
      expect(await reap()).toBeNull();
      // ...and once the server has ended the idle transaction, the run is handed over.
      const r = await until(reap, 200);
      expect(r).toMatchObject({ jobId: "next", previous: { worker: "stopped" } });
      // The stopped holder, woken, finds its connection gone: nothing more is written under its lock.
      await expect(c.query("SELECT 1")).rejects.toThrow(/idle-in-transaction timeout|terminat|Connection/i);
      c.release(true);
    } finally {
      await stalled.close();
    }
  });
});
