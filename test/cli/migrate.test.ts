import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { MigrationReport } from "../../src/ledger/migrate.js";
import { cliAsync, jsonLines, type CliResult } from "../helpers/cli.js";
import { createTestDatabase, describePg, useTestDatabase, pgQuery } from "../helpers/postgres.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, readTree, tempWorkspace } from "../helpers/workspace.js";

// `ledgerloop migrate` between a workspace's SQLite state and PostgreSQL, both ways, with real
// processes: a run killed half-way (a SIGKILL at its 12th checkpoint) is moved to the other side
// and resumed there to the end, with the same files as the same run done alone.

const MODEL = `scripted:${DEMO_TRAJECTORY}`;
const TIMEOUT = 170_000;
afterAll(() => cleanupTemp());

/** Starts the demo run and kills it (SIGKILL) right after its 12th checkpoint. */
async function killedRun(ws: string, thread: string, state?: string): Promise<void> {
  const r = await cliAsync(["run", "demo task", "-w", ws, "--model", MODEL, "--thread", thread, "--json", "-q", ...(state ? ["--state", state] : [])], {
    env: { LEDGERLOOP_FAILPOINT: "checkpoint-put:12" },
    timeoutMs: TIMEOUT,
  });
  expect(r.signal, r.stderr).toBe("SIGKILL");
}

function report(r: CliResult): MigrationReport {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as MigrationReport;
}

/** One line on stderr, a non-zero exit code. */
function oneLineError(r: CliResult, pattern: RegExp): void {
  expect(r.code).not.toBe(0);
  expect(r.stdout).toBe("");
  expect(r.stderr.trim().split("\n"), r.stderr).toHaveLength(1);
  expect(r.stderr.trim()).toMatch(pattern);
}

/** Bytes of a SQLite state (the file and its write-ahead log), to show a migration left it alone. */
function fileDigest(stateDir: string): string {
  const h = crypto.createHash("sha256");
  for (const f of ["state.db", "state.db-wal"]) {
    const p = path.join(stateDir, f);
    h.update(fs.existsSync(p) ? fs.readFileSync(p) : Buffer.alloc(0));
  }
  return h.digest("hex");
}

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

let baselineTree: Record<string, string>;

beforeAll(async () => {
  // The same run done alone, on SQLite, never stopped: what every migrated-and-resumed run must end with.
  const ws = tempWorkspace(DEMO_WORKSPACE);
  const r = await cliAsync(["run", "demo task", "-w", ws, "--model", MODEL, "--thread", "B", "--json", "-q"], { timeoutMs: TIMEOUT });
  expect(r.code, r.stderr).toBe(0);
  baselineTree = readTree(ws);
}, TIMEOUT);

describePg("ledgerloop migrate", () => {
  const db = useTestDatabase("migrate");

  it(
    "moves a killed SQLite run to PostgreSQL with equal counts and hashes, says 'already migrated' the second time, never touches the source, and the run resumes on PostgreSQL to the end",
    async () => {
      const ws = tempWorkspace(DEMO_WORKSPACE);
      await killedRun(ws, "T");
      const stateDir = path.join(ws, ".ledgerloop");
      const before = fileDigest(stateDir);
      const local = new Database(path.join(stateDir, "state.db"), { readonly: true });
      const localEvents = local.prepare("SELECT id, parent_id, seq, idempotency_key FROM ll_events WHERE thread_id = 'T' ORDER BY seq").all();
      const localCheckpoints = local.prepare("SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = 'T' ORDER BY checkpoint_id").all();
      local.close();

      const first = report(await cliAsync(["migrate", "--from", ws, "--to", db.url, "--json"], { timeoutMs: TIMEOUT }));
      expect(first.threads).toHaveLength(1);
      const t = first.threads[0]!;
      expect(t).toMatchObject({ thread: "T", result: "migrated" });
      expect(t.target).toEqual(t.source);
      expect(t.source.runs).toBe(1);
      expect(t.source.checkpoints).toBe(localCheckpoints.length);
      expect(t.source.events).toBe(localEvents.length);
      expect(t.source.writes).toBeGreaterThan(0);
      expect(t.source.actionStarts).toBeGreaterThan(0);
      expect(t.source.blobs).toBeGreaterThan(0);
      // Every workspace revision the run names is now in PostgreSQL's replica too (a worker elsewhere can materialise it).
      expect(first.revisions.named).toBeGreaterThanOrEqual(1);
      expect(first.revisions).toMatchObject({ copied: first.revisions.named, present: 0, absent: [] });
      const named = (
        await pgQuery<{ rev: string }>(
          db.url,
          "SELECT DISTINCT payload::jsonb ->> 'revision' AS rev FROM ll_events WHERE thread_id = 'T' AND payload::jsonb ->> 'revision' IS NOT NULL",
        )
      ).map((r) => r.rev);
      const inPg = new Set((await pgQuery<{ rev_id: string }>(db.url, "SELECT rev_id FROM ll_rev_revisions")).map((r) => r.rev_id));
      expect(named.filter((r) => !inPg.has(r))).toEqual([]);
      expect(fileDigest(stateDir)).toBe(before);

      // The rows themselves, read back from PostgreSQL: ids, parents, seq and keys kept.
      expect(await pgQuery(db.url, "SELECT id, parent_id, seq, idempotency_key FROM ll_events WHERE thread_id = 'T' ORDER BY seq")).toEqual(localEvents);
      expect(await pgQuery(db.url, "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = 'T' ORDER BY checkpoint_id")).toEqual(
        localCheckpoints,
      );

      const again = await cliAsync(["migrate", "--from", ws, "--to", db.url], { timeoutMs: TIMEOUT });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^T\s+already migrated\s+1\/1/m);
      expect(again.stderr).toMatch(/already migrated/);
      expect(fileDigest(stateDir)).toBe(before);

      oneLineError(
        await cliAsync(["resume", "nope", "-w", ws, "--state", db.url, "-q"]),
        /^ledgerloop: unknown thread "nope" in postgres:\/\/postgres:\*\*\*@/,
      );
      const resumed = await cliAsync(["resume", "T", "-w", ws, "--state", db.url, "--json", "-q"], { timeoutMs: TIMEOUT });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout.trim().split("\n").at(-1)!)).toMatchObject({ thread: "T", status: "finished", steps: 10 });
      expect(readTree(ws)).toEqual(baselineTree);
      const threads = await cliAsync(["threads", "--state", db.url, "--json"]);
      expect(jsonLines(threads.stdout)).toEqual([expect.objectContaining({ thread: "T", status: "finished" })]);
      // Resumed on PostgreSQL: the SQLite state still holds the run as it was when it was killed.
      const stale = new Database(path.join(stateDir, "state.db"), { readonly: true });
      expect((stale.prepare("SELECT count(*) AS n FROM ll_events WHERE thread_id = 'T'").get() as { n: number }).n).toBe(localEvents.length);
      stale.close();

      // The run went on in PostgreSQL: the killed copy is now a different run under the same id.
      const refused = await cliAsync(["migrate", "--from", ws, "--to", db.url], { timeoutMs: TIMEOUT });
      oneLineError(refused, /already holds a different run with thread id "T" \(checkpoints \d+ vs \d+, .*events \d+ vs \d+.*\); no run was written$/);
    },
    TIMEOUT * 3,
  );

  it(
    "carries a finished run's workspace revisions SQLite → PostgreSQL → a fresh workspace, where diff and rewind restore the run's files",
    async () => {
      const target = await createTestDatabase("migrev");
      try {
        const ws = tempWorkspace(DEMO_WORKSPACE);
        const run = await cliAsync(["run", "demo task", "-w", ws, "--model", MODEL, "--thread", "R", "--json", "-q"], { timeoutMs: TIMEOUT });
        expect(run.code, run.stderr).toBe(0);
        const finalTree = readTree(ws);
        const there = report(await cliAsync(["migrate", "--from", ws, "--to", target.url, "--json"], { timeoutMs: TIMEOUT }));
        expect(there.revisions.named).toBeGreaterThanOrEqual(4);
        expect(there.revisions).toMatchObject({ copied: there.revisions.named, present: 0, absent: [] });
        // Back into a new workspace holding only the demo's starting files: its state has never seen the run.
        const fresh = tempWorkspace(DEMO_WORKSPACE);
        const back = report(await cliAsync(["migrate", "--from", target.url, "--to", path.join(fresh, ".ledgerloop"), "--json"], { timeoutMs: TIMEOUT }));
        expect(back.revisions).toMatchObject({ named: there.revisions.named, copied: there.revisions.named, absent: [] });
        const all = jsonLines<{ checkpointId: string }>((await cliAsync(["history", "R", "-w", fresh, "--json"])).stdout).map((c) => c.checkpointId);
        const diff = await cliAsync(["diff", "R", "-w", fresh, "--from", all.at(-1)!, "--to", all[0]!, "--stat", "--json"]);
        expect(diff.code, diff.stderr).toBe(0);
        expect((JSON.parse(diff.stdout) as { stat: Array<{ path: string }> }).stat.map((f) => f.path).sort()).toEqual([
          "dashboard/aggregate.js",
          "services/orders/server.js",
          "services/users/server.js",
        ]);
        // Rewinding to the newest checkpoint writes the run's final files from the migrated revisions
        // (--force: this workspace's own files were never recorded here, so they are saved first).
        const rewind = await cliAsync(["rewind", "R", "-w", fresh, "--to", all[0]!, "--force", "--json"]);
        expect(rewind.code, rewind.stderr).toBe(0);
        expect(readTree(fresh)).toEqual(finalTree);
      } finally {
        await target.drop();
      }
    },
    TIMEOUT * 2,
  );

  it(
    "moves a killed PostgreSQL run back into a workspace's SQLite state, where history shows the same checkpoints and resume finishes it",
    async () => {
      const ws = tempWorkspace(DEMO_WORKSPACE);
      await killedRun(ws, "P", db.url);
      const pgEvents = await pgQuery<{ id: string }>(db.url, "SELECT id, parent_id, seq FROM ll_events WHERE thread_id = 'P' ORDER BY seq");
      const pgCheckpoints = await pgQuery<{ checkpoint_id: string }>(
        db.url,
        "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'P' AND checkpoint_ns = '' ORDER BY checkpoint_id DESC",
      );

      const r = report(await cliAsync(["migrate", "--from", db.url, "--to", path.join(ws, ".ledgerloop"), "--thread", "P", "--json"], { timeoutMs: TIMEOUT }));
      expect(r.threads.map((t) => [t.thread, t.result])).toEqual([["P", "migrated"]]);
      expect(r.threads[0]!.target).toEqual(r.threads[0]!.source);
      expect(r.threads[0]!.source.events).toBe(pgEvents.length);
      // Lessons of every namespace, whichever run wrote them (run T of the test before reflected into this database).
      expect(r.lessons.source).toBe((await pgQuery<{ n: number }>(db.url, "SELECT count(*)::int AS n FROM ll_store"))[0]!.n);
      expect(r.lessons.copied + r.lessons.present).toBe(r.lessons.source);
      // The run's revisions: already in this workspace's store (it ran here), none missing from PostgreSQL's replica.
      expect(r.revisions.named).toBeGreaterThanOrEqual(1);
      expect(r.revisions.absent).toEqual([]);
      expect(r.revisions.copied + r.revisions.present).toBe(r.revisions.named);

      const history = await cliAsync(["history", "P", "-w", ws, "--json"]);
      expect(history.code, history.stderr).toBe(0);
      expect(jsonLines<{ checkpointId: string }>(history.stdout).map((c) => c.checkpointId)).toEqual(pgCheckpoints.map((c) => c.checkpoint_id));
      const ledger = await cliAsync(["ledger", "P", "-w", ws, "--json"]);
      expect(
        jsonLines<{ id: string; parentId: string | null; seq: number }>(ledger.stdout).map((e) => ({ id: e.id, parent_id: e.parentId, seq: e.seq })),
      ).toEqual(pgEvents);

      const resumed = await cliAsync(["resume", "P", "-w", ws, "--json", "-q"], { timeoutMs: TIMEOUT });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout.trim().split("\n").at(-1)!)).toMatchObject({ thread: "P", status: "finished", steps: 10 });
      expect(readTree(ws)).toEqual(baselineTree);
      // Time travel across the checkpoints that came from PostgreSQL and those made here since.
      const all = jsonLines<{ checkpointId: string }>((await cliAsync(["history", "P", "-w", ws, "--json"])).stdout).map((c) => c.checkpointId);
      expect(all.slice(-pgCheckpoints.length)).toEqual(pgCheckpoints.map((c) => c.checkpoint_id));
      const diff = await cliAsync(["diff", "P", "-w", ws, "--from", all.at(-1)!, "--to", all[0]!, "--stat", "--json"]);
      expect(diff.code, diff.stderr).toBe(0);
      expect((JSON.parse(diff.stdout) as { stat: Array<{ path: string }> }).stat.map((f) => f.path).sort()).toEqual([
        "dashboard/aggregate.js",
        "services/orders/server.js",
        "services/users/server.js",
      ]);
      const rewind = await cliAsync(["rewind", "P", "-w", ws, "--to", pgCheckpoints[0]!.checkpoint_id, "--json"]);
      expect(rewind.code, rewind.stderr).toBe(0);
      expect(JSON.parse(rewind.stdout)).toMatchObject({ thread: "P", toCheckpoint: pgCheckpoints[0]!.checkpoint_id });

      // PostgreSQL still has the run as it was when it was killed.
      expect(await pgQuery(db.url, "SELECT id, parent_id, seq FROM ll_events WHERE thread_id = 'P' ORDER BY seq")).toEqual(pgEvents);
    },
    TIMEOUT * 3,
  );

  it(
    "a migrate killed half-way (SIGKILL after its 5th checkpoint) is completed by the next one",
    async () => {
      const target = await createTestDatabase("migrate_killed");
      try {
        const ws = tempWorkspace(DEMO_WORKSPACE);
        await killedRun(ws, "H");
        const killed = await cliAsync(["migrate", "--from", ws, "--to", target.url], {
          env: { LEDGERLOOP_FAILPOINT: "migrate-checkpoint:5" },
          timeoutMs: TIMEOUT,
        });
        expect(killed.signal, killed.stderr).toBe("SIGKILL");
        const count = async (sql: string) => (await pgQuery<{ n: number }>(target.url, sql))[0]!.n;
        expect(await count("SELECT count(*)::int AS n FROM checkpoints WHERE thread_id = 'H'")).toBe(5);
        expect(await count("SELECT count(*)::int AS n FROM ll_runs")).toBe(0);

        const done = report(await cliAsync(["migrate", "--from", ws, "--to", target.url, "--json"], { timeoutMs: TIMEOUT }));
        expect(done.threads).toEqual([expect.objectContaining({ thread: "H", result: "migrated" })]);
        expect(done.threads[0]!.target).toEqual(done.threads[0]!.source);
        expect(await count("SELECT count(*)::int AS n FROM checkpoints WHERE thread_id = 'H'")).toBe(done.threads[0]!.source.checkpoints);
        expect(report(await cliAsync(["migrate", "--from", ws, "--to", target.url, "--json"], { timeoutMs: TIMEOUT })).threads[0]!.result).toBe(
          "already migrated",
        );
      } finally {
        await target.drop();
      }
    },
    TIMEOUT,
  );

  it(
    "bad input is one line, a non-zero exit code, and nothing written",
    async () => {
      const target = await createTestDatabase("migrate_empty");
      try {
        const tables = async () => (await pgQuery<{ n: number }>(target.url, "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'"))[0]!.n;

        // A --from with no state: an empty directory, and a PostgreSQL database without ledgerloop tables.
        const empty = tempWorkspace();
        const newDir = path.join(tempWorkspace(), "new-state");
        oneLineError(
          await cliAsync(["migrate", "--from", empty, "--to", target.url]),
          /^ledgerloop: no ledgerloop state in .* \(neither .*state\.db nor .*\.ledgerloop\/state\.db exists\)$/,
        );
        oneLineError(
          await cliAsync(["migrate", "--from", target.url, "--to", newDir]),
          /^ledgerloop: no ledgerloop state in postgres:\/\/postgres:\*\*\*@.*\(no ledgerloop tables\)$/,
        );
        expect(fs.existsSync(newDir)).toBe(false);

        oneLineError(
          await cliAsync(["migrate", "--from", "postgres://not a url/x", "--to", newDir]),
          /^ledgerloop: invalid state URL postgres:\/\/not a url\/x: not a URL/,
        );
        expect(fs.existsSync(newDir)).toBe(false);

        // An unreachable server, as source and as target.
        const port = await closedPort();
        const gone = `postgres://u:secretpw@127.0.0.1:${port}/db`;
        oneLineError(await cliAsync(["migrate", "--from", gone, "--to", newDir]), /^ledgerloop: cannot reach PostgreSQL at 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
        expect(fs.existsSync(newDir)).toBe(false);

        // A thread the source does not have, in SQLite and in PostgreSQL.
        const killed = tempWorkspace(DEMO_WORKSPACE);
        await killedRun(killed, "K");
        oneLineError(
          await cliAsync(["migrate", "--from", killed, "--to", target.url, "--thread", "K", "--thread", "nope"]),
          /^ledgerloop: unknown thread "nope" in .*state\.db/,
        );
        expect(await tables()).toBe(0);
        const refusedTo = await cliAsync(["migrate", "--from", killed, "--to", gone]);
        oneLineError(refusedTo, /^ledgerloop: cannot reach PostgreSQL at 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
        expect(refusedTo.stderr).not.toContain("secretpw");
        expect((await cliAsync(["migrate", "--from", killed, "--to", target.url], { timeoutMs: TIMEOUT })).code).toBe(0);
        oneLineError(
          await cliAsync(["migrate", "--from", target.url, "--to", newDir, "--thread", "nope"]),
          /^ledgerloop: unknown thread "nope" in postgres:\/\/postgres:\*\*\*@/,
        );
        expect(fs.existsSync(newDir)).toBe(false);

        // The same state on both sides.
        oneLineError(
          await cliAsync(["migrate", "--from", killed, "--to", path.join(killed, ".ledgerloop")]),
          /^ledgerloop: --from and --to are the same state/,
        );
      } finally {
        await target.drop();
      }
    },
    TIMEOUT,
  );
});
