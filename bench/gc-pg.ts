// gc of a PostgreSQL state (`ledgerloop gc --state URL --keep-last 4`): the scripted demo run N
// times into one database through the built bin, then gc, timed as a whole process. Sizes before
// and after are compared in the same run: rows, and the checkpoint tables' bytes after VACUUM FULL
// (PostgreSQL reuses freed space on its own; VACUUM FULL gives it back to the file system, which is
// what the bytes show). PostgreSQL from LEDGERLOOP_BENCH_PG_URL or LEDGERLOOP_TEST_PG_URL.
// Sizes: BENCH_GC_RUNS (default 10).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { DEMO_TASK } from "../src/cli/demo.js";
import { ensureBuilt } from "../test/helpers/build.js";
import { createTestDatabase } from "../test/helpers/postgres.js";
import { printTable, benchPgUrl, type BenchResult } from "./report.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export async function benchGcPg(): Promise<BenchResult[]> {
  const base = benchPgUrl("gc --state figures");
  if (!base) return [];
  ensureBuilt();
  const runs = Number(process.env.BENCH_GC_RUNS ?? 10);
  const db = await createTestDatabase("gc_bench", base);
  const bin = path.join(REPO, "bin", "ledgerloop.js");
  const c = new pg.Client({ connectionString: db.url });
  try {
    for (let i = 0; i < runs; i++) {
      const w = fs.mkdtempSync(path.join(os.tmpdir(), "ll-gc-bench-"));
      fs.cpSync(path.join(REPO, "examples/demo/workspace"), w, { recursive: true });
      execFileSync(
        "node",
        [
          bin,
          "run",
          DEMO_TASK,
          "-w",
          w,
          "--model",
          `scripted:${path.join(REPO, "examples/demo/trajectory.json")}`,
          "--thread",
          `T${i}`,
          "--state",
          db.url,
          "-q",
        ],
        { stdio: "ignore" },
      );
      fs.rmSync(w, { recursive: true, force: true });
    }
    await c.connect();
    const one = async (sql: string) => Number((await c.query(sql)).rows[0].n);
    const sizes = async () => {
      for (const t of ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]) await c.query(`VACUUM FULL ${t}`);
      return {
        checkpoints: await one("SELECT COUNT(*) AS n FROM checkpoints"),
        values: await one("SELECT COUNT(*) AS n FROM checkpoint_blobs"),
        bytes: await one(
          "SELECT pg_total_relation_size('checkpoints') + pg_total_relation_size('checkpoint_blobs') + pg_total_relation_size('checkpoint_writes') AS n",
        ),
        events: await one("SELECT COUNT(*) AS n FROM ll_events"),
      };
    };
    const before = await sizes();
    const t = performance.now();
    execFileSync("node", [bin, "gc", "--state", db.url, "--keep-last", "4"], { stdio: "ignore" });
    const gcMs = performance.now() - t;
    const after = await sizes();
    const rows: BenchResult[] = [
      {
        name: `checkpoints of ${runs} finished demo runs, after gc --keep-last 4`,
        value: after.checkpoints,
        unit: "",
        baseline: before.checkpoints,
        baselineName: "before",
      },
      { name: "stored channel values (checkpoint_blobs)", value: after.values, unit: "", baseline: before.values, baselineName: "before" },
      { name: "checkpoint tables, bytes after VACUUM FULL", value: after.bytes / 1e6, unit: "MB", baseline: before.bytes / 1e6, baselineName: "before" },
      { name: "ledger events (never pruned)", value: after.events, unit: "", baseline: before.events, baselineName: "before" },
      { name: "gc --state, whole process (node start included)", value: gcMs, unit: "ms" },
    ];
    printTable(`gc on a PostgreSQL state (${runs} demo runs)`, rows);
    return rows;
  } finally {
    await c.end().catch(() => {});
    await db.drop();
  }
}
