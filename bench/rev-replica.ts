import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { openPgState } from "../src/ledger/pg-db.js";
import { openStateDb } from "../src/ledger/state-db.js";
import { PgRevisionReplica } from "../src/ledger/pg-revisions.js";
import { RevisionStore } from "../src/workspace/revisions.js";
import { median, printTable, quantile, benchPgUrl, type BenchResult } from "./report.js";
import { DIRS, PER_DIR, makeWorkspace, rel, source } from "./revisions.js";

// What the PostgreSQL replica of the revisions adds to a step (ledger/pg-revisions.ts): the push
// the runtime makes after each snapshot, on the 2,000-file workspace of the revisions bench with one
// file changed per step, next to the snapshot itself; and what a worker on another machine pays to
// pull a revision. PostgreSQL from LEDGERLOOP_BENCH_PG_URL or LEDGERLOOP_TEST_PG_URL (the CI server
// runs with fsync off: the figure is round trips and server work, not disk).

const STEPS = 20;
const STEP_GAP_MS = 150;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** CPU time (user + system) this process spent since `start`: what load from other processes does not inflate. */
const cpuMs = (start: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
};

export async function benchRevReplica(): Promise<BenchResult[]> {
  const url = benchPgUrl("revision replica figures");
  if (!url) return [];
  const ws = makeWorkspace();
  const other = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-rev-pull-")));
  const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
  const db2 = openStateDb(path.join(other, ".ledgerloop", "state.db"));
  const schema = `bench_rev_${process.pid}`;
  const st = await openPgState(url, { schema });
  try {
    const store = new RevisionStore(db, ws);
    const replica = new PgRevisionReplica(st.pool);
    await store.snapshot();
    await sleep(STEP_GAP_MS);
    const base = await store.snapshot();
    let t = performance.now();
    const full = await replica.push(store, base.revId);
    const fullMs = performance.now() - t;

    const snapMs: number[] = [];
    const pushMs: number[] = [];
    const pushCpu: number[] = [];
    const queried: number[] = [];
    const sent: number[] = [];
    const revs: string[] = [base.revId];
    for (let i = 0; i < STEPS; i++) {
      await sleep(STEP_GAP_MS);
      const d = (i * 7) % DIRS;
      const f = (i * 11) % PER_DIR;
      fs.writeFileSync(path.join(ws, rel(d, f)), source(d, f, i + 1));
      const s = await store.snapshot();
      snapMs.push(s.stats.ms);
      t = performance.now();
      const c = process.cpuUsage();
      const p = await replica.push(store, s.revId);
      pushCpu.push(cpuMs(c));
      pushMs.push(performance.now() - t);
      if (p.blobs !== 1) throw new Error(`expected 1 blob pushed, got ${p.blobs}`);
      queried.push(p.queried);
      sent.push(p.bytes);
      revs.push(s.revId);
    }

    // Nothing changed: the revision is one this replica pushed.
    const unchanged: number[] = [];
    for (let i = 0; i < 10; i++) {
      const s = await store.snapshot();
      t = performance.now();
      await replica.push(store, s.revId);
      unchanged.push(performance.now() - t);
    }

    // A worker that has not pushed anything yet (empty known set) pushing a 1-change revision.
    await sleep(STEP_GAP_MS);
    fs.writeFileSync(path.join(ws, rel(1, 1)), source(1, 1, 999));
    const fresh = await store.snapshot();
    t = performance.now();
    const freshPush = await new PgRevisionReplica(st.pool).push(store, fresh.revId);
    const freshMs = performance.now() - t;

    // Another machine: the whole first revision into an empty store, then the next one on top.
    const into = new RevisionStore(db2, other);
    t = performance.now();
    await replica.pull(into, revs[0]!);
    const pullFullMs = performance.now() - t;
    const pullOne: number[] = [];
    for (const rev of revs.slice(1, 11)) {
      t = performance.now();
      await replica.pull(into, rev);
      pullOne.push(performance.now() - t);
    }

    const rows: BenchResult[] = [
      {
        name: `push per step, ${base.stats.files} files, 1 file changed (median of ${STEPS})`,
        value: median(pushMs),
        unit: "ms",
        baseline: median(snapMs),
        baselineName: "the step's snapshot",
      },
      { name: "push per step, 1 file changed, p90", value: quantile(pushMs, 0.9), unit: "ms" },
      {
        name: "push per step: CPU time of this process (median; load-independent)",
        value: median(pushCpu),
        unit: "ms",
        target: "<= 10 ms",
        ok: median(pushCpu) <= 10,
      },
      {
        name: "hashes asked of PostgreSQL per 1-change push (median)",
        value: median(queried),
        unit: "hashes",
        baseline: 1 + full.trees + full.blobs,
        baselineName: "first push",
      },
      { name: "bytes sent per 1-change push (median; blob + trees)", value: median(sent), unit: "B", baseline: full.bytes, baselineName: "first push" },
      { name: "push of a revision already pushed (median of 10)", value: median(unchanged), unit: "ms" },
      {
        name: "push of a 1-change revision by a replica that knows nothing yet",
        value: freshMs,
        unit: "ms",
        baseline: fullMs,
        baselineName: "first full push",
      },
      { name: `  (asked ${freshPush.queried} hashes, sent ${freshPush.trees} trees + ${freshPush.blobs} blob)`, value: freshPush.bytes, unit: "B" },
      { name: `first full push (${full.trees} trees, ${full.blobs} blobs)`, value: fullMs, unit: "ms" },
      { name: "pull of a whole revision into an empty store", value: pullFullMs, unit: "ms" },
      {
        name: "pull of the next revision (1 file changed) on top (median of 10)",
        value: median(pullOne),
        unit: "ms",
        baseline: pullFullMs,
        baselineName: "whole revision",
      },
    ];
    printTable("workspace revisions: PostgreSQL replica", rows);
    return rows;
  } finally {
    await st.pool.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
    await st.close();
    db.close();
    db2.close();
    fs.rmSync(ws, { recursive: true, force: true });
    fs.rmSync(other, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await benchRevReplica();
