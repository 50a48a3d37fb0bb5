import { defineConfig } from "vitest/config";
import { SLOW_TESTS } from "./test/tiers.js";

export default defineConfig({
  test: {
    // Tests spawn real processes and servers; two cores do not take more parallelism well.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        // In-process tests: a hang fails in 30 s.
        test: { name: "fast", include: ["test/**/*.test.ts"], exclude: SLOW_TESTS, testTimeout: 30_000, hookTimeout: 60_000 },
      },
      {
        extends: true,
        // Limits for hangs, not for speed: at a load of 24 on two cores one CLI start takes ~9 s wall
        // (2 s CPU), and the CLI tests start several.
        test: { name: "slow", include: SLOW_TESTS, testTimeout: 180_000, hookTimeout: 180_000 },
      },
    ],
  },
});
