import fs from "node:fs";
import { rankCode } from "../src/retrieval/ranking.js";
import type { Dump } from "./rank-dump.js";
const names = process.argv.slice(2);
for (const n of names) {
  const d = JSON.parse(fs.readFileSync(`/tmp/dumps/${n}.json`, "utf8")) as Dump;
  for (const q of d.queries) {
    const { chunks, neighbours, query, ...rest } = q.input;
    const run = (o: any) => {
      const r = rankCode({ ...rest, ...(neighbours ? { cochange: (p: string) => neighbours[p] ?? [] } : {}), ...o, chunksOf: (p) => chunks[p] ?? [] });
      const files: { p: string; s: any }[] = [];
      for (const x of r) if (!files.some((f) => f.p === x.path)) files.push({ p: x.path, s: x.sources });
      return files;
    };
    const a = run({}), b = run({ historyWeight: 0, historyScoreExponent: 0, cochangeTop: 0 });
    const ra = a.findIndex((f) => q.answers.includes(f.p)), rb = b.findIndex((f) => q.answers.includes(f.p));
    if (rb >= 0 && (ra < 0 || ra > rb)) {
      console.log(`\n[${n}] HURT ${rb + 1} -> ${ra + 1}: ${query.slice(0, 120)}\n  answers ${q.answers.join(", ")}`);
      for (const f of a.slice(0, 3)) console.log(`  +h ${f.p} ${JSON.stringify(f.s.history ?? null).slice(0, 200)}`);
    }
  }
}
