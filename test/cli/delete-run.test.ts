import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acquireLease, threadScope } from "../../src/ledger/lease.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { reportFile } from "../../src/report/report-file.js";
import { runLogFile } from "../../src/telemetry/run-log.js";
import { cli, demoRun, jsonLines } from "../helpers/cli.js";
import { cleanupTemp } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

// `ledgerloop delete` on the demo run and a fork of it in the same workspace: real CLI processes, the
// real state database, the real search index with its embedded Chroma server.
describe("ledgerloop delete", () => {
  let ws: string;
  let stateDir: string;
  let thread: string;
  const fork = "kept-fork";
  /** One value read from a database file of the state directory. */
  const valueIn = (file: string) => (sql: string, ...args: unknown[]) => {
    const db = new Database(path.join(stateDir, file), { readonly: true });
    try {
      return db.prepare(sql).pluck().get(...args) as number;
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

    // The resumed run and this search synced the index: the deleted run's vectors left Chroma.
    const s = cli(["search", "health endpoint", "-w", ws, "--scope", "events", "--json"]);
    expect(s.code, s.stderr).toBe(0);
    const hits = JSON.parse(s.stdout).results as Array<{ threadId: string }>;
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((h) => h.threadId === fork)).toBe(true);
    expect(indexCount("SELECT COUNT(*) FROM forgotten_threads")).toBe(0);
  }, 240_000);

  it("an unknown thread, or a PostgreSQL state, gets a one-line error and changes nothing", () => {
    const before = eventsOf(fork);
    const unknown = cli(["delete", "no-such-run", "-w", ws, "--yes"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown thread "no-such-run"/);
    const pg = cli(["delete", fork, "-w", ws, "--yes", "--state", "postgres://127.0.0.1:1/none"]);
    expect(pg.code).toBe(2);
    expect(pg.stderr).toMatch(/PostgreSQL state .* not implemented yet/);
    expect(eventsOf(fork)).toBe(before);
  });
});
