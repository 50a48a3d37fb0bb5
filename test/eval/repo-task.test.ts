import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runEval } from "../../src/eval/eval.js";
import { loadSuite } from "../../src/eval/task.js";

// Tasks whose workspace is a commit of a git repository (task.json `repo` + `commit`): a real
// repository made here, cloned by the harness through the host-git module, a real run by the
// oracle. Slow tier (test/tiers.ts).

const made: string[] = [];
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});
const tmp = (prefix: string) => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(d);
  return d;
};

/** The test's own git (trusted data, made here). */
function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", ...args], { cwd, encoding: "utf8" }).trim();
}

/** A repository with a bug at its first commit and an unrelated second commit; returns both ids. */
function makeRepo(dir: string): { base: string; later: string } {
  fs.mkdirSync(path.join(dir, "src"), { recursive: true });
  git(dir, "init", "--quiet", "-b", "main");
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "sum", type: "module", scripts: { test: "node --test test/" } }));
  fs.writeFileSync(path.join(dir, "src", "sum.js"), "export function sum(xs) {\n  let t = 0;\n  for (let i = 1; i < xs.length; i++) t += xs[i];\n  return t;\n}\n");
  fs.writeFileSync(path.join(dir, ".gitignore"), "node_modules/\n");
  git(dir, "add", "-A");
  git(dir, "commit", "--quiet", "-m", "sum");
  const base = git(dir, "rev-parse", "HEAD");
  fs.writeFileSync(path.join(dir, "LATER.md"), "a later commit\n");
  git(dir, "add", "-A");
  git(dir, "commit", "--quiet", "-m", "later");
  return { base, later: git(dir, "rev-parse", "HEAD") };
}

const FIX = "export function sum(xs) {\n  let t = 0;\n  for (let i = 0; i < xs.length; i++) t += xs[i];\n  return t;\n}\n";

/** A trajectory that fixes the bug, adds a regression test and a scratch script of its own. */
function fixOracle(): unknown {
  const call = (name: string, args: unknown) => ({ content: "", tool_calls: [{ name, args }] });
  return {
    plan: [call("update_plan", { subtasks: [{ id: "fix", description: "Fix sum", status: "in_progress" }] })],
    decide: [
      call("read_file", { path: "src/sum.js" }),
      call("write_file", { path: "scratch/try.mjs", content: 'import { sum } from "../src/sum.js";\nconsole.log(sum([1, 2, 3]));\n' }),
      call("run_command", { command: "node scratch/try.mjs" }),
      call("write_file", { path: "src/sum.js", content: FIX }),
      call("write_file", { path: "test/sum.test.js", content: 'import test from "node:test";\nimport assert from "node:assert";\nimport { sum } from "../src/sum.js";\ntest("sum", () => assert.equal(sum([1, 2, 3]), 6));\n' }),
      call("run_tests", {}),
      call("finish", { summary: "sum starts at the first item" }),
    ],
  };
}

describe("eval tasks from a git repository and commit", () => {
  it("validates repo and commit in task.json", () => {
    const suite = tmp("ll-suite-");
    const dir = path.join(suite, "t1");
    fs.mkdirSync(path.join(dir, "hidden"), { recursive: true });
    fs.writeFileSync(path.join(dir, "hidden", "x.test.js"), "//\n");
    const write = (t: object) => fs.writeFileSync(path.join(dir, "task.json"), JSON.stringify({ id: "t1", goal: "g", language: "javascript", hiddenTest: "node --test", ...t }));
    write({ repo: "../repo" });
    expect(() => loadSuite(suite)).toThrow(/commit: repo and commit go together/);
    write({ repo: "../repo", commit: "main" });
    expect(() => loadSuite(suite)).toThrow(/commit: a commit id \(7 to 40 hex digits\)/);
    write({});
    expect(() => loadSuite(suite)).toThrow(/the workspace\/ folder is missing \(or name a git repository and commit/);
    write({ repo: "../repo", commit: "abcdef0" });
    expect(loadSuite(suite)[0]).toMatchObject({ workspaceDir: null, source: { repo: path.join(suite, "repo"), commit: "abcdef0" } });
    fs.mkdirSync(path.join(dir, "workspace"));
    expect(() => loadSuite(suite)).toThrow(/either a workspace\/ folder or repo and commit/);
  });

  it("the agent starts from the commit's files, without the repository; the oracle solves it", async () => {
    const suite = tmp("ll-suite-");
    const repoDir = tmp("ll-repo-");
    const { base } = makeRepo(repoDir);
    const dir = path.join(suite, "fix-sum");
    fs.mkdirSync(path.join(dir, "hidden", "hidden_tests"), { recursive: true });
    fs.writeFileSync(path.join(dir, "hidden", "hidden_tests", "sum.hidden.test.js"), 'import test from "node:test";\nimport assert from "node:assert";\nimport { sum } from "../src/sum.js";\ntest("sum of one", () => assert.equal(sum([4]), 4));\n');
    fs.writeFileSync(path.join(dir, "oracle.json"), JSON.stringify(fixOracle()));
    fs.writeFileSync(
      path.join(dir, "task.json"),
      JSON.stringify({ id: "fix-sum", goal: "sum() skips the first item; fix it and add a test.", language: "javascript", hiddenTest: "node --test hidden_tests/", repo: path.relative(dir, repoDir), commit: base.slice(0, 12) }),
    );
    const out = tmp("ll-eval-");
    const r = await runEval({ suiteDir: suite, model: "oracle", outDir: out, settings: { vectors: "off" } });
    expect(r.results.map((x) => [x.task, x.solved, x.status, x.faults])).toEqual([["fix-sum", true, "finished", undefined]]);
    const ws = path.join(out, "work", "fix-sum.ledgerloop.1", "workspace");
    // The base commit's files, not the later commit's; no .git for the agent to touch.
    expect(fs.existsSync(path.join(ws, "LATER.md"))).toBe(false);
    expect(fs.existsSync(path.join(ws, ".git"))).toBe(false);
    expect(fs.readFileSync(path.join(ws, "src", "sum.js"), "utf8")).toBe(FIX);
    // A commit the repository does not have fails that run with a clear error, not the eval.
    fs.writeFileSync(path.join(dir, "task.json"), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(dir, "task.json"), "utf8")), commit: "0123456789abcdef" }));
    const bad = await runEval({ suiteDir: suite, model: "oracle", outDir: tmp("ll-eval-"), settings: { vectors: "off" } });
    expect(bad.results[0]).toMatchObject({ solved: false, status: "failed", error: `commit 0123456789abcdef is not in ${repoDir}` });
  }, 300_000);
});
