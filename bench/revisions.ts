import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { openStateDb } from "../src/ledger/state-db.js";
import { RevisionStore } from "../src/workspace/revisions.js";
import { median, printTable, quantile, type BenchResult } from "./report.js";

export const DIRS = 40;
export const PER_DIR = 50;
const CHANGE_RUNS = 20;
const RESTORE_RUNS = 5;
// Agent steps are seconds apart; this keeps a just-edited file out of the racy window (100 ms) the way
// real step spacing does, without making the benchmark slow. Only snapshot() itself is timed.
const STEP_GAP_MS = 150;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** CPU time (user + system) this process spent since `start`: what load from other processes does not inflate. */
const cpuMs = (start: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
};

/** A 2,000-file TypeScript-like workspace: 40 directories of 50 files of 1-4 KB. */
export function makeWorkspace(): string {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-rev-")));
  fs.writeFileSync(path.join(ws, ".gitignore"), "node_modules/\ndist/\n");
  for (let d = 0; d < DIRS; d++) {
    const dir = path.join(ws, "src", `pkg${String(d).padStart(2, "0")}`);
    fs.mkdirSync(dir, { recursive: true });
    for (let f = 0; f < PER_DIR; f++) fs.writeFileSync(path.join(dir, `mod${f}.ts`), source(d, f, 0));
  }
  return ws;
}

export function source(d: number, f: number, version: number): string {
  const lines = [`// pkg${d}/mod${f} v${version}`, `import { helper } from "../pkg${(d + 1) % DIRS}/mod${f}.js";`];
  const n = 30 + ((d * 7 + f * 13) % 90);
  for (let i = 0; i < n; i++) lines.push(`export function fn${f}_${i}(x: number): number { return helper(x + ${i * (d + 1)}, "${f}-${i}"); }`);
  return lines.join("\n") + "\n";
}

export function rel(d: number, f: number): string {
  return `src/pkg${String(d).padStart(2, "0")}/mod${f}.ts`;
}

function dbBytes(ws: string): number {
  return ["state.db", "state.db-wal"]
    .map((f) => path.join(ws, ".ledgerloop", f))
    .filter((f) => fs.existsSync(f))
    .reduce((n, f) => n + fs.statSync(f).size, 0);
}

/** Revision and rewind times on a 2,000-file workspace, and bytes stored per revision. */
export async function benchRevisions(): Promise<BenchResult[]> {
  const ws = makeWorkspace();
  const db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
  const store = new RevisionStore(db, ws);
  const workspaceBytes = fs
    .readdirSync(path.join(ws, "src"), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((n, e) => n + fs.statSync(path.join(e.parentPath, e.name)).size, 0);
  try {
    const first = await store.snapshot({ label: "first" });
    await sleep(STEP_GAP_MS);
    // The files were all written just before the first snapshot, so their stats are not trusted yet
    // (racy window): this one re-reads them once, as the first step after a fresh checkout would.
    const settle = await store.snapshot();

    // One file changed per revision, as after an edit_file step.
    const oneChange: number[] = [];
    const oneChangeCpu: number[] = [];
    const hashed: number[] = [];
    const stored: number[] = [];
    const revs: string[] = [store.head()!.revId];
    db.pragma("wal_checkpoint(TRUNCATE)");
    const dbBefore = dbBytes(ws);
    for (let i = 0; i < CHANGE_RUNS; i++) {
      await sleep(STEP_GAP_MS);
      const d = (i * 7) % DIRS;
      const f = (i * 11) % PER_DIR;
      fs.writeFileSync(path.join(ws, rel(d, f)), source(d, f, i + 1));
      const c = process.cpuUsage();
      const r = await store.snapshot();
      oneChangeCpu.push(cpuMs(c));
      oneChange.push(r.stats.ms);
      hashed.push(r.stats.hashed);
      stored.push(r.stats.blobBytesWritten + r.stats.treeBytesWritten);
      revs.push(r.revId);
    }
    db.pragma("wal_checkpoint(TRUNCATE)");
    const dbGrowth = (dbBytes(ws) - dbBefore) / CHANGE_RUNS;

    // Nothing changed (the agent only read files); the last edit is out of the racy window first.
    await sleep(STEP_GAP_MS);
    await store.snapshot();
    const unchanged: number[] = [];
    const unchangedCpu: number[] = [];
    for (let i = 0; i < 10; i++) {
      const c = process.cpuUsage();
      const r = await store.snapshot();
      unchangedCpu.push(cpuMs(c));
      unchanged.push(r.stats.ms);
    }

    // Rewind by one revision (1 file differs), then forward again.
    const restore1: number[] = [];
    for (let i = 0; i < RESTORE_RUNS; i++) {
      const r = await store.restore(revs[revs.length - 2]!);
      if (r.modified.length !== 1) throw new Error(`expected 1 file to differ, got ${r.modified.length}`);
      restore1.push(r.ms);
      restore1.push((await store.restore(revs[revs.length - 1]!)).ms);
    }

    // 200 files differ between two revisions (an agent-wide refactor, or a rewind over many steps).
    const base = revs[revs.length - 1]!;
    for (let k = 0; k < 200; k++) {
      const d = k % DIRS;
      const f = Math.floor(k / DIRS) * 7 + 3;
      fs.writeFileSync(path.join(ws, rel(d, f)), source(d, f, 1000 + k));
    }
    await sleep(STEP_GAP_MS);
    const wide = await store.snapshot();
    const restore200: number[] = [];
    for (let i = 0; i < RESTORE_RUNS; i++) {
      const r = await store.restore(base);
      if (r.modified.length !== 200) throw new Error(`expected 200 files to differ, got ${r.modified.length}`);
      restore200.push(r.ms);
      restore200.push((await store.restore(wide.revId)).ms);
    }

    // Baseline for a restore: writing the whole revision into an empty directory.
    const full: number[] = [];
    for (let i = 0; i < 3; i++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-rev-copy-"));
      const t = performance.now();
      await store.copyTo(base, dir, { into: new RevisionStore(db, dir) });
      full.push(performance.now() - t);
      new RevisionStore(db, dir).forget();
      fs.rmSync(dir, { recursive: true, force: true });
    }

    const s = store.stats();
    const rows: BenchResult[] = [
      {
        name: `revision, ${first.stats.files} files, 1 file changed (median of ${CHANGE_RUNS})`,
        value: median(oneChange),
        unit: "ms",
        target: "<= 50 ms",
        ok: median(oneChange) <= 50,
        baseline: first.stats.ms,
        baselineName: "first full snapshot",
      },
      { name: "revision, 1 file changed, p90", value: quantile(oneChange, 0.9), unit: "ms" },
      { name: "revision, 1 file changed: CPU time of this process (median; load-independent)", value: median(oneChangeCpu), unit: "ms" },
      { name: "revision, nothing changed (median of 10)", value: median(unchanged), unit: "ms", baseline: first.stats.ms, baselineName: "first full snapshot" },
      { name: "revision, nothing changed: CPU time (median)", value: median(unchangedCpu), unit: "ms" },
      {
        name: "second snapshot (re-reads the files the first one could not trust yet)",
        value: settle.stats.ms,
        unit: "ms",
        baseline: first.stats.ms,
        baselineName: "first full snapshot",
      },
      {
        name: "files read per 1-change revision (median)",
        value: median(hashed),
        unit: "files",
        baseline: first.stats.hashed,
        baselineName: "first full snapshot",
      },
      { name: "rewind, 1 file differs (median)", value: median(restore1), unit: "ms", baseline: median(full), baselineName: "full checkout into an empty dir" },
      {
        name: "rewind, 200 files differ (median)",
        value: median(restore200),
        unit: "ms",
        baseline: median(full),
        baselineName: "full checkout into an empty dir",
      },
      {
        name: "bytes stored per revision, 1 file changed (blobs + trees)",
        value: median(stored),
        unit: "B",
        baseline: workspaceBytes,
        baselineName: "copying the workspace",
      },
      { name: "state.db growth per revision, 1 file changed (after WAL checkpoint)", value: dbGrowth, unit: "B" },
      {
        name: "first full snapshot: bytes stored (blobs + trees, deflate level 1)",
        value: first.stats.blobBytesWritten + first.stats.treeBytesWritten,
        unit: "B",
        baseline: workspaceBytes,
        baselineName: "raw workspace",
      },
      {
        name: `store after ${s.revisions} revisions: blobs ${s.blobs.count}, trees ${s.trees.count}`,
        value: (s.blobs.storedBytes + s.trees.bytes) / 1e6,
        unit: "MB",
      },
    ];
    printTable("workspace revisions", rows);
    return rows;
  } finally {
    db.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await benchRevisions();
