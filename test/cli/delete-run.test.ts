import fs from "node:fs";
import path from "node:path";
import { Database } from "../../src/sqlite/driver.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireLease, threadScope } from "../../src/ledger/lease.js";
import { RunRegistry } from "../../src/ledger/runs.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import type { RunSettings } from "../../src/settings.js";
import { reportFile, runLogFile } from "../../src/workspace/location.js";
import { DEMO_TASK } from "../../src/cli/demo.js";
import { cli, cliAsync, demoRun, jsonLines } from "../helpers/cli.js";
import { describePg, pgQuery, useTestDatabase } from "../helpers/postgres.js";
import { DEMO_TRAJECTORY, DEMO_WORKSPACE, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

// `ledgerloop delete` on the demo run and a fork of it in the same workspace: real CLI processes, the
// real state database, the real search index with its embedded Chroma server.
describe("ledgerloop delete", () => {
  let ws: string;
  let stateDir: string;
  let thread: string;
  const fork = "kept-fork";
  /** One value read from a database file of the state directory. */
  const valueIn =
    (file: string) =>
    (sql: string, ...args: unknown[]) => {
      const db = new Database(path.join(stateDir, file), { readonly: true });
      try {
        return db
          .prepare(sql)
          .pluck()
          .get(...args) as number;
      } finally {
        db.close();
      }
    };
  const count = valueIn("state.db");
  const indexCount = valueIn("index.db");
  const eventsOf = (t: string) => count("SELECT COUNT(*) FROM ll_events WHERE thread_id = ?", t);

  beforeAll(() => {
    ({ ws, thread } = demoRun());
    stateDir = path.join(ws, ".ledgerloop");
    const history = jsonLines(cli(["history", thread, "-w", ws, "--json"]).stdout) as Array<{ checkpointId: string; agentStep: number | null; next: string[] }>;
    const at = history.filter((h) => h.agentStep === 3 && h.next.includes("act")).at(-1)!.checkpointId;
    const f = cli(["fork", thread, "-w", ws, "--at", at, "--thread", fork, "--json"]);
    expect(f.code, f.stderr).toBe(0);
    const idx = cli(["index", "-w", ws, "--json"]);
    expect(idx.code, idx.stderr).toBe(0);
  }, 240_000);

  it("without --yes says what would go and writes nothing", () => {
    const before = eventsOf(thread);
    const r = cli(["delete", thread, "-w", ws, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep).toMatchObject({ thread, deleted: false, events: before, registered: true });
    expect(rep.checkpoints).toBe(count("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", thread));
    expect(rep.checkpoints).toBeGreaterThan(10);
    expect(eventsOf(thread)).toBe(before);
    const text = cli(["delete", thread, "-w", ws]);
    expect(text.stderr).toMatch(new RegExp(`would remove ${before} event\\(s\\).*Nothing was written; add --yes`));
  });

  it("refuses while another process holds the run's lease, and deletes nothing", () => {
    const db = openStateDb(path.join(stateDir, "state.db"), { create: false });
    const lease = acquireLease(db, [threadScope(fork)], { command: "resume", thread: fork });
    try {
      const before = eventsOf(fork);
      const r = cli(["delete", fork, "-w", ws, "--yes"]);
      expect(r.code).toBe(75);
      expect(r.stderr).toMatch(/run kept-fork is in use by resume of kept-fork/);
      expect(eventsOf(fork)).toBe(before);
    } finally {
      lease.release();
      db.close();
    }
  });

  it("--yes removes the run whole, leaves its fork working, and gives the space back", () => {
    const forkEvents = eventsOf(fork);
    const forkCheckpoints = count("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", fork);
    expect(fs.existsSync(reportFile(stateDir, thread))).toBe(true);
    expect(fs.existsSync(runLogFile(stateDir, thread))).toBe(true);
    const indexed = indexCount("SELECT COUNT(*) FROM events WHERE thread_id = ?", thread);
    expect(indexed).toBeGreaterThan(0);

    const r = cli(["delete", thread, "-w", ws, "--yes", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep).toMatchObject({ thread, deleted: true, indexEvents: indexed });
    // The revisions only the original named (its steps after the fork point) are swept.
    expect(rep.sweep.revisionsDeleted).toBeGreaterThan(0);
    expect(rep.sweep.bytesAfter).toBeLessThan(rep.sweep.bytesBefore);

    for (const table of ["ll_events", "checkpoints", "writes", "ll_runs", "ll_event_files"]) {
      expect(count(`SELECT COUNT(*) FROM ${table} WHERE thread_id = ?`, thread), table).toBe(0);
    }
    expect(count("SELECT COUNT(*) FROM ll_leases")).toBe(0);
    expect(fs.existsSync(reportFile(stateDir, thread))).toBe(false);
    expect(fs.existsSync(runLogFile(stateDir, thread))).toBe(false);
    expect(indexCount("SELECT COUNT(*) FROM events WHERE thread_id = ?", thread)).toBe(0);
    // Its event vectors are in Chroma until the next sync of the index with the ledger.
    expect(indexCount("SELECT thread_id FROM forgotten_threads")).toBe(thread);

    // The fork is whole and still reads, reports and resumes.
    expect(eventsOf(fork)).toBe(forkEvents);
    expect(count("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", fork)).toBe(forkCheckpoints);
    expect(jsonLines(cli(["threads", "-w", ws, "--json"]).stdout).map((t) => (t as { thread: string }).thread)).toEqual([fork]);
    expect(cli(["report", fork, "-w", ws]).code).toBe(0);
    const resumed = cli(["resume", fork, "-w", ws, "--json"], { timeoutMs: 180_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).status).toBe("finished");

    // The deleted run's id is retired: a new run or a fork cannot take it.
    const reuse = cli(["run", "again", "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--thread", thread]);
    expect(reuse.code).toBe(1);
    expect(reuse.stderr).toMatch(new RegExp(`thread "${thread}" was deleted .* not used again`));
    const forkInto = cli([
      "fork",
      fork,
      "-w",
      ws,
      "--at",
      jsonLines<{ checkpointId: string }>(cli(["history", fork, "-w", ws, "--json"]).stdout).at(-1)!.checkpointId,
      "--thread",
      thread,
    ]);
    expect(forkInto.code).toBe(1);
    expect(forkInto.stderr).toMatch(/was deleted/);
    // The resumed run and this search synced the index: the deleted run's vectors left Chroma.
    const s = cli(["search", "health endpoint", "-w", ws, "--scope", "events", "--json"]);
    expect(s.code, s.stderr).toBe(0);
    const hits = JSON.parse(s.stdout).results as Array<{ threadId: string }>;
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((h) => h.threadId === fork)).toBe(true);
    expect(indexCount("SELECT COUNT(*) FROM forgotten_threads")).toBe(0);
  }, 240_000);

  it("an unknown thread, or a PostgreSQL server that is down, gets a one-line error and changes nothing", () => {
    const before = eventsOf(fork);
    const unknown = cli(["delete", "no-such-run", "-w", ws, "--yes"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown thread "no-such-run"/);
    const dead = cli(["delete", fork, "-w", ws, "--yes", "--state", "postgres://ll:hunter22@127.0.0.1:1/none"]);
    expect(dead.code).not.toBe(0);
    expect(dead.stderr.trim().split("\n")).toEqual([expect.stringMatching(/cannot reach PostgreSQL at 127\.0\.0\.1:1 \(ECONNREFUSED\)/)]);
    expect(dead.stderr).not.toContain("hunter22");
    expect(eventsOf(fork)).toBe(before);
  });
});

describe("ledgerloop delete of a run the LangGraph server checkpointed", () => {
  it("deletes the ledger's records and says the server keeps its own checkpoints", async () => {
    const ws = tempWorkspace();
    const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
    const ledger = new SqliteLedger(db);
    new RunRegistry(db).register("studio-1", "a goal", { workspace: ws, model: "scripted:x" } as unknown as RunSettings, {
      origin: "server",
      checkpoints: "external",
    });
    await ledger.append({ threadId: "studio-1", parentId: null, type: "run_status", payload: { status: "finished", steps: 3 } });
    db.close();
    const r = cli(["delete", "studio-1", "-w", ws, "--yes", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const rep = JSON.parse(r.stdout);
    expect(rep).toMatchObject({ deleted: true, events: 1, checkpoints: 0, registered: true });
    expect(rep.checkpointsElsewhere).toMatch(/kept by the LangGraph server that ran it .* not deleted here: delete the thread there too/);
    expect(jsonLines(cli(["threads", "-w", ws, "--json"]).stdout)).toEqual([]);
  });
});

// The same on a PostgreSQL state: the demo run with --state and a fork of it in the same database.
describePg("ledgerloop delete --state postgres://…", () => {
  const db = useTestDatabase("delcli");
  let ws: string;
  const state = () => ["--state", db.url];
  const n = async (sql: string, ...args: unknown[]) => Number((await pgQuery<{ n: string }>(db.url, sql, args))[0]!.n);

  beforeAll(async () => {
    ws = tempWorkspace(DEMO_WORKSPACE);
    const r = await cliAsync(["run", DEMO_TASK, "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--thread", "T", ...state(), "--json", "-q"], {
      timeoutMs: 170_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const history = jsonLines<{ checkpointId: string; agentStep: number | null; next: string[] }>(
      (await cliAsync(["history", "T", "-w", ws, ...state(), "--json"])).stdout,
    );
    const at = history.filter((h) => h.agentStep === 3 && h.next.includes("act")).at(-1)!.checkpointId;
    const f = await cliAsync(["fork", "T", "-w", ws, ...state(), "--at", at, "--thread", "F", "--json"]);
    expect(f.code, f.stderr).toBe(0);
  }, 240_000);

  it("says what would go, refuses a queued run, then removes the run whole and leaves the fork", async () => {
    const events = await n("SELECT count(*) AS n FROM ll_events WHERE thread_id = 'T'");
    const forkEvents = await n("SELECT count(*) AS n FROM ll_events WHERE thread_id = 'F'");
    const dry = await cliAsync(["delete", "T", "-w", ws, ...state(), "--json"]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ thread: "T", deleted: false, events, registered: true });
    expect(dry.stdout).not.toContain(new URL(db.url).password);
    expect(await n("SELECT count(*) AS n FROM ll_events WHERE thread_id = 'T'")).toBe(events);

    // Waiting in the queue for a worker: refused, nothing written.
    await pgQuery(db.url, "INSERT INTO ll_submissions (thread_id, task, source, settings, submitted_at) VALUES ('F', 't', '{}', '{}', now()::text)");
    await pgQuery(db.url, "INSERT INTO ll_run_leases (thread_id, state) VALUES ('F', 'queued')");
    const queued = await cliAsync(["delete", "F", "-w", ws, ...state(), "--yes"]);
    expect(queued.code).toBe(75);
    expect(queued.stderr).toMatch(/run F is queued for the workers/);
    expect(await n("SELECT count(*) AS n FROM ll_events WHERE thread_id = 'F'")).toBe(forkEvents);
    await pgQuery(db.url, "DELETE FROM ll_run_leases WHERE thread_id = 'F'");
    await pgQuery(db.url, "DELETE FROM ll_submissions WHERE thread_id = 'F'");

    const local = path.join(fs.realpathSync(ws), ".ledgerloop");
    expect(fs.existsSync(runLogFile(local, "T"))).toBe(true);
    const r = await cliAsync(["delete", "T", "-w", ws, ...state(), "--yes", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ thread: "T", deleted: true, events, sweep: { skipped: expect.stringMatching(/gc --state/) } });
    for (const t of ["ll_events", "checkpoints", "checkpoint_blobs", "checkpoint_writes", "ll_runs", "ll_thread_config"]) {
      expect(await n(`SELECT count(*) AS n FROM ${t} WHERE thread_id = 'T'`), t).toBe(0);
    }
    expect(fs.existsSync(runLogFile(local, "T"))).toBe(false);
    expect(await n("SELECT count(*) AS n FROM ll_events WHERE thread_id = 'F'")).toBe(forkEvents);
    const threads = await cliAsync(["threads", ...state(), "--json"]);
    expect(jsonLines<{ thread: string }>(threads.stdout).map((t) => t.thread)).toEqual(["F"]);
    // gc --state then sweeps the revisions only T named (its steps after the fork point) from the replica.
    const gc = await cliAsync(["gc", ...state(), "--grace-minutes", "0", "--json"]);
    expect(gc.code, gc.stderr).toBe(0);
    expect(JSON.parse(gc.stdout).replica.revisionsDeleted).toBeGreaterThan(0);
    // The fork goes on from PostgreSQL (its own steps make those revisions again: the same edits).
    const resumed = await cliAsync(["resume", "F", "-w", ws, ...state(), "--json", "-q"], { timeoutMs: 170_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout.trim().split("\n").at(-1)!).status).toBe("finished");
    const reuse = await cliAsync(["run", "again", "-w", ws, "--model", `scripted:${DEMO_TRAJECTORY}`, "--thread", "T", ...state()]);
    expect(reuse.code).toBe(1);
    expect(reuse.stderr).toMatch(/thread "T" was deleted/);
    const again = await cliAsync(["delete", "T", "-w", ws, ...state(), "--yes"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/unknown thread "T" in postgres:\/\/postgres:\*\*\*@/);
  }, 240_000);
});
