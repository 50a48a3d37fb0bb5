import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import pg from "pg";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { DEMO_TASK } from "../../src/cli/demo.js";
import type { HistoryRow } from "../../src/inspect/history.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { PgRevisionReplica } from "../../src/ledger/pg-revisions.js";
import { RevisionStore } from "../../src/workspace/revisions.js";
import { cliAsync, jsonLines } from "../helpers/cli.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";

afterAll(() => cleanupTemp());

/** One line of `history --json`. */
type Row = HistoryRow;

interface Report {
  checkpointsDeleted: number;
  checkpointsKept: number;
  heads: number;
  checkpointBlobsDeleted: number;
  skipped: Array<{ thread: string; status: string }>;
  replica: { revisionsKept: number; revisionsDeleted: number; treesDeleted: number; blobsDeleted: number; bytesFreed: number };
}

const count = async (url: string, sql: string, args: unknown[] = []) => Number((await pgQuery<{ n: string }>(url, sql, args))[0]!.n);

// gc --state on a PostgreSQL state shared by several machines: the finished demo run T is pruned to
// its last checkpoints, and what stays must still load, rewind and diff; a run a worker holds (A)
// is left whole; the revision replica keeps exactly what some kept checkpoint or ledger event needs.
describePg("gc on a PostgreSQL state", () => {
  const db = useTestDatabase("gcpg");
  let ws: string;
  let finalTree: Record<string, string>;
  let before: Row[];
  const state = () => ["--state", db.url];
  const historyOf = async (thread: string, dir: string) => {
    const h = await cliAsync(["history", thread, "-w", dir, ...state(), "--json"]);
    expect(h.code, h.stderr).toBe(0);
    return jsonLines<Row>(h.stdout);
  };

  beforeAll(async () => {
    ws = tempWorkspace(DEMO_WORKSPACE);
    const r = await cliAsync(["run", DEMO_TASK, "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--thread", "T", ...state(), "--json", "-q"], {
      timeoutMs: 170_000,
    });
    expect(r.code, r.stderr).toBe(0);
    finalTree = readTree(ws);
    before = await historyOf("T", ws);
    // A: a fork of T from before its first edit, which a worker holds right now (a live lease): gc
    // must not touch it. (It names only the revision T started from, so T's middle ones can go.)
    const f = await cliAsync([
      "fork",
      "T",
      "-w",
      ws,
      ...state(),
      "--at",
      before.at(-3)!.checkpointId,
      "--into",
      path.join(tempWorkspace(), "a"),
      "--thread",
      "A",
      "--json",
    ]);
    expect(f.code, f.stderr).toBe(0);
    await pgQuery(db.url, "INSERT INTO ll_submissions (thread_id, task, source, settings, submitted_at) VALUES ('A', 'held', '{}', '{}', now()::text)");
    await pgQuery(
      db.url,
      "INSERT INTO ll_run_leases (thread_id, state, worker, token, heartbeat_at, expires_at) VALUES ('A', 'held', 'w-1', 'tok', now(), now() + interval '1 hour')",
    );
  }, 200_000);

  it("keeps each branch head with its last N checkpoints, every kept checkpoint loads with the same values, and a held run is left whole", async () => {
    expect(before.length).toBeGreaterThan(20);
    const saver = new PostgresSaver(new pg.Pool({ connectionString: db.url, max: 2 }));
    try {
      const valuesOf = async (id: string) =>
        (await saver.getTuple({ configurable: { thread_id: "T", checkpoint_ns: "", checkpoint_id: id } }))?.checkpoint.channel_values;
      const keptIds = [...before.slice(0, 4).map((h) => h.checkpointId), before.at(-1)!.checkpointId];
      const valuesBefore = await Promise.all(keptIds.map(valuesOf));
      const blobsBefore = await count(db.url, "SELECT COUNT(*) AS n FROM checkpoint_blobs WHERE thread_id = 'T'");
      const heldBefore = await count(db.url, "SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = 'A'");
      const revsBefore = await count(db.url, "SELECT COUNT(*) AS n FROM ll_rev_revisions");

      const storage = async () => {
        const d = await cliAsync(["doctor", ...state(), "--json"]);
        return (JSON.parse(d.stdout) as { checks: Array<{ name: string; ok: boolean; detail: string }> }).checks.find((c) => c.name === "storage")!;
      };
      const total = await count(db.url, "SELECT COUNT(*) AS n FROM checkpoints");
      const events = await count(db.url, "SELECT COUNT(*) AS n FROM ll_events");
      expect((await storage()).detail).toMatch(
        new RegExp(`^${total} checkpoint\\(s\\), [\\d.]+ MB; ${events} ledger event\\(s\\), [\\d.]+ MB; ${revsBefore} workspace revision\\(s\\)`),
      );

      const r = await cliAsync(["gc", ...state(), "--keep-last", "4", "--grace-minutes", "0", "--json"]);
      expect(r.code, r.stderr).toBe(0);
      const rep = JSON.parse(r.stdout) as Report;
      expect(rep.skipped).toEqual([{ thread: "A", status: "running" }]);
      // T: its head and the 3 before it, plus its first checkpoint.
      expect(rep.checkpointsDeleted).toBe(before.length - 5);
      const after = await historyOf("T", ws);
      expect(after.map((h) => h.checkpointId)).toEqual(keptIds);
      // Still one chain: the oldest kept ones point at the root now.
      for (let i = 0; i + 1 < after.length; i++) expect(after[i]!.parentCheckpointId).toBe(after[i + 1]!.checkpointId);
      expect(after[0]).toMatchObject({ status: "finished", next: [] });
      // Every kept checkpoint's channel values (stored as shared blobs) are all still there.
      expect(await Promise.all(keptIds.map(valuesOf))).toEqual(valuesBefore);
      expect(rep.checkpointBlobsDeleted).toBeGreaterThan(0);
      expect(await count(db.url, "SELECT COUNT(*) AS n FROM checkpoint_blobs WHERE thread_id = 'T'")).toBe(blobsBefore - rep.checkpointBlobsDeleted);
      expect(await count(db.url, "SELECT COUNT(*) AS n FROM checkpoints WHERE thread_id = 'A'")).toBe(heldBefore);
      // The ledger is never pruned.
      const ledger = await cliAsync(["ledger", "T", "-w", ws, ...state(), "--json"]);
      expect(jsonLines(ledger.stdout).length).toBeGreaterThan(before.length / 2);
      // Revisions of dropped steps went; what is left is exactly what the sweep says it kept.
      // The demo's 4 revisions: the start (named by both runs' task_spec), two edits in between, and
      // the end (T's kept checkpoints). The two in between go.
      expect(revsBefore).toBe(4);
      expect(rep.replica.revisionsDeleted).toBe(2);
      expect(await count(db.url, "SELECT COUNT(*) AS n FROM ll_rev_revisions")).toBe(revsBefore - rep.replica.revisionsDeleted);
      expect(rep.replica.revisionsKept).toBe(revsBefore - rep.replica.revisionsDeleted);
      // doctor --state shows what is left.
      expect((await storage()).detail).toMatch(
        new RegExp(`^${total - rep.checkpointsDeleted} checkpoint\\(s\\), [\\d.]+ MB; ${events} ledger event\\(s\\), [\\d.]+ MB; 2 workspace revision\\(s\\)`),
      );
    } finally {
      await saver.end();
    }
  }, 120_000);

  it("after gc, every revision left pulls whole into a fresh store, and a kept checkpoint rewinds on another machine", async () => {
    const revs = (await pgQuery<{ rev_id: string }>(db.url, "SELECT rev_id FROM ll_rev_revisions")).map((r) => r.rev_id);
    expect(revs.length).toBeGreaterThan(0);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-gc-pull-"));
    const sdb = openStateDb(path.join(dir, "state.db"));
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      const store = new RevisionStore(sdb, dir, { blobsDir: path.join(dir, "blobs") });
      const replica = new PgRevisionReplica(pool);
      // pull checks every tree and blob against its hash and fails on a missing one.
      for (const rev of revs) await replica.pull(store, rev);
      for (const rev of revs) expect(store.info(rev)).not.toBeNull();
    } finally {
      await pool.end();
      sdb.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const after = await historyOf("T", ws);
    const elsewhere = tempWorkspace();
    const rw = await cliAsync(["rewind", "T", "-w", elsewhere, ...state(), "--to", after[0]!.checkpointId, "--json"]);
    expect(rw.code, rw.stderr).toBe(0);
    expect(readTree(elsewhere)).toEqual(finalTree);
    const d = await cliAsync(["diff", "T", "--from", after[3]!.checkpointId, "--to", after[0]!.checkpointId, "-w", elsewhere, ...state(), "--stat"]);
    expect(d.code, d.stderr).toBe(0);
  }, 120_000);

  it("a second gc while one runs, and --grace-minutes or --stale-hours on a local state, are one-line refusals", async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query("SELECT pg_advisory_lock($1)", [0x6c6c6763]);
      const r = await cliAsync(["gc", ...state()]);
      expect(r.code).not.toBe(0);
      expect(r.stderr.trim()).toBe("ledgerloop: another gc of this PostgreSQL state is running; try again when it ends");
    } finally {
      await c.end();
    }
    const local = await cliAsync(["gc", "-w", ws, "--grace-minutes", "5"]);
    expect(local.code).toBe(2);
    expect(local.stderr).toMatch(/--grace-minutes applies to a PostgreSQL state/);
    const stale = await cliAsync(["gc", "-w", ws, "--stale-hours", "2"]);
    expect(stale.code).toBe(2);
    expect(stale.stderr).toMatch(/--stale-hours applies to a PostgreSQL state/);
  });
});
