import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../helpers/build.js";
import { cli } from "../helpers/cli.js";
import { REPO, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

// SQLite's driver (libsql) takes its compiled module from a per-platform optional dependency
// (@libsql/linux-x64-gnu and the like). An install with --omit=optional, or a node_modules copied from
// another platform, leaves it missing or unloadable. Every database open then fails, whatever the
// file. That must read as what it is (with what fixes it), not as a damaged state database, and must
// not make a good search index be moved aside as corrupt.
//
// The CLI runs from a copy of this package whose node_modules is the repository's, except that libsql
// sits there without its platform package, or with a foreign file in its place: the driver's own
// lookup really fails.

afterAll(() => cleanupTemp());

/**
 * A copy of the built package (bin/, dist/, examples/, package.json) with a node_modules of links to the
 * repository's packages, where `@libsql/<platform>` is missing, or holds `addon` as its module. Returns
 * the copy's bin.
 */
function installWithoutPlatformSqlite(addon?: Buffer): string {
  const dir = tempWorkspace();
  for (const part of ["bin", "dist", "examples", "package.json"]) fs.cpSync(path.join(REPO, part), path.join(dir, part), { recursive: true });
  const modules = path.join(dir, "node_modules");
  fs.mkdirSync(modules);
  for (const entry of fs.readdirSync(path.join(REPO, "node_modules"))) {
    if (entry.startsWith(".") || entry === "@libsql") continue;
    // libsql is copied, not linked: a link would resolve its platform package from the repository.
    if (entry === "libsql") fs.cpSync(path.join(REPO, "node_modules", entry), path.join(modules, entry), { recursive: true });
    else fs.symlinkSync(path.join(REPO, "node_modules", entry), path.join(modules, entry));
  }
  if (addon) {
    for (const platform of fs.readdirSync(path.join(REPO, "node_modules/@libsql"))) {
      const pkg = path.join(modules, "@libsql", platform);
      fs.mkdirSync(pkg, { recursive: true });
      fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ name: `@libsql/${platform}`, main: "index.node" }));
      fs.writeFileSync(path.join(pkg, "index.node"), addon);
    }
  }
  return path.join(dir, "bin", "ledgerloop.js");
}

function runBin(bin: string, args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("SQLite's driver without its compiled module", () => {
  let bin: string;
  let ws: string;

  beforeAll(() => {
    ensureBuilt();
    bin = installWithoutPlatformSqlite();
    ws = tempWorkspace(undefined, { "src/app.ts": "export function placeOrder(id: string): string {\n  return id;\n}\n" });
    // A good index, built with the installed (working) module.
    const r = cli(["index", "-w", ws, "--json"], { timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
  }, 150_000);

  it("stops a command with one line that names the cause and the fix, and moves no index aside", () => {
    const index = path.join(ws, ".ledgerloop/index.db");
    const before = fs.readFileSync(index);
    const r = runBin(bin, ["search", "placeOrder", "-w", ws]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ledgerloop: SQLite's compiled module for this platform \(\w+-\w+\) is not installed: @libsql\/[\w-]+ is missing\./);
    expect(r.stderr).toContain("reinstall without --omit=optional");
    expect(r.stderr).not.toMatch(/corrupt|cannot open state database|Require stack/);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(fs.existsSync(`${index}.corrupt`)).toBe(false);
    expect(fs.readFileSync(index).equals(before)).toBe(true);
    // The same workspace with the working module: the index is still there and answers.
    const ok = cli(["search", "placeOrder", "-w", ws, "--json"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain("src/app.ts");
  }, 120_000);

  it("is what doctor's sqlite check and a new run say, not a state database problem", () => {
    const doctor = runBin(bin, ["doctor", "-w", ws, "--json"]);
    const checks = JSON.parse(doctor.stdout).checks as { name: string; ok: boolean; detail: string }[];
    const sqlite = checks.find((c) => c.name === "sqlite");
    expect(sqlite?.ok).toBe(false);
    expect(sqlite?.detail).toMatch(/^SQLite's compiled module for this platform .* is missing/);

    const demo = path.join(tempWorkspace(), "demo");
    const run = runBin(bin, ["demo", "--workspace", demo]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/^ledgerloop: SQLite's compiled module for this platform/m);
    expect(run.stderr).not.toMatch(/state database|Require stack/);
  }, 150_000);

  it("names a compiled module that is not one for this platform (a node_modules copied from elsewhere)", () => {
    // A Mach-O header (a macOS build) padded to the size of a real one: not an ELF file.
    const macho = Buffer.alloc(64 * 1024);
    macho.writeUInt32LE(0xfeedfacf, 0);
    const foreign = installWithoutPlatformSqlite(macho);
    const r = runBin(foreign, ["search", "placeOrder", "-w", ws]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ledgerloop: SQLite's compiled module cannot be loaded: \S*index\.node: invalid ELF header\./);
    expect(r.stderr).toContain("reinstall");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(fs.existsSync(path.join(ws, ".ledgerloop/index.db.corrupt"))).toBe(false);
  }, 120_000);
});
