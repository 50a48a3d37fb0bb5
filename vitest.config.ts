import path from "node:path";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { SLOW_SECONDS, SLOW_TESTS } from "./test/tiers.js";

// Unlisted files: a slow-tier file is taken as 20 s, a fast one as 1 s (the fast tier is a few
// minutes over ~70 files), so the many short fast files fill the end of the run.
const UNLISTED_SLOW_MS = 20_000;
const UNLISTED_FAST_MS = 1_000;

/**
 * Longest expected file first, across both projects. Vitest's own order runs the projects one
 * after the other and, without its cache (CI installs afresh), larger files first; then a long file
 * may start last and leave the other worker idle until it ends.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const expected = new Map(files.map((f) => [f, this.expectedMs(f)] as const));
    return [...files].sort((a, b) => expected.get(b)! - expected.get(a)!);
  }

  private expectedMs(spec: TestSpecification): number {
    const file = path.relative(this.ctx.config.root, spec.moduleId).split(path.sep).join("/");
    const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${file}`)?.duration;
    if (cached) return cached;
    if (SLOW_SECONDS[file] !== undefined) return SLOW_SECONDS[file] * 1000;
    return SLOW_TESTS.includes(file) ? UNLISTED_SLOW_MS : UNLISTED_FAST_MS;
  }
}

export default defineConfig({
  test: {
    // Tests spawn real processes and servers; two cores do not take more parallelism well.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
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
