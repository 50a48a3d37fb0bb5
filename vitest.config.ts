import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Limits for hangs, not for speed: at a load of 24 on two cores one CLI start takes ~9 s wall
    // (2 s CPU), and the CLI tests start several.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // Tests spawn real processes and servers; two cores do not take more parallelism well.
    maxWorkers: 2,
  },
});
