import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromaProcessesOn } from "../../src/retrieval/chroma-server.js";
import { BIN, cli } from "../helpers/cli.js";
import { packagesLoaded, SQLITE_PACKAGES, withoutPlatformPackage } from "../helpers/packages-loaded.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// `ledgerloop search` answers from the index files within 4x the CPU of `node -e 0` (issue 30,
// bench/startup.ts): no Chroma server started, no module loaded that the answer does not need, and
// no optimising compiles for loops that run once. The workspace is the bench's: 2,000 small modules.
const FILES = 2000;
const QUERY = "parseRecord retry budget";

let big = "";
beforeAll(() => {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) {
    files[`src/pkg${i % 40}/module${i}.ts`] =
      `export interface Record${i} { id: number; name: string }\n` +
      `export function parseRecord${i}(line: string): Record${i} {\n  const [id, name] = line.split(",");\n  return { id: Number(id), name: name ?? "" };\n}\n` +
      `export const retryBudget${i} = ${i % 7};\n`;
  }
  big = tempWorkspace(undefined, files);
  // The first search indexes the workspace (and, like every search, starts no server).
  const r = cli(["search", QUERY, "-w", big], { timeoutMs: 120_000 });
  expect(r.code, r.stderr).toBe(0);
}, 180_000);
afterAll(() => cleanupTemp());

describe("ledgerloop search (built bin)", () => {
  it("answers an indexed workspace without ignore files with SQLite and commander only, and starts no Chroma server", () => {
    const r = packagesLoaded(["search", QUERY, "-w", big, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { results: Array<{ path: string }> }).results[0]?.path).toMatch(/^src\/pkg\d+\/module\d+\.ts$/);
    // `ignore` loads only when there is an ignore file to read (the next test); chromadb only for a running server.
    expect(withoutPlatformPackage(r.packages)).toEqual([...SQLITE_PACKAGES, "commander"].sort());
    expect(r.own).not.toContain("dist/src/retrieval/chroma-index.js");
    expect(fs.existsSync(path.join(big, ".ledgerloop", "chroma.server.json"))).toBe(false);
    expect(chromaProcessesOn(path.join(big, ".ledgerloop", "chroma"))).toEqual([]);
  });

  it("still honours a .gitignore: the rules are read, and what they name is not found", () => {
    const ws = tempWorkspace(undefined, {
      ".gitignore": "notes/\n",
      "notes/draft.ts": "export const quarantinedWidget = 1;\n",
      "src/kept.ts": "export const quarantinedGadget = 2;\n",
    });
    const r = packagesLoaded(["search", "quarantined", "-w", ws, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.packages.has("ignore")).toBe(true);
    expect((JSON.parse(r.stdout) as { results: Array<{ path: string }> }).results.map((h) => h.path)).toEqual(["src/kept.ts"]);
  });

  // Each of the 2,000 files costs one pass of the freshness check: with V8's default interrupt
  // budget that loop was compiled by TurboFan on a background thread, CPU spent after the work it
  // would speed up was done (short-process.ts). Tiering is counted in bytecode run, so this is stable.
  it("leaves the per-file freshness check of a 2,000-file index to the baseline tiers", () => {
    const r = spawnSync(process.execPath, ["--trace-opt", BIN, "search", QUERY, "-w", big], { encoding: "utf8", timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const marked = [...r.stdout.matchAll(/^\[marking \S+ <JSFunction (\S+) .*to TURBOFAN/gm)].map((m) => m[1]);
    expect(marked.length).toBeGreaterThan(0); // the trace is there: V8 still optimises what stays hot
    expect(marked.filter((f) => ["unchangedRegularFile", "getStatsFromBinding"].includes(f!))).toEqual([]);
  });
});
