/**
 * Each setting is declared once (issue 31): the CLI flags of `run` are generated from the settings
 * schema, and docs/configuration.md from the same declarations. These tests fail when the committed
 * reference, the environment variables the code reads, or the flags drift from the declarations.
 */
import fs from "node:fs";
import path from "node:path";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { registerRun } from "../../src/cli/run.js";
import { RUN_FLAG_SETTINGS, settingsFromFlags } from "../../src/cli/setting-flags.js";
import { configurationReference, settingFlagSpecsSource } from "../../src/settings-docs.js";
import { flagOf, OTHER_ENVIRONMENT, SETTING_SURFACES } from "../../src/settings-surface.js";

const root = path.resolve(import.meta.dirname, "../..");

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : /\.(ts|mjs|js)$/.test(e.name) ? [p] : [];
  });
}

describe("settings declared once", () => {
  it("docs/configuration.md and the CLI's flag specs are what `npm run docs` makes from the declarations", () => {
    const committed = fs.readFileSync(path.join(root, "docs/configuration.md"), "utf8");
    expect(committed, "run `npm run docs` and commit docs/configuration.md").toBe(configurationReference());
    const specs = fs.readFileSync(path.join(root, "src/cli/setting-flag-specs.ts"), "utf8");
    expect(specs, "run `npm run docs` and commit src/cli/setting-flag-specs.ts").toBe(settingFlagSpecsSource());
  });

  it("every LEDGERLOOP_* variable the code reads is documented", () => {
    const declared = new Set([...Object.values(SETTING_SURFACES).flatMap((s) => (s.env ? [s.env] : [])), ...OTHER_ENVIRONMENT.map((e) => e.name)]);
    const used = new Set<string>();
    for (const f of [...sourceFiles(path.join(root, "src")), ...sourceFiles(path.join(root, "bin"))]) {
      for (const m of fs.readFileSync(f, "utf8").matchAll(/LEDGERLOOP_[A-Z0-9_]+[A-Z0-9]/g)) used.add(m[0]);
    }
    expect([...used].filter((v) => !declared.has(v)).sort()).toEqual([]);
  });

  it("`run` has a flag for every setting that declares one, with the setting's checks", async () => {
    const program = new Command().exitOverride();
    registerRun(program);
    const run = program.commands.find((c) => c.name() === "run")!;
    const longs = new Set(run.options.map((o) => o.long));
    for (const key of RUN_FLAG_SETTINGS) expect(longs.has(flagOf(key)!), `${key} has no flag on run`).toBe(true);
    // The settings the issue found missing from run.
    for (const f of ["--retrieval", "--vectors", "--embedder"]) expect(longs.has(f)).toBe(true);
    let parsed: Record<string, unknown> = {};
    run.action((_task: string, opts: Record<string, unknown>) => {
      parsed = opts;
    });
    const bad: Array<[string[], RegExp]> = [
      [["--max-steps", "0"], /--max-steps must be a positive integer/],
      [["--budget", "12"], /--budget must be a whole number from 1000/],
      [["--vectors", "faiss"], /--vectors must be chroma or off, got "faiss"/],
      [["--max-cost", "-1"], /--max-cost must be a positive number/],
    ];
    for (const [args, re] of bad) {
      await program.parseAsync(["node", "ll", "run", "task", ...args]);
      await expect(settingsFromFlags(parsed, RUN_FLAG_SETTINGS), args.join(" ")).rejects.toThrow(re);
    }
    // Good values come out typed, under the settings' own names.
    await program.parseAsync([
      "node",
      "ll",
      "run",
      "task",
      "--budget",
      "4000",
      "--vectors",
      "off",
      "--allow",
      "make",
      "--allow",
      "just build",
      "--allow-network",
    ]);
    expect(await settingsFromFlags(parsed, RUN_FLAG_SETTINGS)).toEqual({
      budgetTokens: 4000,
      vectors: "off",
      allow: ["make", "just build"],
      allowNetwork: true,
    });
  });
});
