import { mkdtemp, rm, writeFile, chmod } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterEach, describe, expect, it } from "vitest";
import { classifyError, ErrorClass, type ClassifyInput } from "../../src/sandbox/error-class.js";
import { stopWords } from "../../src/sandbox/stop-words.js";
import type { TestResults } from "../../src/sandbox/test-results.js";

const failed = (input: Partial<ClassifyInput>): ClassifyInput => ({ exitCode: 1, stdout: "", stderr: "", ...input });

const failingTests: TestResults = { framework: "vitest", passed: 3, failed: 1, skipped: 0, failedTests: ["a > b"] };

describe("classifyError", () => {
  it("returns null for success", () => {
    expect(classifyError({ exitCode: 0, stdout: "ok", stderr: "" })).toBeNull();
    // Exit 0 is success even when the output mentions errors, e.g. a test runner with || true.
    expect(classifyError({ exitCode: 0, stdout: "TypeError: x", stderr: "", tests: failingTests })).toBeNull();
  });

  it("lets facts observed by the caller win over the output", () => {
    const noisy = { stdout: "SyntaxError: bad", stderr: "Cannot find module 'x'", tests: failingTests };
    expect(classifyError(failed({ ...noisy, denied: true, timedOut: true, limit: "memory" }))).toBe("policy_denied");
    // A limit that was hit explains a timeout that followed it (a fork bomb stuck at pids.max).
    expect(classifyError(failed({ ...noisy, exitCode: null, signal: "SIGKILL", timedOut: true, limit: "memory" }))).toBe("resource_limit");
    expect(classifyError(failed({ ...noisy, exitCode: null, signal: "SIGKILL", timedOut: true, limit: "timeout" }))).toBe("timeout");
    expect(classifyError(failed({ ...noisy, exitCode: null, signal: "SIGKILL", timedOut: true }))).toBe("timeout");
    expect(classifyError(failed({ ...noisy, exitCode: null, signal: "SIGKILL", limit: "memory" }))).toBe("resource_limit");
    // A limit is reported even if the process managed to exit 0 (say, its output was cut).
    expect(classifyError({ exitCode: 0, stdout: "", stderr: "", limit: "output" })).toBe("resource_limit");
  });

  it("calls a command killed by the run's own stop interrupted, unless a limit or its timeout ended it first", () => {
    const killed = { exitCode: null, signal: "SIGKILL", stdout: "", stderr: "", aborted: true };
    expect(classifyError(killed)).toBe("interrupted");
    // The stop explains the kill better than the signal would (SIGKILL alone reads as a resource limit).
    expect(classifyError({ ...killed, aborted: false })).toBe("resource_limit");
    expect(classifyError({ ...killed, timedOut: true })).toBe("timeout");
    expect(classifyError({ ...killed, limit: "memory" })).toBe("resource_limit");
  });

  it.each<[string, Partial<ClassifyInput>, ErrorClass]>([
    ["exit 127", { exitCode: 127, stderr: "sh: 1: vitest: not found" }, "command_not_found"],
    ["bash message", { stderr: "bash: line 1: pytest: command not found" }, "command_not_found"],
    ["node spawn", { stderr: "Error: spawn cargo ENOENT\n    at ChildProcess._handle.onexit" }, "command_not_found"],
    ["exit 126", { exitCode: 126, stderr: "sh: 1: ./run.sh: Permission denied" }, "permission_denied"],
    ["EACCES", { stderr: "Error: EACCES: permission denied, open '/etc/shadow'" }, "permission_denied"],
    ["node CJS", { stderr: "Error: Cannot find module 'lodash'\nRequire stack:\n- /w/a.js" }, "dependency_missing"],
    ["node ESM", { stderr: "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /w/a.mjs" }, "dependency_missing"],
    ["python", { stderr: "ModuleNotFoundError: No module named 'requests'" }, "dependency_missing"],
    ["npm ls", { stdout: "npm ERR! missing: left-pad@1.3.0, required by demo@1.0.0" }, "dependency_missing"],
    ["go", { stderr: "main.go:4:2: no required module provides package github.com/x/y" }, "dependency_missing"],
    ["TS2307 package", { stdout: "src/a.ts(1,15): error TS2307: Cannot find module 'zod' or its corresponding type declarations." }, "dependency_missing"],
    ["js", { stderr: "SyntaxError: Unexpected token '}'" }, "syntax_error"],
    ["python indent", { stderr: '  File "a.py", line 3\nIndentationError: unexpected indent' }, "syntax_error"],
    ["TS1005", { stdout: "src/a.ts:3:9 - error TS1005: ';' expected." }, "syntax_error"],
    ["TS2322", { stdout: "src/a.ts:3:9 - error TS2322: Type 'string' is not assignable to type 'number'." }, "type_error"],
    ["runtime TypeError", { stderr: "TypeError: Cannot read properties of undefined (reading 'x')" }, "type_error"],
    ["failing tests", { tests: failingTests }, "test_failure"],
    ["SIGKILL", { exitCode: null, signal: "SIGKILL" }, "resource_limit"],
    ["SIGXCPU", { exitCode: null, signal: "SIGXCPU" }, "resource_limit"],
    ["SIGKILL through a shell", { exitCode: 137 }, "resource_limit"],
    ["SIGTERM", { exitCode: null, signal: "SIGTERM" }, "unknown"],
    ["nothing recognisable", { stderr: "it broke" }, "unknown"],
  ])("classifies %s", (_name, input, expected) => {
    expect(classifyError(failed(input))).toBe(expected);
  });

  it("calls a failing run caused by a missing module dependency_missing, not test_failure", () => {
    const stderr = "Error: Cannot find package 'left-pad' imported from /w/src/a.test.ts";
    expect(classifyError(failed({ stderr, tests: failingTests }))).toBe("dependency_missing");
  });

  it("ranks a syntax error above the test failures it causes", () => {
    const stdout = 'E     File "/w/tests/test_a.py", line 2\nE       def f(:\nE   SyntaxError: invalid syntax';
    expect(classifyError(failed({ stdout, tests: { ...failingTests, framework: "pytest" } }))).toBe("syntax_error");
  });

  it("ranks failing tests above the runtime TypeError they print", () => {
    const stdout = " FAIL  src/a.test.ts > parses\nTypeError: Cannot read properties of undefined (reading 'x')";
    expect(classifyError(failed({ stdout, tests: failingTests }))).toBe("test_failure");
  });

  it("does not call a missing local file a missing dependency", () => {
    const stderr = "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/w/src/utils.js' imported from /w/src/a.js";
    expect(classifyError(failed({ stderr }))).toBe("unknown");
    const tsc = "src/a.ts(1,15): error TS2307: Cannot find module './utils.js' or its corresponding type declarations.";
    expect(classifyError(failed({ stdout: tsc }))).toBe("type_error");
  });

  it("parses the output for test results when none are given, and honours an explicit null", () => {
    const stdout = "      Tests  1 failed | 2 passed (3)\n";
    expect(classifyError(failed({ stdout }))).toBe("test_failure");
    expect(classifyError(failed({ stdout, tests: null }))).toBe("unknown");
  });

  it("sees through ANSI colour codes", () => {
    const stdout = "src/a.ts:1:7 - \u001b[91merror\u001b[0m\u001b[90m TS2322: \u001b[0mType 'string' is not assignable";
    expect(classifyError(failed({ stdout }))).toBe("type_error");
  });
});

describe("classifyError on real processes", () => {
  const tempDirs: string[] = [];
  afterEach(async () => {
    await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  async function runIn(files: Record<string, string>, file: string, args: string[]) {
    const dir = await mkdtemp(path.join(os.tmpdir(), "ledgerloop-error-class-"));
    tempDirs.push(dir);
    for (const [name, content] of Object.entries(files)) await writeFile(path.join(dir, name), content);
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    delete env.NODE_OPTIONS;
    const result = await execa(file, args, { cwd: dir, reject: false, env, extendEnv: false, timeout: 60_000 });
    return {
      dir,
      input: { exitCode: result.exitCode ?? null, signal: result.signal ?? null, stdout: result.stdout, stderr: result.stderr },
    };
  }

  it("node --test with one file missing a package and one failing test", async () => {
    const { input } = await runIn(
      {
        "a.test.mjs": `import { test } from "node:test";\ntest("fails", () => { throw new Error("no"); });\n`,
        "b.test.mjs": `import "no-such-package-ledgerloop";\n`,
      },
      process.execPath,
      ["--test", "a.test.mjs", "b.test.mjs"],
    );
    expect(classifyError(input)).toBe("dependency_missing");
  });

  it("node with a syntax error", async () => {
    const { input } = await runIn({ "a.mjs": "const x = ;\n" }, process.execPath, ["a.mjs"]);
    expect(classifyError(input)).toBe("syntax_error");
  });

  it("python3 with a missing module", async () => {
    const { input } = await runIn({ "a.py": "import no_such_module_ledgerloop\n" }, "python3", ["a.py"]);
    expect(classifyError(input)).toBe("dependency_missing");
  });

  it("sh with an unknown command and a non-executable script", async () => {
    const missing = await runIn({}, "sh", ["-c", "no-such-command-ledgerloop --version"]);
    expect(missing.input.exitCode).toBe(127);
    expect(classifyError(missing.input)).toBe("command_not_found");

    const { dir } = missing;
    await writeFile(path.join(dir, "run.sh"), "#!/bin/sh\necho hi\n");
    await chmod(path.join(dir, "run.sh"), 0o644);
    const result = await execa("sh", ["-c", "./run.sh"], { cwd: dir, reject: false });
    // Even root cannot execute a file with no x bit set, so this holds in any sandbox user.
    expect(result.exitCode).toBe(126);
    expect(classifyError({ exitCode: result.exitCode ?? null, stdout: result.stdout, stderr: result.stderr })).toBe("permission_denied");
  });

  it("a process killed by SIGKILL", async () => {
    const { input } = await runIn({}, process.execPath, ["-e", "process.kill(process.pid, 'SIGKILL')"]);
    expect(input.signal).toBe("SIGKILL");
    // Without evidence, the OOM killer is the likely sender.
    expect(classifyError(input)).toBe("resource_limit");
    // With the cgroups' word that no limit was hit (the executor's limitsRuledOut), it is not a limit.
    expect(classifyError({ ...input, limitsRuledOut: true })).toBe("unknown");
    expect(classifyError({ ...input, signal: null, exitCode: 137, limitsRuledOut: true })).toBe("unknown");
    expect(classifyError({ ...input, limitsRuledOut: true, limit: "memory" })).toBe("resource_limit");
  });
});

describe("stopWords", () => {
  it("names what stopped a command where its error class does not already say it", () => {
    expect(stopWords("limit", "memory")).toBe("memory limit");
    expect(stopWords("limit", "file_size")).toBe("file size limit");
    // "timeout" is the error class of a timeout already.
    expect(stopWords("limit", "timeout")).toBeNull();
    expect(stopWords("run_stopped", null)).toBe("the run was stopped");
    expect(stopWords("session_ended", null)).toBe("the sandbox session ended");
    expect(stopWords("outside", null)).toBe("killed from outside the sandbox");
    // Ended by itself, or recorded before feedback said what stopped it.
    expect(stopWords(null, null)).toBeNull();
    expect(stopWords(undefined, undefined)).toBeNull();
  });
});
