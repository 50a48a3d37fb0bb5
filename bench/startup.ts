import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ensureBuilt } from "../test/helpers/build.js";
import { median, printTable, type BenchResult } from "./report.js";

// Wall time of whole CLI processes (the built bin, plain node) against `node -e 0` in the same
// run, interleaved round by round so the machine's drift hits every command alike.
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BIN = path.join(REPO, "bin/ledgerloop.js");

function run(argv: string[]): { ms: number; code: number | null; stderr: string } {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, argv, { encoding: "utf8", timeout: 120_000 });
  return { ms: performance.now() - t0, code: r.status, stderr: r.stderr };
}

/** A workspace of `n` small TypeScript modules, indexed once (n-grams, symbols, Chroma vectors). */
function indexedWorkspace(root: string, n: number): string {
  const ws = path.join(root, "big");
  for (let i = 0; i < n; i++) {
    const dir = path.join(ws, "src", `pkg${i % 40}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, `module${i}.ts`),
      `export interface Record${i} { id: number; name: string }\n` +
        `export function parseRecord${i}(line: string): Record${i} {\n  const [id, name] = line.split(",");\n  return { id: Number(id), name: name ?? "" };\n}\n` +
        `export const retryBudget${i} = ${i % 7};\n`,
    );
  }
  const r = run([BIN, "index", "-w", ws]);
  if (r.code !== 0) throw new Error(`index failed: ${r.stderr}`);
  return ws;
}

/** Median wall time of each CLI command next to `node -e 0`; targets from issue 9. */
export async function benchStartup(runs = Number(process.env.BENCH_STARTUP_RUNS ?? 7)): Promise<BenchResult[]> {
  ensureBuilt();
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-startup-")));
  try {
    const demo = path.join(tmp, "demo");
    const d = spawnSync(process.execPath, [BIN, "demo", "-w", demo, "--json", "-q"], { encoding: "utf8", timeout: 180_000 });
    if (d.status !== 0) throw new Error(`demo failed: ${d.stderr}`);
    const thread = (JSON.parse(d.stdout.trim().split("\n")[0]!) as { thread: string }).thread;
    const big = indexedWorkspace(tmp, Number(process.env.BENCH_STARTUP_FILES ?? 2000));
    const cases: Array<{ name: string; argv: string[]; target?: number }> = [
      { name: "node -e 0", argv: ["-e", "0"] },
      { name: "ledgerloop --help", argv: [BIN, "--help"], target: 150 },
      { name: "ledgerloop threads (demo workspace)", argv: [BIN, "threads", "-w", demo], target: 350 },
      { name: "ledgerloop history (demo run)", argv: [BIN, "history", thread, "-w", demo], target: 350 },
      { name: "ledgerloop ledger (demo run)", argv: [BIN, "ledger", thread, "-w", demo], target: 350 },
      { name: "ledgerloop search (indexed 2k-file workspace)", argv: [BIN, "search", "parseRecord retry budget", "-w", big], target: 1000 },
    ];
    const times = new Map(cases.map((c) => [c.name, [] as number[]]));
    for (const c of cases) run(c.argv); // warm-up: file cache, compiled code cache
    for (let i = 0; i < runs; i++) {
      for (const c of cases) {
        const r = run(c.argv);
        if (r.code !== 0) throw new Error(`${c.name} exited ${r.code}: ${r.stderr}`);
        times.get(c.name)!.push(r.ms);
      }
    }
    const base = median(times.get("node -e 0")!);
    const rows: BenchResult[] = cases.map((c) => {
      const value = median(times.get(c.name)!);
      return c.target === undefined
        ? { name: `${c.name} (median of ${runs})`, value, unit: "ms" }
        : { name: `${c.name} (median of ${runs})`, value, unit: "ms", target: `<= ${c.target} ms`, ok: value <= c.target, baseline: base, baselineName: "node -e 0" };
    });
    printTable("startup: whole processes, wall time", rows);
    return rows;
  } finally {
    // A Chroma server the index left for later searches stops with its state directory gone.
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await benchStartup();
