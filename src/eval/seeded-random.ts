// One seeded generator for everything that must draw the same numbers on every machine: the eval
// harness's kill moments and the benchmarks' synthetic repositories. No imports, so a bench loads nothing else.

/** A small seeded generator (mulberry32): fast, and the same on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seed for one task run, from the eval's seed and the run's name: the schedule does not depend on --concurrency. */
export function runSeed(seed: number, key: string): number {
  let h = seed >>> 0;
  for (const ch of key) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h;
}
