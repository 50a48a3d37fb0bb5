// Tuning harness: runs one localization set once (in-memory vectors, history on) and saves, for
// each query, the ranking's input of the hybrid (all sources) search with the chunks of every
// candidate file, so ranking variants can be compared offline on exactly the same candidates
// (bench/rank-replay.ts). Usage: tsx bench/rank-dump.ts <set file substring> <out.json>
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ChunkRange, RankCodeInput } from "../src/retrieval/ranking.js";
import { rankInputTap } from "../src/retrieval/search.js";
import { createMemoryVectorIndex } from "../src/retrieval/vector-index.js";
import type { LocalizationSet } from "./data/build-localization.js";
import { runLocalization } from "./retrieval.js";

export type DumpedInput = Omit<RankCodeInput, "chunksOf" | "cochange"> & {
  query: string;
  chunks: Record<string, readonly ChunkRange[]>;
  /** Co-change neighbours of every candidate file (when history was on). */
  neighbours?: Record<string, ReadonlyArray<{ path: string; share: number }>>;
};
export interface Dump {
  repo: string;
  heldOut: boolean;
  queries: Array<{ id: string; answers: string[]; input: DumpedInput }>;
}

const [which, out] = process.argv.slice(2);
if (!which || !out) throw new Error("usage: tsx bench/rank-dump.ts <set file substring> <out.json>");
const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), "data");
const file = fs.readdirSync(dir).find((f) => f.startsWith("localization-") && f.includes(which));
if (!file) throw new Error(`no localization set matches ${which}`);
const set = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as LocalizationSet;
const taps: DumpedInput[] = [];
rankInputTap.fn = (query, input) => {
  const chunks: Record<string, readonly ChunkRange[]> = {};
  const paths = new Set([...input.bm25, ...input.paths, ...input.symbols, ...input.vectors, ...input.history].map((h) => h.path));
  for (const p of paths) chunks[p] = input.chunksOf(p);
  const { chunksOf: _c, cochange, ...rest } = input;
  const neighbours = cochange ? Object.fromEntries([...paths].map((p) => [p, cochange(p)])) : undefined;
  for (const ns of Object.values(neighbours ?? {})) for (const n of ns) chunks[n.path] ??= input.chunksOf(n.path);
  taps.push({ ...rest, query, chunks, ...(neighbours ? { neighbours } : {}) });
};
const res = await runLocalization(set, { vectorIndex: createMemoryVectorIndex() });
if (!res) throw new Error("mirror missing");
const perQuery = taps.length / set.queries.length;
if (!Number.isInteger(perQuery)) throw new Error(`unexpected tap count ${taps.length}`);
fs.writeFileSync(
  out,
  JSON.stringify({
    repo: set.repo,
    heldOut: !!set.heldOut,
    queries: set.queries.map((q, i) => ({ id: q.id, answers: q.answers, input: taps[i * perQuery]! })),
  } satisfies Dump),
);
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
console.log(
  `query p50 (with this dump's own lookups, not a latency figure) ${p50(res.queryMs).toFixed(1)} ms (history ${p50(res.historyMs).toFixed(1)} ms, vectors ${p50(res.vectorMs).toFixed(1)} ms)`,
);
console.log(
  file,
  "hybrid",
  JSON.stringify(res.variants["hybrid (all sources)"]),
  "without history",
  JSON.stringify(res.variants["hybrid without history"]),
  "bm25",
  JSON.stringify(res.baseline),
);
