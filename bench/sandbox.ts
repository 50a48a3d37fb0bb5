import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { detectIsolation } from "../src/sandbox/detect.js";
import { commandEnv, createSandbox, spawnCapped, DEFAULT_OUTPUT_CAP } from "../src/sandbox/executor.js";
import { LEVELS } from "../src/sandbox/isolation.js";
import { median, printTable, type BenchResult } from "./report.js";

const COMMANDS = ["true", "node -e 0"];
const TARGET_MS = 20;

/**
 * Per-command cost of each isolation level available here against a plain spawn of the same
 * `bash -c <command>` (what the executor did before isolation: own process group, capped output,
 * no wrapper, no cgroups, no namespaces). Runs are interleaved so that the machine's drift hits
 * every variant alike; medians of `runs`.
 */
export async function benchSandbox(runs = Number(process.env.BENCH_SANDBOX_RUNS ?? 30)): Promise<BenchResult[]> {
  const report = detectIsolation();
  const levels = LEVELS.filter((l) => report.levels[l].ok);
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-sandbox-")));
  fs.mkdirSync(path.join(ws, ".git/hooks"), { recursive: true });
  fs.writeFileSync(path.join(ws, ".git/config"), "");
  // Each level as configured by default, and (where cgroups exist) without per-command cgroups, to
  // show what the cgroups cost.
  const withCgroups = Object.keys(report.cgroups.parents).length > 0;
  const variantsOf = levels.flatMap((l) => [
    { name: l, sandbox: createSandbox({ level: l, workspace: ws }) },
    ...(withCgroups ? [{ name: `${l} (no cgroups)`, sandbox: createSandbox({ level: l, workspace: ws, cgroups: false }) }] : []),
  ]);
  const plain = (command: string) =>
    spawnCapped({ argv: ["bash", "-c", command], cwd: ws, env: commandEnv(), timeoutMs: 30_000, outputCapBytes: DEFAULT_OUTPUT_CAP });

  const rows: BenchResult[] = [];
  try {
    for (const command of COMMANDS) {
      const times: Record<string, number[]> = { plain: [] };
      for (const v of variantsOf) times[v.name] = [];
      const variants: Array<[string, () => Promise<{ exitCode: number | null }>]> = [
        ["plain", () => plain(command)],
        ...variantsOf.map(
          (v) => [v.name, () => v.sandbox.exec({ command, cwd: ws, timeoutMs: 30_000 })] as [string, () => Promise<{ exitCode: number | null }>],
        ),
      ];
      // Warm-up: page cache, the first namespace creations, the seccomp filter.
      for (const [, fn] of variants) await fn();
      for (let i = 0; i < runs; i++) {
        for (const [name, fn] of variants) {
          const t = performance.now();
          const r = await fn();
          times[name]!.push(performance.now() - t);
          if (r.exitCode !== 0) throw new Error(`bench: ${name} "${command}" exited ${r.exitCode}`);
        }
      }
      const base = median(times.plain!);
      rows.push({ name: `plain spawn of bash -c '${command}', median of ${runs}`, value: base, unit: "ms" });
      for (const v of variantsOf) {
        const m = median(times[v.name]!);
        rows.push({ name: `level ${v.name}: bash -c '${command}'`, value: m, unit: "ms", baseline: base, baselineName: "plain" });
        // The target is for the default configuration; the no-cgroup rows are for comparison.
        const isDefault = !v.name.includes("(");
        rows.push({
          name: `level ${v.name}: overhead over plain ('${command}')`,
          value: m - base,
          unit: "ms",
          ...(isDefault ? { target: `<= ${TARGET_MS} ms`, ok: m - base <= TARGET_MS } : {}),
        });
      }
    }
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
  printTable(`sandbox overhead per command (levels here: ${levels.join(", ")})`, rows);
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await benchSandbox();
}
