import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PathEscapeError } from "../../src/errors.js";
import { assertWritable, resolveInWorkspace } from "../../src/workspace/paths.js";

let tmp: string;
let ws: string;
let outside: string;

beforeEach(() => {
  // Realpath'd so the checks below see the same spelling the runtime hands in (macOS /var → /private/var).
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-paths-")));
  ws = path.join(tmp, "ws");
  outside = path.join(tmp, "outside");
  fs.mkdirSync(path.join(ws, "src", "deep"), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(ws, "src", "a.ts"), "a");
  fs.writeFileSync(path.join(outside, "secret.txt"), "s");
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function refused(p: string, opts?: { write?: boolean }): PathEscapeError {
  try {
    resolveInWorkspace(ws, p, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(PathEscapeError);
    expect((err as PathEscapeError).code).toBe("PATH_OUTSIDE_WORKSPACE");
    return err as PathEscapeError;
  }
  throw new Error(`expected ${JSON.stringify(p)} to be refused`);
}

describe("resolveInWorkspace", () => {
  it("resolves relative paths, normalising them to POSIX rel", () => {
    expect(resolveInWorkspace(ws, "src/a.ts")).toEqual({ abs: path.join(ws, "src/a.ts"), rel: "src/a.ts" });
    expect(resolveInWorkspace(ws, "./src/deep/../a.ts").rel).toBe("src/a.ts");
    expect(resolveInWorkspace(ws, "src/not-yet/new.ts").rel).toBe("src/not-yet/new.ts");
  });

  it("uses '.' for the root", () => {
    expect(resolveInWorkspace(ws, ".")).toEqual({ abs: ws, rel: "." });
    expect(resolveInWorkspace(ws, "")).toEqual({ abs: ws, rel: "." });
    expect(resolveInWorkspace(ws, "src/..").rel).toBe(".");
  });

  it("accepts absolute paths inside the workspace", () => {
    expect(resolveInWorkspace(ws, path.join(ws, "src", "a.ts")).rel).toBe("src/a.ts");
  });

  it("accepts an absolute path spelled through a symlink to the workspace", () => {
    fs.symlinkSync(ws, path.join(tmp, "alias"));
    expect(resolveInWorkspace(ws, path.join(tmp, "alias", "src", "a.ts")).rel).toBe("src/a.ts");
  });

  it("refuses .. escapes, naming the path", () => {
    const err = refused("../outside/secret.txt");
    expect(err.message).toContain('"../outside/secret.txt"');
    expect(err.message).toContain("..");
    refused("src/../../outside");
    refused("..");
  });

  it("refuses absolute paths outside", () => {
    expect(refused("/etc/passwd").message).toMatch(/"\/etc\/passwd" is an absolute path outside the workspace/);
    refused(path.join(outside, "secret.txt"));
    // A sibling whose name merely starts with the workspace's name is still outside.
    fs.mkdirSync(`${ws}-evil`);
    refused(`${ws}-evil/x`);
  });

  it("refuses NUL bytes", () => {
    expect(refused("src/a.ts\0.png").message).toContain("NUL");
  });

  it("refuses a symlink to /etc, then link/passwd", () => {
    fs.symlinkSync("/etc", path.join(ws, "etc-link"));
    expect(refused("etc-link/passwd").message).toMatch(/symlink that leads outside/);
    refused("etc-link");
  });

  it("refuses a new file under a symlinked dir that points out", () => {
    fs.symlinkSync(outside, path.join(ws, "out"));
    refused("out/new-file.txt");
    refused("out/new-dir/new-file.txt");
    expect(fs.existsSync(path.join(outside, "new-file.txt"))).toBe(false);
  });

  it("refuses a dangling symlink whose target would be created outside", () => {
    fs.symlinkSync(path.join(outside, "not-yet.txt"), path.join(ws, "dangling"));
    refused("dangling");
    fs.symlinkSync("../outside/sub/new", path.join(ws, "dangling-rel"));
    refused("dangling-rel");
  });

  it("refuses a relative symlink chain that climbs out", () => {
    fs.symlinkSync("../..", path.join(ws, "src", "up"));
    refused("src/up/outside/secret.txt");
  });

  it("accepts a symlink inside pointing to another place inside", () => {
    fs.symlinkSync("src/deep", path.join(ws, "shortcut"));
    fs.symlinkSync(path.join(ws, "src", "a.ts"), path.join(ws, "a-link.ts"));
    expect(resolveInWorkspace(ws, "shortcut/new.ts")).toEqual({
      abs: path.join(ws, "shortcut", "new.ts"),
      rel: "shortcut/new.ts",
    });
    expect(resolveInWorkspace(ws, "a-link.ts").rel).toBe("a-link.ts");
  });

  it("refuses a symlink loop instead of hanging", () => {
    fs.symlinkSync("loop-b", path.join(ws, "loop-a"));
    fs.symlinkSync("loop-a", path.join(ws, "loop-b"));
    expect(refused("loop-a/x").message).toMatch(/symlink/);
  });

  it("with write: refuses .git and .ledgerloop, also when reached through a symlink", () => {
    fs.mkdirSync(path.join(ws, ".git", "hooks"), { recursive: true });
    refused(".git/config", { write: true });
    refused(".ledgerloop/state.db", { write: true });
    fs.symlinkSync(".git/hooks", path.join(ws, "hooks"));
    expect(refused("hooks/pre-commit", { write: true }).message).toContain(".git/");
    expect(resolveInWorkspace(ws, "hooks/pre-commit").rel).toBe("hooks/pre-commit");
    expect(resolveInWorkspace(ws, "src/a.ts", { write: true }).rel).toBe("src/a.ts");
  });
});

describe("assertWritable", () => {
  it("refuses .git/** (any depth) and the root .ledgerloop/**", () => {
    for (const rel of [".git", ".git/config", ".git/hooks/pre-commit", "vendor/lib/.git/HEAD", ".GIT/config"]) {
      expect(() => assertWritable(rel), rel).toThrow(PathEscapeError);
    }
    for (const rel of [".ledgerloop", ".ledgerloop/ledger.db", "./.ledgerloop/x"]) {
      expect(() => assertWritable(rel), rel).toThrow(/\.ledgerloop\/, the runtime's state directory/);
    }
  });

  it("allows ordinary paths, including look-alikes", () => {
    for (const rel of [".", "src/a.ts", ".gitignore", ".github/workflows/ci.yml", "a.git/x", "test/fixtures/.ledgerloop/x"]) {
      expect(() => assertWritable(rel), rel).not.toThrow();
    }
  });
});

describe("the runtime's configuration is not writable by tools", () => {
  it("refuses ledgerloop.config.json at the root, in any spelling, and allows it elsewhere", () => {
    for (const rel of ["ledgerloop.config.json", "./ledgerloop.config.json", "LEDGERLOOP.config.json"]) {
      expect(() => assertWritable(rel), rel).toThrow(/ledgerloop's own configuration/);
    }
    expect(() => assertWritable("docs/ledgerloop.config.json")).not.toThrow();
  });
});
