import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runEval } from "../../src/eval/eval.js";
import { loadSweBench, patchPaths } from "../../src/eval/swe-bench.js";
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
    // Beside report.md, report.html with the charts (report-html.test.ts checks their content).
    expect(r.htmlFile).toBe(path.join(out, "report.html"));
    expect(fs.readFileSync(r.htmlFile, "utf8")).toMatch(/<svg[^>]*aria-label="solved rate per task"[\s\S]*data-task="fix-sum" data-agent="ledgerloop" data-value="1"/);
    // A commit the repository does not have fails that run with a clear error, not the eval.
    fs.writeFileSync(path.join(dir, "task.json"), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(dir, "task.json"), "utf8")), commit: "0123456789abcdef" }));
    const bad = await runEval({ suiteDir: suite, model: "oracle", outDir: tmp("ll-eval-"), settings: { vectors: "off" } });
    expect(bad.results[0]).toMatchObject({ solved: false, status: "failed", error: `commit 0123456789abcdef is not in ${repoDir}` });
  }, 300_000);

  it("--format swe-bench: predictions with the diff against the base commit, without the agent's own test files", async () => {
    const dir = tmp("ll-swe-");
    const repoDir = path.join(dir, "sum-repo");
    const { base } = makeRepo(repoDir);
    // A helper module the fix imports (goes in), beside the oracle's scratch script and its own test (stay out).
    const oracle = fixOracle() as { decide: Array<{ tool_calls: Array<{ name: string; args: { path?: string; content?: string } }> }> };
    oracle.decide.splice(3, 1, { tool_calls: [{ name: "write_file", args: { path: "src/sum.js", content: 'import { first } from "./start.js";\n' + FIX.replace("let i = 1", "let i = first") } }] });
    oracle.decide.splice(3, 0, { tool_calls: [{ name: "write_file", args: { path: "src/start.js", content: "export const first = 0;\n" } }] });
    fs.writeFileSync(path.join(dir, "oracle.json"), JSON.stringify(oracle));
    const list = path.join(dir, "tasks.jsonl");
    fs.writeFileSync(list, JSON.stringify({ instance_id: "local__sum-1", repo: "sum-repo", base_commit: base, problem_statement: "sum() skips the first item.", version: "1.0" }) + "\n");
    const out = tmp("ll-eval-");
    const r = await runEval({ suiteDir: list, format: "swe-bench", model: `scripted:${path.join(dir, "oracle.json")}`, baseline: "plain", outDir: out, settings: { vectors: "off" } });
    expect(r.results.map((x) => [x.task, x.agent, x.status])).toEqual([["local__sum-1", "ledgerloop", "finished"], ["local__sum-1", "plain", "finished"]]);
    const preds = (f: string) => fs.readFileSync(f, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { instance_id: string; model_name_or_path: string; model_patch: string });
    const [ll] = preds(r.predictionFiles!.ledgerloop!);
    const [plain] = preds(r.predictionFiles!.plain!);
    expect(ll).toMatchObject({ instance_id: "local__sum-1", model_name_or_path: expect.stringMatching(/^ledgerloop:scripted:/) });
    expect(plain!.model_name_or_path).toMatch(/^plain-langgraph:scripted:/);
    expect(plain!.model_patch).toBe(ll!.model_patch);
    expect(r.results[0]!.patchExcluded).toEqual(["scratch/try.mjs", "test/sum.test.js"]);
    // The patch applies to the base commit as the official harness applies it, and makes the fix.
    const check = tmp("ll-apply-");
    git(check, "clone", "--quiet", repoDir, ".");
    git(check, "checkout", "--quiet", base);
    fs.writeFileSync(path.join(check, "p.diff"), ll!.model_patch);
    git(check, "apply", "--index", "p.diff");
    expect(git(check, "diff", "--cached", "--name-only").split("\n").sort()).toEqual(["src/start.js", "src/sum.js"]);
    expect(execFileSync("node", ["--input-type=module", "-e", 'import { sum } from "./src/sum.js"; console.log(sum([4, 5]))'], { cwd: check, encoding: "utf8" }).trim()).toBe("9");
  }, 300_000);

  it("the task list's errors name the line and the field; the patch rule keeps what the change uses", () => {
    const dir = tmp("ll-swe-");
    const f = path.join(dir, "t.jsonl");
    fs.writeFileSync(f, '{"instance_id": "a", "repo": "o/r", "base_commit": "abcdef1", "problem_statement": "x"}\n\n{"instance_id": "b", "repo": "o/r"}\n');
    expect(() => loadSweBench(f)).toThrow(`task list ${f}: line 3: "base_commit" is missing or not a non-empty string`);
    fs.writeFileSync(f, '[{"instance_id": "a", "repo": "o/r", "base_commit": "main", "problem_statement": "x"}]');
    expect(() => loadSweBench(f)).toThrow(/item 0: base_commit "main" is not a commit id/);
    const ws = tmp("ll-ws-");
    fs.mkdirSync(path.join(ws, "pkg"));
    fs.writeFileSync(path.join(ws, "pkg", "core.py"), "from pkg.util_new import helper\n");
    fs.writeFileSync(path.join(ws, "pkg", "util_new.py"), "from .deep import x\n");
    fs.writeFileSync(path.join(ws, "pkg", "deep.py"), "x = 1\n");
    fs.writeFileSync(path.join(ws, "repro.py"), "import pkg.core\n");
    const r = patchPaths(ws, { added: ["pkg/util_new.py", "pkg/deep.py", "repro.py", "tests/test_core.py", "pkg/conftest.py"], modified: ["pkg/core.py"], deleted: ["old.py"] });
    expect(r.include).toEqual(["old.py", "pkg/core.py", "pkg/deep.py", "pkg/util_new.py"]);
    expect(r.excluded).toEqual(["pkg/conftest.py", "repro.py", "tests/test_core.py"]);
  });
});
