// Guard for speed work on the query path: runs the tuning localization sets (exact in-memory
// vectors, history on) and saves every variant's full result list of every query (paths, ranges,
// scores, sources, previews), or compares a run with a saved one and lists every difference. A
// change that is only meant to be faster must leave the comparison empty.
// Usage: tsx bench/rank-check.ts save <file.json> | tsx bench/rank-check.ts compare <file.json>
// Held-out sets are never run here (BENCH_RETRIEVAL_SETS is ignored): they were measured once.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { CodeHit } from "../src/retrieval/hybrid.js";
import { createMemoryVectorIndex } from "../src/retrieval/vector-index.js";
import type { LocalizationSet } from "./data/build-localization.js";
import { runLocalization } from "./retrieval.js";

type Lists = Record<string, Record<string, CodeHit[]>>;

const [mode, file] = process.argv.slice(2);
if ((mode !== "save" && mode !== "compare") || !file) throw new Error("usage: tsx bench/rank-check.ts save|compare <file.json>");
const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "data");
const sets = fs
  .readdirSync(dir)
  .filter((f) => /^localization-.*\.json$/.test(f))
  .sort()
  .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as LocalizationSet)
  .filter((s) => !s.heldOut);
const lists: Lists = {};
for (const set of sets) {
  const out = await runLocalization(set, {
    vectorIndex: createMemoryVectorIndex(),
    onHits: (id, variant, hits) => ((lists[`${set.repo} ${id}`] ??= {})[variant] = hits),
  });
  if (!out) throw new Error(`no mirror for ${set.repo}: the check needs every tuning set`);
}
if (mode === "save") {
  fs.writeFileSync(file, JSON.stringify(lists));
  console.log(`saved the result lists of ${Object.keys(lists).length} queries to ${file}`);
} else {
  const saved = JSON.parse(fs.readFileSync(file, "utf8")) as Lists;
  let diffs = 0;
  let compared = 0;
  for (const key of new Set([...Object.keys(saved), ...Object.keys(lists)])) {
    for (const variant of new Set([...Object.keys(saved[key] ?? {}), ...Object.keys(lists[key] ?? {})])) {
      compared++;
      const a = JSON.stringify(saved[key]?.[variant] ?? null);
      const b = JSON.stringify(lists[key]?.[variant] ?? null);
      if (a === b) continue;
      diffs++;
      if (diffs <= 10) console.log(`DIFF ${key} / ${variant}:\n  saved ${a.slice(0, 400)}\n  now   ${b.slice(0, 400)}`);
    }
  }
  console.log(`${compared} result lists compared, ${diffs} differ`);
  if (diffs) process.exitCode = 1;
}
