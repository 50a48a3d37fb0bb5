import { benchContext } from "./context.js";
import { benchGcPg } from "./gc-pg.js";
import { benchLoop } from "./loop.js";
import { benchNodes } from "./nodes.js";
import { benchProcesses } from "./processes.js";
import { benchRetrieval } from "./retrieval.js";
import { benchRevReplica } from "./rev-replica.js";
import { benchRevisions } from "./revisions.js";
import { benchSandbox } from "./sandbox.js";
import { benchScale } from "./scale.js";
import { benchStartup } from "./startup.js";
import { benchState } from "./state.js";
import type { BenchResult } from "./report.js";

// `npm run bench [name...]`: every benchmark prints its figures next to a baseline measured in the
// same process, since timings on shared 2-core machines only mean something side by side.
const all: Record<string, () => Promise<BenchResult[]>> = {
  loop: () => benchLoop(),
  nodes: () => benchNodes(),
  context: () => benchContext(),
  revisions: () => benchRevisions(),
  "rev-replica": () => benchRevReplica(),
  retrieval: () => benchRetrieval(),
  sandbox: () => benchSandbox(),
  startup: () => benchStartup(),
  state: () => benchState(),
  processes: () => benchProcesses(),
  scale: () => benchScale(),
  "gc-pg": () => benchGcPg(),
};

const wanted = process.argv.slice(2);
const chosen = wanted.length ? wanted : Object.keys(all);
const results: Record<string, BenchResult[]> = {};
for (const name of chosen) {
  const fn = all[name];
  if (!fn) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(all).join(", ")}`);
    process.exit(2);
  }
  results[name] = await fn();
}
if (process.env.BENCH_JSON) {
  const fs = await import("node:fs");
  fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify(results, null, 2));
}
const missed = Object.values(results)
  .flat()
  .filter((r) => r.ok === false);
console.log(missed.length ? `\n${missed.length} target(s) missed` : "\nall targets met");
