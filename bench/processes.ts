import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { detectIsolation } from "../src/sandbox/detect.js";
import { createSandbox } from "../src/sandbox/executor.js";
import { LEVELS } from "../src/sandbox/isolation.js";
import { ProcessManager } from "../src/sandbox/processes.js";
import { makeDryCopy } from "../src/dry-run/dry-run.js";
import { median, printTable, type BenchResult } from "./report.js";

// Background processes and dry runs: start-to-ready of a node HTTP server (against `node -e 0` run
// as a command at the same level: the floor of starting node there), the session's own cost
// (opening it; tearing it down with two servers running), and the dry run's copy of a 2,000-file
// workspace (cp --reflink=auto -a plus its manifest, against fs.cpSync of the same tree).

const SERVER = `const p = Number(process.argv[1]); require("http").createServer((q, s) => s.end("up")).listen(p, "127.0.0.1", () => console.log("listening"));`;

export async function benchProcesses(runs = Number(process.env.BENCH_PROCESSES_RUNS ?? 10)): Promise<BenchResult[]> {
  const report = detectIsolation();
  const levels = LEVELS.filter((l) => report.levels[l].ok);
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-bench-procs-")));
  fs.writeFileSync(path.join(ws, "server.js"), SERVER.replace("process.argv[1]", "process.argv[2]"));
  const rows: BenchResult[] = [];
  try {
    for (const level of levels) {
      const ready: number[] = [];
      const floor: number[] = [];
      const open: number[] = [];
      const teardown: number[] = [];
      for (let i = 0; i < runs + 1; i++) {
        const sb = createSandbox({ level, workspace: ws, session: true });
        const pm = new ProcessManager(sb, ws);
        const t0 = performance.now();
        // The first command opens the session.
        const first = await sb.exec({ command: "true", cwd: ws, timeoutMs: 30_000 });
        const tOpen = performance.now() - t0;
        const t1 = performance.now();
        const node = await sb.exec({ command: "node -e 0", cwd: ws, timeoutMs: 30_000 });
        const tNode = performance.now() - t1;
        const port = 4300 + (i % 50);
        // A host socket that vanishes between listing and hiding fails an unshare-level start (exit
        // 125, other processes' sockets under /var/tmp): try again rather than measure that.
        const startRetry = async (name: string, p: number) => {
          let r = await pm.start({ name, command: `node server.js ${p}`, readyPort: p });
          for (let k = 0; k < 3 && !r.ok && r.exit?.exitCode === 125; k++) r = await pm.start({ name, command: `node server.js ${p}`, readyPort: p });
          return r;
        };
        const a = await startRetry("a", port);
        const b = await startRetry("b", port + 100);
        if (!a.ok || !b.ok || first.exitCode !== 0 || node.exitCode !== 0) throw new Error(`bench: ${level}: ${JSON.stringify([a, b])}`);
        const t2 = performance.now();
        await pm.stopAll();
        await sb.closeSession?.();
        const tDown = performance.now() - t2;
        if (i === 0) continue; // warm-up
        ready.push(a.readyMs);
        floor.push(tNode);
        if (level !== "none") open.push(tOpen);
        teardown.push(tDown);
      }
      rows.push({
        name: `level ${level}: start_process of a node server, start to ready (port), median of ${runs}`,
        value: median(ready),
        unit: "ms",
        baseline: median(floor),
        baselineName: "`node -e 0` as a command",
      });
      if (open.length) rows.push({ name: `level ${level}: opening the session (first command \`true\`)`, value: median(open), unit: "ms" });
      rows.push({
        name: `level ${level}: ${level === "none" ? "stopping two servers" : "stopping two servers and closing the session"}`,
        value: median(teardown),
        unit: "ms",
      });
    }
    // Dry-run copy of 2,000 files in 100 directories (~4 KB each).
    const src = path.join(ws, "tree");
    for (let d = 0; d < 100; d++) {
      fs.mkdirSync(path.join(src, `dir${d}`), { recursive: true });
      for (let f = 0; f < 20; f++) fs.writeFileSync(path.join(src, `dir${d}`, `file${f}.ts`), `export const v${d}_${f} = ${d * f};\n`.repeat(120));
    }
    process.env.LEDGERLOOP_DRY_RUNS = path.join(ws, "dry");
    const copyTimes: number[] = [];
    const plainTimes: number[] = [];
    for (let i = 0; i < Math.max(3, Math.floor(runs / 2)) + 1; i++) {
      const t0 = performance.now();
      const made = makeDryCopy(src, `c${i}`);
      const t = performance.now() - t0;
      if (Object.keys(made.manifest).length !== 2000) throw new Error("bench: copy lost files");
      const t1 = performance.now();
      fs.cpSync(src, path.join(ws, `plain${i}`), { recursive: true });
      const tp = performance.now() - t1;
      if (i === 0) continue;
      copyTimes.push(t);
      plainTimes.push(tp);
    }
    rows.push({
      name: "dry-run copy of a 2,000-file workspace (cp --reflink=auto -a + manifest), median",
      value: median(copyTimes),
      unit: "ms",
      baseline: median(plainTimes),
      baselineName: "fs.cpSync",
    });
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
  printTable(`background processes and dry runs (levels here: ${levels.join(", ")})`, rows);
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await benchProcesses();
}
