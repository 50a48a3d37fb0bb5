import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli } from "../helpers/cli.js";
import { REPO, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// npm 12 skips the install scripts of dependencies that package.json's allowScripts does not approve,
// and a switch of Node.js leaves a module built for the old one: either way better-sqlite3 has no
// usable compiled addon. Every database open then fails, whatever the file. That must read as what it
// is (with the command that fixes it), not as a damaged state database, and must not make a good
// search index be moved aside as corrupt.
//
// The CLI runs with a real copy of better-sqlite3's JavaScript and no build/ directory, put in place
// of the installed package by a module resolution hook: the `bindings` lookup really fails.

afterAll(() => cleanupTemp());

/**
 * NODE_OPTIONS that make `import "better-sqlite3"` load a copy of the package without its addon, or
 * with `addon` as its compiled module (a node_modules copied from another platform).
 */
function unbuiltBetterSqlite(addon?: Buffer): string {
  const dir = tempWorkspace();
  const real = path.join(REPO, "node_modules/better-sqlite3");
  const copy = path.join(dir, "node_modules/better-sqlite3");
  fs.mkdirSync(copy, { recursive: true });
  fs.cpSync(path.join(real, "lib"), path.join(copy, "lib"), { recursive: true });
  fs.copyFileSync(path.join(real, "package.json"), path.join(copy, "package.json"));
  if (addon) {
    fs.mkdirSync(path.join(copy, "build/Release"), { recursive: true });
    fs.writeFileSync(path.join(copy, "build/Release/better_sqlite3.node"), addon);
  }
  for (const dep of ["bindings", "file-uri-to-path"]) {
    fs.symlinkSync(path.join(REPO, "node_modules", dep), path.join(dir, "node_modules", dep));
  }
  const entry = pathToFileURL(path.join(copy, "lib/index.js")).href;
  fs.writeFileSync(
    path.join(dir, "hooks.mjs"),
    `export async function resolve(specifier, context, next) {\n` +
      `  if (specifier === "better-sqlite3") return { url: ${JSON.stringify(entry)}, format: "commonjs", shortCircuit: true };\n` +
      `  return next(specifier, context);\n}\n`,
  );
  fs.writeFileSync(
    path.join(dir, "register.mjs"),
    `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(path.join(dir, "hooks.mjs")).href)});\n`,
  );
  return `--import ${pathToFileURL(path.join(dir, "register.mjs")).href}`;
}

describe("better-sqlite3 without its compiled addon", () => {
  let nodeOptions: string;
  let ws: string;

  beforeAll(() => {
    nodeOptions = unbuiltBetterSqlite();
    ws = tempWorkspace(undefined, { "src/app.ts": "export function placeOrder(id: string): string {\n  return id;\n}\n" });
    // A good index, built with the installed (working) module.
    const r = cli(["index", "-w", ws, "--json"], { timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
  }, 150_000);

  it("stops a command with one line that names the cause and the fix, and moves no index aside", () => {
    const index = path.join(ws, ".ledgerloop/index.db");
    const before = fs.readFileSync(index);
    const r = cli(["search", "placeOrder", "-w", ws], { env: { NODE_OPTIONS: nodeOptions } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/better-sqlite3's compiled module cannot be loaded: better_sqlite3\.node was never built/);
    expect(r.stderr).toContain("npm rebuild better-sqlite3");
    expect(r.stderr).toContain(`in ${REPO}`);
    expect(r.stderr).not.toMatch(/corrupt|cannot open state database|Tried:/);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(fs.existsSync(`${index}.corrupt`)).toBe(false);
    expect(fs.readFileSync(index).equals(before)).toBe(true);
    // The same workspace with the working module: the index is still there and answers.
    const ok = cli(["search", "placeOrder", "-w", ws, "--json"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain("src/app.ts");
  }, 120_000);

  it("is what doctor's sqlite check and a new run say, not a state database problem", () => {
    const doctor = cli(["doctor", "-w", ws, "--json"], { env: { NODE_OPTIONS: nodeOptions }, timeoutMs: 120_000 });
    const checks = JSON.parse(doctor.stdout).checks as { name: string; ok: boolean; detail: string }[];
    const sqlite = checks.find((c) => c.name === "sqlite");
    expect(sqlite?.ok).toBe(false);
    expect(sqlite?.detail).toMatch(/^better-sqlite3's compiled module cannot be loaded: .*npm rebuild better-sqlite3/);

    const demo = path.join(tempWorkspace(), "demo");
    const run = cli(["demo", "--workspace", demo], { env: { NODE_OPTIONS: nodeOptions }, timeoutMs: 120_000 });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/^ledgerloop: better-sqlite3's compiled module cannot be loaded/m);
    expect(run.stderr).not.toMatch(/state database|Tried:/);
  }, 150_000);

  it("names a compiled module that is not one for this platform (a node_modules copied from elsewhere)", () => {
    // A Mach-O header (a macOS build) padded to the size of a real one: not an ELF file.
    const macho = Buffer.alloc(64 * 1024);
    macho.writeUInt32LE(0xfeedfacf, 0);
    const foreign = unbuiltBetterSqlite(macho);
    const r = cli(["search", "placeOrder", "-w", ws], { env: { NODE_OPTIONS: foreign } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ledgerloop: better-sqlite3's compiled module cannot be loaded: \S*better_sqlite3\.node: invalid ELF header\./);
    expect(r.stderr).toContain("npm rebuild better-sqlite3");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(fs.existsSync(path.join(ws, ".ledgerloop/index.db.corrupt"))).toBe(false);
  }, 120_000);
});
