import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { afterEach, describe, expect, it } from "vitest";
import { parseTestOutput, stripAnsi, TestResults } from "../../src/sandbox/test-results.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const fixtures = path.join(repoRoot, "test/fixtures/test-output");
const vitestBin = path.join(repoRoot, "node_modules/.bin/vitest");

const tempDirs: string[] = [];
afterEach(async () => {
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function project(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "ledgerloop-test-results-"));
  tempDirs.push(dir);
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  return dir;
}

// Variables set by this vitest run would make a child runner think it is a worker of ours, and
// the caller's colour settings would make the ANSI assertions depend on who runs the suite.
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(VITEST|NODE_TEST_CONTEXT$|NODE_OPTIONS$|TEST$|NO_COLOR$|FORCE_COLOR$)/.test(key)) env[key] = value;
  }
  return { ...env, ...extra };
}

async function run(file: string, args: string[], cwd: string, env: Record<string, string> = {}) {
  const result = await execa(file, args, { cwd, reject: false, env: childEnv(env), extendEnv: false, timeout: 60_000 });
  return { exitCode: result.exitCode, output: `${result.stdout}\n${result.stderr}` };
}

function parsed(output: string): TestResults {
  const results = parseTestOutput(output);
  expect(results, output).not.toBeNull();
  // The result must satisfy its own schema, whatever the input.
  return TestResults.parse(results);
}

function hasPytest(): boolean {
  try {
    execFileSync("python3", ["-m", "pytest", "--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

const NODE_TESTS = {
  "math.test.mjs": `
import { test, describe } from "node:test";
import assert from "node:assert";
test("adds numbers", () => { assert.strictEqual(1 + 1, 2); });
test("fails on purpose", () => { assert.strictEqual(1 + 1, 3); });
test("skipped one", { skip: "not now" }, () => {});
test("todo one", { todo: true }, () => {});
describe("math suite", () => {
  test("nested fails", () => { throw new Error("boom"); });
  test("nested passes", () => {});
});
test("parent # hash", async (t) => {
  await t.test("child bad", () => { throw new Error("x"); });
});
`,
};

describe("parseTestOutput with real node --test output", () => {
  // pass: adds numbers, nested passes; fail: fails on purpose, nested fails, child bad and its
  // parent; skipped: skipped one + todo one.
  const expected = { framework: "node-test", passed: 2, failed: 4, skipped: 2 };
  const expectedNames = ["fails on purpose", "nested fails", "child bad"];

  it("reads the TAP reporter", async () => {
    const dir = await project(NODE_TESTS);
    const { exitCode, output } = await run(process.execPath, ["--test", "--test-reporter=tap", "math.test.mjs"], dir);
    expect(exitCode).toBe(1);
    expect(output).toContain("# pass 2");
    const results = parsed(output);
    expect(results).toMatchObject(expected);
    // Suites and parents of failing subtests are not named: their subtest already is.
    expect(results.failedTests).toEqual(expectedNames);
  });

  it("reads the spec reporter, coloured", async () => {
    const dir = await project(NODE_TESTS);
    const { output } = await run(process.execPath, ["--test", "--test-reporter=spec", "math.test.mjs"], dir, { FORCE_COLOR: "1" });
    expect(output).toContain("\u001b[");
    expect(output).toContain("failing tests:");
    const results = parsed(output);
    expect(results).toMatchObject(expected);
    expect(results.failedTests).toEqual(expectedNames);
  });

  it("reads spec ✖ lines when the failing-tests list is cut off", async () => {
    const dir = await project(NODE_TESTS);
    const { output } = await run(process.execPath, ["--test", "--test-reporter=spec", "math.test.mjs"], dir);
    const truncated = output.slice(0, output.indexOf("✖ failing tests:"));
    const results = parsed(truncated);
    expect(results).toMatchObject(expected);
    // Without node's own list, suites and parent tests are recognised by their ▶ opening line.
    expect(results.failedTests).toEqual(expectedNames);
  });

  it("counts a timed-out test (reported as cancelled) and a file that crashed on import", async () => {
    const dir = await project({
      "slow.test.mjs": `import { test } from "node:test";
test("slow one", { timeout: 20 }, async () => { await new Promise((r) => setTimeout(r, 300)); });
test("quick one", () => {});
`,
      "broken.test.mjs": `import "no-such-package-ledgerloop";\n`,
    });
    for (const reporter of ["tap", "spec"]) {
      const { output } = await run(process.execPath, ["--test", `--test-reporter=${reporter}`, "slow.test.mjs", "broken.test.mjs"], dir);
      const results = parsed(output);
      expect(results, reporter).toMatchObject({ framework: "node-test", passed: 1, failed: 2, skipped: 0 });
      expect(results.failedTests, reporter).toContain("slow one");
      expect(
        results.failedTests.some((name) => name.endsWith("broken.test.mjs")),
        reporter,
      ).toBe(true);
    }
  });
});

describe.skipIf(!hasPytest())("parseTestOutput with real pytest output", () => {
  const PYTEST_FILE = `import pytest

def test_adds():
    assert 1 + 1 == 2

def test_fails():
    assert 1 + 1 == 3

@pytest.mark.skip(reason="not now")
def test_skipped():
    pass

@pytest.mark.xfail
def test_xfail():
    assert False

class TestGroup:
    @pytest.mark.parametrize("n", [1, 2])
    def test_param(self, n):
        assert n == 1

@pytest.fixture
def broken():
    raise RuntimeError("fixture boom")

def test_error(broken):
    pass
`;
  // passed: test_adds, test_param[1]; failed: test_fails, test_param[2] + 1 error;
  // skipped: test_skipped + 1 xfailed.
  const expected = { framework: "pytest", passed: 2, failed: 3, skipped: 2 };
  const expectedNames = ["tests/test_x.py::test_fails", "tests/test_x.py::TestGroup::test_param[2]", "tests/test_x.py::test_error"];

  it("reads -q output, whose summary has no ==== border", async () => {
    const dir = await project({ "tests/test_x.py": PYTEST_FILE });
    const { exitCode, output } = await run("python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider"], dir);
    expect(exitCode).toBe(1);
    const results = parsed(output);
    expect(results).toMatchObject(expected);
    expect(results.failedTests).toEqual(expectedNames);
  });

  it("reads default coloured output", async () => {
    const dir = await project({ "tests/test_x.py": PYTEST_FILE });
    const { output } = await run("python3", ["-m", "pytest", "--color=yes", "-p", "no:cacheprovider"], dir);
    expect(output).toContain("\u001b[");
    const results = parsed(output);
    expect(results).toMatchObject(expected);
    expect(results.failedTests).toEqual(expectedNames);
  });

  it("counts a collection error as a failure", async () => {
    const dir = await project({
      "tests/test_y.py": "import no_such_module_ledgerloop\n\ndef test_a():\n    pass\n",
      "tests/test_z.py": "def test_ok():\n    pass\n",
    });
    const { exitCode, output } = await run("python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider"], dir);
    expect(exitCode).toBe(2);
    const results = parsed(output);
    expect(results).toMatchObject({ framework: "pytest", passed: 0, failed: 1, skipped: 0 });
    expect(results.failedTests).toEqual(["tests/test_y.py"]);
  });

  it("recognises a run that collected nothing", async () => {
    const dir = await project({ "README.md": "nothing here\n" });
    const { exitCode, output } = await run("python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider"], dir);
    expect(exitCode).toBe(5);
    expect(parsed(output)).toEqual({ framework: "pytest", passed: 0, failed: 0, skipped: 0, failedTests: [] });
  });
});

describe.skipIf(!existsSync(vitestBin))("parseTestOutput with real vitest output", () => {
  // globals: true lets the test files run without resolving the vitest package from the temp dir.
  const CONFIG = `export default { test: { globals: true, include: ["**/*.test.mjs"] } };\n`;

  it("reads counts, FAIL lines and a file that could not be imported", async () => {
    const dir = await project({
      "vitest.config.mjs": CONFIG,
      "math.test.mjs": `describe("math", () => {
  it("adds", () => { expect(1 + 1).toBe(2); });
  it("fails on purpose", () => { expect(1 + 1).toBe(3); });
  it.skip("skipped one", () => {});
  it.todo("todo one");
  describe("inner", () => { it("deep fail", () => { throw new Error("boom"); }); });
});
`,
      "other.test.mjs": `it("top passes", () => {});\n`,
      "broken.test.mjs": `import "no-such-package-ledgerloop";\nit("never runs", () => {});\n`,
    });
    const { exitCode, output } = await run(vitestBin, ["run"], dir, { FORCE_COLOR: "1" });
    expect(exitCode).toBe(1);
    expect(output).toContain("\u001b[");
    const results = parsed(output);
    // 2 failing tests + 1 failed suite (the file that could not be imported).
    expect(results).toMatchObject({ framework: "vitest", passed: 2, failed: 3, skipped: 2 });
    expect(results.failedTests).toEqual(["broken.test.mjs", "math.test.mjs > math > fails on purpose", "math.test.mjs > math > inner > deep fail"]);
  }, 60_000);

  it("reads a passing run", async () => {
    const dir = await project({ "vitest.config.mjs": CONFIG, "ok.test.mjs": `it("passes", () => {});\n` });
    const { exitCode, output } = await run(vitestBin, ["run"], dir);
    expect(exitCode).toBe(0);
    expect(parsed(output)).toEqual({ framework: "vitest", passed: 1, failed: 0, skipped: 0, failedTests: [] });
  }, 60_000);
});

describe("parseTestOutput with recorded samples", () => {
  const fixture = (name: string) => readFile(path.join(fixtures, name), "utf8");

  it("reads vitest captured from a terminal, ignoring its redrawn live summary", async () => {
    const output = await fixture("vitest-tty.txt");
    // The live block printed "Tests 0 passed (0)" before being erased with cursor moves.
    expect(stripAnsi(output).match(/^\s*Tests\b/gm)?.length).toBeGreaterThan(1);
    expect(parsed(output)).toEqual({
      framework: "vitest",
      passed: 2,
      failed: 2,
      skipped: 2,
      failedTests: ["math.test.mjs > math > fails on purpose", "math.test.mjs > math > inner > deep fail"],
    });
  });

  it("reads jest, counting a suite that failed to run", async () => {
    const results = parsed(await fixture("jest.txt"));
    expect(results).toEqual({
      framework: "jest",
      passed: 3,
      failed: 3,
      skipped: 2,
      failedTests: ["math › fails on purpose", "math › inner › deep fail", "src/broken.test.js"],
    });
  });

  it("reads go test -v, subtests included", async () => {
    const results = parsed(await fixture("go-verbose.txt"));
    expect(results).toEqual({
      framework: "go",
      passed: 3,
      failed: 3,
      skipped: 1,
      failedTests: ["TestFailsOnPurpose", "TestTable", "TestTable/negative"],
    });
  });

  it("reads quiet go test, naming packages that failed without a failing test", async () => {
    const results = parsed(await fixture("go-quiet.txt"));
    expect(results).toEqual({
      framework: "go",
      passed: 0,
      failed: 3,
      skipped: 0,
      failedTests: ["TestFailsOnPurpose", "example.com/calc/broken [build failed]", "example.com/calc/slow"],
    });
  });

  it("sums cargo's per-binary result lines", async () => {
    const results = parsed(await fixture("cargo.txt"));
    expect(results).toEqual({
      framework: "cargo",
      passed: 3,
      failed: 2,
      skipped: 1,
      failedTests: ["tests::fails_on_purpose", "integration_fails"],
    });
  });
});

describe("parseTestOutput edge cases", () => {
  it("returns null without a summary", () => {
    expect(parseTestOutput("")).toBeNull();
    expect(parseTestOutput("Compiling...\nerror: something broke\n")).toBeNull();
    // unittest's summary is not pytest's.
    expect(parseTestOutput("Ran 3 tests in 0.001s\n\nOK\n")).toBeNull();
    // Test lines alone, cut off before the summary, are not enough.
    expect(parseTestOutput("test a::b ... FAILED\n")).toBeNull();
  });

  it("prefers the runner with a summary when npm wraps it", () => {
    const output = [
      "> demo@1.0.0 test",
      "> vitest run",
      "",
      " FAIL  src/a.test.ts > adds",
      "AssertionError: expected 2 to be 3",
      "",
      " Test Files  1 failed (1)",
      "      Tests  1 failed | 4 passed (5)",
      "npm error Lifecycle script `test` failed with error:",
      "npm error code 1",
    ].join("\n");
    expect(parseTestOutput(output)).toEqual({
      framework: "vitest",
      passed: 4,
      failed: 1,
      skipped: 0,
      failedTests: ["src/a.test.ts > adds"],
    });
  });

  it("prefers the runner that failed when two ran", () => {
    const output =
      "5 passed in 0.10s\n\n running 1 test\ntest x ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
    expect(parseTestOutput(output)).toMatchObject({ framework: "cargo", failed: 1, failedTests: ["x"] });
    const reversed =
      "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\nFAILED t.py::test_a - boom\n1 failed in 0.10s\n";
    expect(parseTestOutput(reversed)).toMatchObject({ framework: "pytest", failed: 1, failedTests: ["t.py::test_a"] });
  });

  it("deduplicates failing names and caps them at 50", () => {
    const lines: string[] = [];
    for (let i = 0; i < 80; i++) lines.push(`test case_${i} ... FAILED`, `test case_${i} ... FAILED`);
    lines.push("test result: FAILED. 0 passed; 80 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s");
    const results = parsed(lines.join("\r\n"));
    expect(results.failed).toBe(80);
    expect(results.failedTests).toHaveLength(50);
    expect(results.failedTests[0]).toBe("case_0");
    expect(results.failedTests[49]).toBe("case_49");
  });

  it("strips should-panic suffixes from cargo names", () => {
    const output =
      "test tests::p - should panic ... FAILED\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
    expect(parseTestOutput(output)?.failedTests).toEqual(["tests::p"]);
  });

  it("reads a pytest summary with a long duration and warnings", () => {
    const output = "======= 1 failed, 10 passed, 1 deselected, 2 warnings in 65.12s (0:01:05) =======\n";
    expect(parseTestOutput(output)).toEqual({ framework: "pytest", passed: 10, failed: 1, skipped: 0, failedTests: [] });
  });
});
