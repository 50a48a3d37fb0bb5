import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runEval } from "../../src/eval/eval.js";
import { evalTable, progressLine, summarize } from "../../src/eval/report.js";
import { loadSuite } from "../../src/eval/task.js";
import { provisionToolchain, resolveToolchain, toolchainBases, ToolchainMissing } from "../../src/eval/toolchain.js";
import { statWalk } from "../../src/workspace/walk.js";

// A task's toolchain: real packages from this project's node_modules copied into real folders,
// the real walker, and the real harness for a package this machine does not have.

const REPO = path.join(import.meta.dirname, "../..");
const made: string[] = [];
const tmp = (prefix: string) => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(d);
  return d;
};
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

/** A suite of one task with the given toolchain; its workspace ignores node_modules/ unless told not to. */
function suiteWith(toolchain: unknown, opts: { ignore?: boolean } = {}): string {
  const suite = tmp("ll-tc-suite-");
  const dir = path.join(suite, "ts-one");
  fs.mkdirSync(path.join(dir, "workspace"), { recursive: true });
  fs.mkdirSync(path.join(dir, "hidden"), { recursive: true });
  fs.writeFileSync(path.join(dir, "workspace", "a.ts"), "export const a: number = 1;\n");
  if (opts.ignore !== false) fs.writeFileSync(path.join(dir, "workspace", ".gitignore"), "node_modules/\ndist/\n");
  fs.writeFileSync(path.join(dir, "hidden", "a.test.js"), "// hidden\n");
  fs.writeFileSync(path.join(dir, "task.json"), JSON.stringify({ id: "ts-one", goal: "do it", language: "typescript", toolchain, hiddenTest: "true" }));
  return suite;
}

describe("task toolchains", () => {
  it("task.json names packages; a bad name or a workspace that does not ignore node_modules/ is refused", () => {
    expect(loadSuite(suiteWith(["typescript", "@types/node"]))[0]!.toolchain).toEqual(["typescript", "@types/node"]);
    expect(loadSuite(suiteWith(undefined))[0]!.toolchain).toEqual([]);
    expect(() => loadSuite(suiteWith(["../evil"]))).toThrow(/task\.json: toolchain\.0: an npm package name/);
    expect(() => loadSuite(suiteWith(["typescript"], { ignore: false }))).toThrow(/workspace\/\.gitignore must ignore node_modules\//);
  });

  it("resolves the named packages and what they depend on, from the project's node_modules", () => {
    const found = resolveToolchain(["typescript", "@types/node"], toolchainBases(REPO));
    // @types/node needs undici-types; without it tsc cannot read node's types offline.
    expect([...found.keys()].sort()).toEqual(["@types/node", "typescript", "undici-types"]);
    expect(fs.existsSync(path.join(found.get("typescript")!, "lib", "tsc.js"))).toBe(true);
  });

  it("a package that is not installed is a one-line error saying what to install", () => {
    const run = () => resolveToolchain(["typescript", "ll-no-such-package"], toolchainBases(tmp("ll-tc-base-")));
    expect(run).toThrow(ToolchainMissing);
    expect(run).toThrow(/needs the npm package "ll-no-such-package".*run `npm i -D ll-no-such-package` in your project$/);
    try {
      run();
    } catch (err) {
      expect((err as Error).message).not.toContain("\n");
    }
  });

  it("copies the toolchain into node_modules with its commands, hidden from the walker, and restores it over the agent's changes", async () => {
    const ws = tmp("ll-tc-ws-");
    fs.writeFileSync(path.join(ws, ".gitignore"), "node_modules/\n");
    fs.writeFileSync(path.join(ws, "a.ts"), "export const a: number = 1;\n");
    const pkgs = resolveToolchain(["typescript", "@types/node"], toolchainBases(REPO));
    provisionToolchain(ws, pkgs);
    const version = JSON.parse(fs.readFileSync(path.join(REPO, "node_modules/typescript/package.json"), "utf8")).version as string;
    expect(execFileSync(path.join(ws, "node_modules/.bin/tsc"), ["--version"], { encoding: "utf8" })).toContain(version);
    // A copy, not a link to the user's installation.
    const copied = fs.statSync(path.join(ws, "node_modules/typescript/lib/tsc.js"));
    expect(copied.ino).not.toBe(fs.statSync(path.join(pkgs.get("typescript")!, "lib/tsc.js")).ino);
    expect((await statWalk(ws)).entries.map((e) => e.rel)).toEqual([".gitignore", "a.ts"]);

    // What an agent could do to it: break tsc, then swap node_modules for a link to a folder outside.
    fs.writeFileSync(path.join(ws, "node_modules/typescript/lib/tsc.js"), "process.exit(0);\n");
    provisionToolchain(ws, pkgs);
    expect(fs.readFileSync(path.join(ws, "node_modules/typescript/lib/tsc.js"), "utf8")).toBe(fs.readFileSync(path.join(pkgs.get("typescript")!, "lib/tsc.js"), "utf8"));
    const outside = tmp("ll-tc-outside-");
    fs.rmSync(path.join(ws, "node_modules"), { recursive: true });
    fs.symlinkSync(outside, path.join(ws, "node_modules"));
    provisionToolchain(ws, pkgs);
    expect(fs.lstatSync(path.join(ws, "node_modules")).isDirectory()).toBe(true);
    expect(fs.readdirSync(outside)).toEqual([]);

    fs.writeFileSync(path.join(ws, ".gitignore"), "dist/\n");
    expect(() => provisionToolchain(ws, pkgs)).toThrow(/must ignore node_modules\//);
  });

  it("the eval skips a task whose toolchain is missing, says what to install, and does not count it as a run", async () => {
    const suite = suiteWith(["ll-no-such-package"]);
    const r = await runEval({ suiteDir: suite, model: "nothing", outDir: path.join(tmp("ll-tc-out-"), "out"), settings: { vectors: "off" } });
    expect(r.results).toHaveLength(1);
    const [x] = r.results;
    expect(x).toMatchObject({ task: "ts-one", solved: false, status: "skipped", steps: 0, modelCalls: 0, hiddenExit: null });
    expect(x!.error).toMatch(/run `npm i -D ll-no-such-package`/);
    expect(summarize(r.results)[0]).toMatchObject({ runs: 0, skipped: 1, solved: 0 });
    expect(evalTable(r.results)).toContain(`ts-one (ledgerloop): ${x!.error}`);
    expect(progressLine(x!, 1, 1)).toBe(`[1/1] ts-one (ledgerloop): skipped: ${x!.error}`);
    const md = fs.readFileSync(r.reportFile, "utf8");
    expect(md).toContain("## Skipped (not counted as runs)");
    expect(md).not.toContain("## Why runs were not solved");
  });
});
