import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PathEscapeError } from "../../src/errors.js";
import { createLexicalSearcher } from "../../src/retrieval/lexical.js";
import { createLocalSandbox } from "../../src/sandbox/executor.js";
import { gitCommitTool } from "../../src/agent/tools/git-commit.js";
import type { ToolContext } from "../../src/agent/tools/index.js";

const hasGit = spawnSync("git", ["--version"]).status === 0;
let tmp: string;
let ws: string;
let ctx: ToolContext;
const git = (...args: string[]) => spawnSync("git", args, { cwd: ws, encoding: "utf8" });

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-git-commit-")));
  ws = path.join(tmp, "repo", "pkg");
  fs.mkdirSync(ws, { recursive: true });
  ctx = {
    workspace: ws,
    sandbox: createLocalSandbox(),
    searcher: createLexicalSearcher(ws),
    commandTimeoutMs: 10_000,
    testTimeoutMs: 10_000,
    outputCapBytes: 16_384,
  };
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe.skipIf(!hasGit)(`git_commit${hasGit ? "" : " — SKIPPED: git is not installed"}`, () => {
  it("stages and commits the workspace's changes without running the repository's hooks", async () => {
    spawnSync("git", ["init", "-q"], { cwd: path.join(tmp, "repo") });
    const marker = path.join(tmp, "HOOK-RAN");
    fs.writeFileSync(path.join(tmp, "repo/.git/hooks/pre-commit"), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(tmp, "repo/.git/hooks/post-commit"), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(ws, "a.txt"), "a\n");
    // A file of the larger repository, outside the workspace: never staged.
    fs.writeFileSync(path.join(tmp, "repo/outside.txt"), "o\n");
    const r = await gitCommitTool.run({ message: "Add a" }, ctx);
    expect(r.status, r.output).toBe("ok");
    expect(r.output).toMatch(/Committed 1 file as [0-9a-f]+: pkg\/a\.txt/);
    expect(git("log", "--format=%s").stdout.trim()).toBe("Add a");
    expect(git("show", "--name-only", "--format=", "HEAD").stdout.trim()).toBe("pkg/a.txt");
    expect(fs.existsSync(marker)).toBe(false);
  });

  it("commits only the given paths, refuses paths outside the workspace, and says when there is nothing to commit", async () => {
    spawnSync("git", ["init", "-q"], { cwd: ws });
    fs.writeFileSync(path.join(ws, "a.txt"), "a\n");
    fs.writeFileSync(path.join(ws, "b.txt"), "b\n");
    const r = await gitCommitTool.run({ message: "only a", paths: ["a.txt"] }, ctx);
    expect(r.status).toBe("ok");
    expect(git("status", "--short").stdout).toContain("?? b.txt");
    await expect(gitCommitTool.run({ message: "x", paths: ["../../etc"] }, ctx)).rejects.toBeInstanceOf(PathEscapeError);
    const again = await gitCommitTool.run({ message: "again", paths: ["a.txt"] }, ctx);
    expect(again).toMatchObject({ status: "error", errorClass: "nothing_to_commit" });
  });

  it("says so when the workspace is not in a repository", async () => {
    const r = await gitCommitTool.run({ message: "x" }, ctx);
    expect(r).toMatchObject({ status: "error", errorClass: "not_a_repository" });
  });
});
