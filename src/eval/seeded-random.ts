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
