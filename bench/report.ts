/** One measured figure, with the baseline measured in the same process where there is one. */
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  target?: string;
  ok?: boolean;
  baseline?: number;
  baselineName?: string;
}

export function median(xs: number[]): number {
  return quantile(xs, 0.5);
}

export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return s[lo]! + (s[hi]! - s[lo]!) * (i - lo);
}

const fmt = (n: number) => (Number.isNaN(n) ? "n/a" : Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));

/** Prints a section of results: figure, target, baseline and the ratio to it. */
export function printTable(title: string, rows: BenchResult[]): void {
  console.log(`\n== ${title} ==`);
  for (const r of rows) {
    const target = r.target ? `  target ${r.target} ${r.ok === undefined ? "" : r.ok ? "PASS" : "MISS"}` : "";
    const base = r.baseline !== undefined ? `  | ${r.baselineName ?? "baseline"}: ${fmt(r.baseline)} ${r.unit}  (ratio ${fmt(r.value / r.baseline)})` : "";
    console.log(`${r.name.padEnd(72)} ${fmt(r.value).padStart(9)} ${r.unit}${target}${base}`);
  }
}

/**
 * The PostgreSQL server a benchmark uses (LEDGERLOOP_BENCH_PG_URL, else the tests' one), or
 * undefined after saying that `what` is skipped without one.
 */
export function benchPgUrl(what: string): string | undefined {
  const url = process.env.LEDGERLOOP_BENCH_PG_URL || process.env.LEDGERLOOP_TEST_PG_URL;
  if (!url) console.log(`\n${what} skipped: set LEDGERLOOP_BENCH_PG_URL (or LEDGERLOOP_TEST_PG_URL)`);
  return url;
}
