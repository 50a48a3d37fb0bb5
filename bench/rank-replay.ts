// Tuning harness, offline half: replays dumps of bench/rank-dump.ts through rankCode with other
// ranking options, on exactly the same candidates. Usage:
//   tsx bench/rank-replay.ts <options JSON array> <dump.json>...
// Each options object is spread over the dumped input ({} reproduces the dumped ranking). Each line
// ends with the MRR change against the same candidates without history (historyWeight 0), its mean
// over the dumps and its worst set (constants are chosen for the mean with no set worse off), and
// each set's 95 % paired bootstrap interval of that change.
import fs from "node:fs";
import { rankCode, type RankCodeInput } from "../src/retrieval/ranking.js";
import type { Dump } from "./rank-dump.js";

interface M {
  r1: number;
  r5: number;
  r10: number;
  mrr: number;
}
function score(ranked: string[], answers: string[]): M {
  const at = (k: number) => answers.filter((a) => ranked.slice(0, k).includes(a)).length / answers.length;
  const first = ranked.findIndex((p) => answers.includes(p));
  return { r1: at(1), r5: at(5), r10: at(10), mrr: first < 0 ? 0 : 1 / (first + 1) };
}

/** The ranking options that leave history out (the baseline a history variant is measured against). */
export const WITHOUT_HISTORY: Partial<RankCodeInput> = { historyWeight: 0, historyScoreExponent: 0, cochangeTop: 0 };

/** Mean metrics of one dump under one set of options. */
export function replay(dump: Dump, opts: Partial<RankCodeInput>): M {
  return meanOf(replayQueries(dump, opts));
}

function meanOf(ms: M[]): M {
  const sum = { r1: 0, r5: 0, r10: 0, mrr: 0 };
  for (const m of ms) for (const k of Object.keys(sum) as Array<keyof M>) sum[k] += m[k] / ms.length;
  return sum;
}

/** Each query's metrics of one dump under one set of options. */
export function replayQueries(dump: Dump, opts: Partial<RankCodeInput>): M[] {
  const out: M[] = [];
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
    out.push(score(files, q.answers));
  }
  return out;
}

/**
 * 95 % paired bootstrap interval of the mean difference b − a (per query, same queries): 10,000
 * resamples of the queries with a fixed seed, so a rerun prints the same interval.
 */
export function pairedBootstrap(a: number[], b: number[], resamples = 10_000): [number, number] {
  let seed = 0x9e3779b9;
  const rand = () => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const d = a.map((x, i) => b[i]! - x);
  const means: number[] = [];
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < d.length; i++) sum += d[Math.floor(rand() * d.length)]!;
    means.push(sum / d.length);
  }
  means.sort((x, y) => x - y);
  return [means[Math.floor(resamples * 0.025)]!, means[Math.floor(resamples * 0.975)]!];
}

if (process.argv[1]?.endsWith("rank-replay.ts")) {
  const [optsJson, ...files] = process.argv.slice(2);
  const variants = JSON.parse(optsJson!) as Array<Partial<RankCodeInput>>;
  const dumps = files.map((f) => JSON.parse(fs.readFileSync(f, "utf8")) as Dump);
  const f = (m: M) => `${(m.r1 * 100).toFixed(1)} ${(m.r5 * 100).toFixed(1)} ${(m.r10 * 100).toFixed(1)} ${m.mrr.toFixed(3)}`;
  // Each dump's queries without history, replayed once: the baseline of every variant.
  const withoutQueries = dumps.map((d) => replayQueries(d, WITHOUT_HISTORY));
  const without = withoutQueries.map(meanOf);
  console.log(dumps.map((d, i) => `${d.repo.split("/")[1]}: ${f(without[i]!)}`).join(" | "), "without history");
  for (const v of variants) {
    const perQuery = dumps.map((d) => replayQueries(d, v));
    const ms = perQuery.map(meanOf);
    const gain = ms.map((m, i) => m.mrr - without[i]!.mrr);
    // How sure each gain is: 70 queries leave a wide interval.
    const ci = dumps.map((d, i) => {
      const [lo, hi] = pairedBootstrap(
        withoutQueries[i]!.map((m) => m.mrr),
        perQuery[i]!.map((m) => m.mrr),
      );
      return `${d.repo.split("/")[1]} [${lo.toFixed(3)}, ${hi.toFixed(3)}]`;
    });
    const mean = gain.reduce((a, b) => a + b, 0) / gain.length;
    console.log(
      dumps.map((d, i) => `${d.repo.split("/")[1]}: ${f(ms[i]!)}`).join(" | "),
      `| MRR vs without history: mean ${mean >= 0 ? "+" : ""}${mean.toFixed(3)}, worst ${Math.min(...gain) >= 0 ? "+" : ""}${Math.min(...gain).toFixed(3)}; 95 % intervals ${ci.join(", ")}`,
      JSON.stringify(v),
    );
    if (dumps.length > 1) {
      // Every query of every set as one sample: a pooled gain is sure at far fewer queries per set.
      const pooled = (k: keyof M) => {
        const a = withoutQueries.flat().map((m) => m[k]);
        const b = perQuery.flat().map((m) => m[k]);
        const gain = b.reduce((x, y) => x + y, 0) / b.length - a.reduce((x, y) => x + y, 0) / a.length;
        const [lo, hi] = pairedBootstrap(a, b);
        const scale = k === "mrr" ? 1 : 100;
        const d = k === "mrr" ? 3 : 1;
        const sign = (x: number) => `${x >= 0 ? "+" : ""}${(x * scale).toFixed(d)}`;
        return `${k === "mrr" ? "MRR" : k.replace("r", "recall@")} ${sign(gain)} [${sign(lo)}, ${sign(hi)}]`;
      };
      console.log(
        `  pooled over ${perQuery.flat().length} queries of ${dumps.length} sets, vs without history (95 % interval): ${pooled("mrr")}, ${pooled("r10")}, ${pooled("r1")}`,
      );
    }
  }
}
