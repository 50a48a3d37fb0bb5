import { beforeAll, expect, it } from "vitest";
import { benchScale, takeover, throughput } from "../../bench/scale.js";
import { ensureBuilt } from "../helpers/build.js";
import { TEST_PG_URL, describePg } from "../helpers/postgres.js";

// `npm run bench scale` at toy sizes, so the bench keeps working: its workers are real processes of
// the built bin on real PostgreSQL databases it creates and drops itself. No timing is asserted,
// only that every run finished and a SIGKILLed worker's run was taken over once, lease before event.

it("says why it skips without a PostgreSQL URL", async () => {
  const saved = { bench: process.env.LEDGERLOOP_BENCH_PG_URL, test: process.env.LEDGERLOOP_TEST_PG_URL };
  delete process.env.LEDGERLOOP_BENCH_PG_URL;
  delete process.env.LEDGERLOOP_TEST_PG_URL;
  try {
    expect(await benchScale()).toEqual([]);
  } finally {
    if (saved.bench !== undefined) process.env.LEDGERLOOP_BENCH_PG_URL = saved.bench;
    if (saved.test !== undefined) process.env.LEDGERLOOP_TEST_PG_URL = saved.test;
  }
});

describePg("bench scale at toy sizes", () => {
  beforeAll(() => ensureBuilt(), 300_000);

  it("two workers finish every submitted run", async () => {
    // Throws when a run ends other than finished, or not within its liveness bound.
    const { ms, cpuPerRun } = await throughput(TEST_PG_URL!, 2, 3, 3);
    expect(ms).toBeGreaterThan(0);
    // The workers did the runs: they used CPU for them (Linux: read from /proc).
    if (process.platform === "linux") expect(cpuPerRun).toBeGreaterThan(0);
  });

  it("the idle worker takes a SIGKILLed worker's run over once: its lease first, then its ledger", async () => {
    const t = await takeover(TEST_PG_URL!, 3, 1);
    expect(t.takeovers).toBe(1);
    expect(t.lease).toBeGreaterThan(0);
    expect(t.event).toBeGreaterThanOrEqual(t.lease);
  });
});
