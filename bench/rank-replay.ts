// Tuning harness, offline half: replays dumps of bench/rank-dump.ts through rankCode with other
// ranking options, on exactly the same candidates. Usage:
//   tsx bench/rank-replay.ts <options JSON array> <dump.json>...
// Each options object is spread over the dumped input ({} reproduces the dumped ranking).
import fs from "node:fs";
import { rankCode, type RankCodeInput } from "../src/retrieval/ranking.js";
import type { Dump } from "./rank-dump.js";

interface M { r1: number; r5: number; r10: number; mrr: number }
function score(ranked: string[], answers: string[]): M {
  const at = (k: number) => answers.filter((a) => ranked.slice(0, k).includes(a)).length / answers.length;
  const first = ranked.findIndex((p) => answers.includes(p));
  return { r1: at(1), r5: at(5), r10: at(10), mrr: first < 0 ? 0 : 1 / (first + 1) };
}

/** Mean metrics of one dump under one set of options. */
export function replay(dump: Dump, opts: Partial<RankCodeInput>): M {
  const sum = { r1: 0, r5: 0, r10: 0, mrr: 0 };
  for (const q of dump.queries) {
    const { chunks, neighbours, query: _q, ...rest } = q.input;
    const ranked = rankCode({
      ...rest,
      ...(neighbours ? { cochange: (p: string) => neighbours[p] ?? [] } : {}),
      ...opts,
      chunksOf: (p) => chunks[p] ?? [],
    });
    const files: string[] = [];
    for (const r of ranked) if (!files.includes(r.path)) files.push(r.path);
    const m = score(files, q.answers);
    for (const k of Object.keys(sum) as Array<keyof M>) sum[k] += m[k] / dump.queries.length;
  }
  return sum;
}

if (process.argv[1]?.endsWith("rank-replay.ts")) {
  const [optsJson, ...files] = process.argv.slice(2);
  const variants = JSON.parse(optsJson!) as Array<Partial<RankCodeInput>>;
  const dumps = files.map((f) => JSON.parse(fs.readFileSync(f, "utf8")) as Dump);
  const f = (m: M) => `${(m.r1 * 100).toFixed(1)} ${(m.r5 * 100).toFixed(1)} ${(m.r10 * 100).toFixed(1)} ${m.mrr.toFixed(3)}`;
  for (const v of variants) console.log(dumps.map((d) => `${d.repo.split("/")[1]}: ${f(replay(d, v))}`).join(" | "), JSON.stringify(v));
}
