import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, demoRun } from "../helpers/cli.js";
import { packagesLoaded, SQLITE_PACKAGES, withoutPlatformPackage } from "../helpers/packages-loaded.js";
import { cleanupTemp, REPO } from "../helpers/workspace.js";

// The bin runs dist/cli/, the compiled CLI bundled by esbuild (scripts/bundle-cli.mjs). What a
// command loads from the bundle is read off esbuild's `// <source path>` comments in the chunks it
// loaded: a chunk that drags LangGraph into `threads` would show here.
const BUNDLE = path.join(REPO, "dist", "cli");

/** The source modules inside the bundle files a command loaded, by esbuild's module comments. */
function bundledSources(own: string[]): string[] {
  const chunks = own.filter((f) => f.startsWith("dist/cli/"));
  const sources = chunks.flatMap((f) =>
    [...fs.readFileSync(path.join(REPO, f), "utf8").matchAll(/^\/\/ ((?:node_modules|dist\/src)\/\S+\.[cm]?js)$/gm)].map((m) => m[1]!),
  );
  return [...new Set(sources)].sort();
}

const packagesIn = (sources: string[]) =>
  [...new Set(sources.map((s) => /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(s)?.[1]).filter((p): p is string => !!p))].sort();

let ws = "";
let thread = "";
beforeAll(() => {
  ({ ws, thread } = demoRun());
}, 400_000);
afterAll(() => cleanupTemp());

describe("the bundled CLI (dist/cli)", () => {
  it("is what the bin runs: `--help` loads the bundle's entry and commander's chunk, no package from node_modules", () => {
    const r = packagesLoaded(["--help"], [BIN]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.packages.size).toBe(0);
    expect(r.own).toContain("dist/cli/main.js");
    expect(r.own.filter((f) => f.startsWith("dist/src/"))).toEqual([]);
    const sources = bundledSources(r.own);
    expect(packagesIn(sources)).toEqual(["commander"]);
    expect(sources.filter((s) => s.startsWith("dist/src/cli/") && !/command-(specs|table)\.js$|\/main\.js$/.test(s))).toEqual([]);
  });

  it("keeps the inspection commands lazy: `threads` and `history` load SQLite, neither LangGraph, zod nor the tokenizer", () => {
    for (const args of [
      ["threads", "-w", ws],
      ["history", thread, "-w", ws],
    ]) {
      const r = packagesLoaded(args, [BIN]);
      expect(r.code, r.stderr).toBe(0);
      // The SQLite driver, what it requires to find its compiled module, and that module's package.
      expect(withoutPlatformPackage(r.packages)).toEqual(SQLITE_PACKAGES);
      const bundled = packagesIn(bundledSources(r.own));
      expect(bundled.filter((p) => p.startsWith("@langchain/") || ["langsmith", "zod", "gpt-tokenizer", "execa"].includes(p))).toEqual([]);
    }
  });

  it("finds every file next to a bundled module where the unbundled module would: each import.meta.url points into dist/src", () => {
    const files = fs.readdirSync(BUNDLE).filter((f) => f.endsWith(".js"));
    const rewritten: string[] = [];
    for (const f of files) {
      const code = fs.readFileSync(path.join(BUNDLE, f), "utf8");
      // The banner's createRequire is the one use left as written; every other is one of ours, rewritten.
      const bare = [...code.matchAll(/import\.meta\.url/g)].length;
      const targets = [...code.matchAll(/new URL\("(\.\.\/src\/[^"]+)", import\.meta\.url\)/g)].map((m) => m[1]!);
      expect(bare - targets.length, `${f}: an import.meta.url the bundle did not rewrite`).toBe(1);
      rewritten.push(...targets);
    }
    expect(rewritten.length).toBeGreaterThan(5);
    for (const rel of new Set(rewritten)) expect(fs.existsSync(fileURLToPath(new URL(rel, `file://${BUNDLE}/`))), rel).toBe(true);
  });

  it("serves the web view's page, which the bundled server finds in dist/src/web", async () => {
    const child = spawn(process.execPath, [BIN, "web", "-w", ws], { stdio: ["ignore", "pipe", "pipe"] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        const seen = (d: Buffer) => {
          out += d.toString();
          const m = /http:\/\/127\.0\.0\.1:\d+\//.exec(out);
          if (m) resolve(m[0]);
        };
        child.stdout.on("data", seen);
        child.stderr.on("data", seen);
        child.on("exit", (code) => reject(new Error(`web exited ${code}: ${out}`)));
      });
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toBe(fs.readFileSync(path.join(REPO, "src", "web", "page.html"), "utf8"));
    } finally {
      child.kill();
    }
  }, 60_000);
});
