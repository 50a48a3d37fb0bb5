import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/build.js";
import { jsonLines } from "../helpers/cli.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

// Fast start is a matter of what a command loads: `--help` needs commander only, and the
// inspection commands SQLite (and zod) only, never LangGraph, Chroma, tree-sitter or execa.
const BIN = path.join(REPO, "bin/ledgerloop.js");
const HEAVY = ["@langchain/", "langsmith", "openai", "chromadb", "web-tree-sitter", "execa", "gpt-tokenizer", "@xenova/", "tsx"];

let ws = "";
let thread = "";
beforeAll(() => {
  ensureBuilt();
  ws = path.join(tempWorkspace(), "demo");
  const r = spawnSync(process.execPath, [BIN, "demo", "-w", ws, "--json", "-q"], { encoding: "utf8", timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  thread = (jsonLines<{ thread: string }>(r.stdout)[0] ?? { thread: "" }).thread;
}, 400_000);
afterAll(() => cleanupTemp());

/** The npm packages a run of the built bin loaded. */
function packagesLoaded(args: string[]): { code: number | null; stderr: string; packages: Set<string> } {
  const trace = path.join(tempWorkspace(), "trace.txt");
  fs.writeFileSync(trace, "");
  const r = spawnSync(process.execPath, ["--import", path.join(REPO, "test/helpers/trace-imports.mjs"), BIN, ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, TRACE_FILE: trace },
  });
  const packages = new Set(
    fs
      .readFileSync(trace, "utf8")
      .split("\n")
      .map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1])
      .filter((p): p is string => !!p),
  );
  return { code: r.status, stderr: r.stderr, packages };
}

describe("what each command loads (built bin)", () => {
  it("--help loads commander and nothing else", () => {
    const r = packagesLoaded(["--help"]);
    expect(r.code).toBe(0);
    expect([...r.packages]).toEqual(["commander"]);
  });

  it.each([
    ["threads", () => ["threads", "-w", ws]],
    ["history", () => ["history", thread, "-w", ws]],
    ["ledger", () => ["ledger", thread, "-w", ws]],
    ["context", () => ["context", thread, "-w", ws]],
    ["report", () => ["report", thread, "-w", ws]],
    ["stats", () => ["stats", "-w", ws]],
  ])("%s needs SQLite, not LangGraph, Chroma or tree-sitter", (_name, args) => {
    const r = packagesLoaded(args());
    expect(r.code, r.stderr).toBe(0);
    expect(r.packages.has("better-sqlite3")).toBe(true);
    expect([...r.packages].filter((p) => HEAVY.some((h) => p.startsWith(h)))).toEqual([]);
  });

  // Loading zod and building the event schemas cost more than the rest of these commands: only an
  // append needs them (ledger/event-rows.ts). diff reads the checkpoint tables, without a runtime.
  it.each([
    ["threads", () => ["threads", "-w", ws]],
    ["history", () => ["history", thread, "-w", ws]],
    ["ledger", () => ["ledger", thread, "-w", ws]],
    ["diff --stat", () => ["diff", thread, "--stat", "-w", ws]],
  ])("%s reads the ledger without loading zod", (_name, args) => {
    const r = packagesLoaded(args());
    expect(r.code, r.stderr).toBe(0);
    expect(r.packages.has("zod")).toBe(false);
    expect([...r.packages].filter((p) => HEAVY.some((h) => p.startsWith(h)))).toEqual([]);
  });
});
