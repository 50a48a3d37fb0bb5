import { z } from "zod";

export const TestFramework = z.enum(["node-test", "vitest", "jest", "pytest", "go", "cargo"]);
export type TestFramework = z.infer<typeof TestFramework>;

export const TestResults = z.object({
  framework: TestFramework,
  passed: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
  failedTests: z.array(z.string()),
});
export type TestResults = z.infer<typeof TestResults>;

// The names go back to the model; past a few dozen they stop helping and only cost context.
const MAX_FAILED_NAMES = 50;

// CSI sequences (colours, cursor moves) and OSC sequences (terminal hyperlinks, window titles).
const ANSI_PATTERN = /\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b[@-Z\\-_]/g;

/** Removes ANSI colour and cursor escape sequences from terminal output. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI_PATTERN, "");
}

interface Candidate {
  results: TestResults;
  // Line index of the last summary line, to break ties between frameworks.
  lastSummaryAt: number;
}

type Parser = (lines: readonly string[]) => Candidate | null;

/** Reads counts and failing test names from a test runner's output; null without a known summary. */
export function parseTestOutput(output: string): TestResults | null {
  const lines = toLines(output);
  const candidates: Candidate[] = [];
  for (const parse of PARSERS) {
    const candidate = parse(lines);
    if (candidate) candidates.push(candidate);
  }
  if (candidates.length === 0) return null;
  // Two runners in one output (say `pytest && vitest run`): the one that failed is what the
  // model has to act on; otherwise the later summary is usually the outer, final one.
  candidates.sort((a, b) => Number(b.results.failed > 0) - Number(a.results.failed > 0) || b.lastSummaryAt - a.lastSummaryAt);
  const best = candidates[0]!.results;
  return { ...best, failedTests: uniqueCapped(best.failedTests) };
}

function toLines(output: string): string[] {
  // A bare \r is a progress redraw: only the text after the last one was left on screen.
  return stripAnsi(output)
    .replace(/\r\n/g, "\n")
    .split("\n")
    .map((line) => line.slice(line.lastIndexOf("\r") + 1));
}

function uniqueCapped(names: readonly string[]): string[] {
  return [...new Set(names.filter((name) => name.length > 0))].slice(0, MAX_FAILED_NAMES);
}

function int(text: string | undefined): number {
  return text === undefined ? 0 : Number.parseInt(text, 10);
}

// --- node:test -------------------------------------------------------------------------------

const NODE_SUMMARY = /^(?:#|ℹ) (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) (\d+(?:\.\d+)?)\s*$/;
const TAP_NOT_OK = /^\s*not ok \d+ - ((?:\\.|[^\\#])*)(?:#\s*(\w+).*)?$/;
const SPEC_RESULT = /^(\s*)([✖✔﹣▶]) (.+) \(\d+(?:\.\d+)?m?s\)(?:\s*#\s*(.*))?$/;
const SPEC_SUITE_START = /^\s*▶ (.+?)\s*$/;

const parseNodeTest: Parser = (lines) => {
  const totals = new Map<string, number>();
  let lastSummaryAt = -1;
  lines.forEach((line, index) => {
    const match = NODE_SUMMARY.exec(line);
    if (!match) return;
    // Summed rather than overwritten so `node --test a && node --test b` counts both runs.
    totals.set(match[1]!, (totals.get(match[1]!) ?? 0) + Number(match[2]));
    lastSummaryAt = index;
  });
  if (!totals.has("tests") || !totals.has("pass")) return null;
  const count = (key: string) => totals.get(key) ?? 0;
  return {
    lastSummaryAt,
    results: {
      framework: "node-test",
      passed: count("pass"),
      // A test that times out is reported as cancelled, not failed, but it still fails the run.
      failed: count("fail") + count("cancelled"),
      skipped: count("skipped") + count("todo"),
      failedTests: [...tapFailures(lines), ...specFailures(lines)],
    },
  };
};

function tapFailures(lines: readonly string[]): string[] {
  const names: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const match = TAP_NOT_OK.exec(lines[i]!);
    if (!match) continue;
    // `not ok ... # TODO` is an expected failure that node does not count as one.
    if (match[2] && /^todo$/i.test(match[2])) continue;
    if (describesParentOnly(lines, i + 1)) continue;
    names.push(match[1]!.trim().replace(/\\(.)/g, "$1"));
  }
  return names;
}

// Suites and tests whose only fault is a failing subtest repeat a failure already named by the
// subtest; node's own "failing tests" list leaves them out too.
function describesParentOnly(lines: readonly string[], from: number): boolean {
  if (lines[from]?.trim() !== "---") return false;
  for (let i = from + 1; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "...") return false;
    if (line === "type: 'suite'" || line === "failureType: 'subtestsFailed'") return true;
  }
  return false;
}

function specFailures(lines: readonly string[]): string[] {
  let sectionStart = -1;
  lines.forEach((line, index) => {
    if (/^✖ failing tests:\s*$/.test(line)) sectionStart = index;
  });
  const names: string[] = [];
  if (sectionStart >= 0) {
    for (const line of lines.slice(sectionStart + 1)) {
      const match = SPEC_RESULT.exec(line);
      if (match && match[1] === "" && match[2] === "✖" && !isTodo(match[4])) names.push(match[3]!);
    }
    return names;
  }
  // Older or truncated output has no closing list: take every ✖ line that is not a suite.
  const suites = new Set<string>();
  for (const line of lines) {
    const match = SPEC_SUITE_START.exec(line);
    if (match) suites.add(match[1]!);
  }
  for (const line of lines) {
    const match = SPEC_RESULT.exec(line);
    if (match && match[2] === "✖" && !suites.has(match[3]!) && !isTodo(match[4])) names.push(match[3]!);
  }
  return names;
}

function isTodo(comment: string | undefined): boolean {
  return comment !== undefined && /^todo\b/i.test(comment);
}

// --- vitest ----------------------------------------------------------------------------------

const VITEST_TESTS = /^\s*Tests +(no tests|(?:\d+ (?:failed|passed|skipped|todo)(?: \| )?)+\s*\(\d+\))\s*$/;
const VITEST_FILES = /^\s*Test Files +\d+ (?:failed|passed|skipped)/;
const VITEST_FAILED_SUITES = /Failed Suites (\d+)/;
const VITEST_FAIL = /^\s*FAIL\s+(.+?)\s*$/;
const VITEST_CROSS = /^\s*[×✗✕] (.+?)(?: \d+(?:\.\d+)?m?s)?\s*$/;

const parseVitest: Parser = (lines) => {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let failedSuites = 0;
  let lastSummaryAt = -1;
  const failNames: string[] = [];
  const crossNames: string[] = [];
  lines.forEach((line, index) => {
    const tests = VITEST_TESTS.exec(line);
    if (tests) {
      lastSummaryAt = index;
      // The last summary wins: a terminal capture also holds the live status block, redrawn
      // with cursor moves that stripping the escapes turns back into stale summary lines.
      ({ passed, failed, skipped } = countOutcomes(tests[1]!));
      return;
    }
    if (VITEST_FILES.test(line)) {
      lastSummaryAt = index;
      return;
    }
    const suites = VITEST_FAILED_SUITES.exec(line);
    if (suites) failedSuites = int(suites[1]);
    const fail = VITEST_FAIL.exec(line);
    if (fail) failNames.push(fail[1]!.replace(/\s+\[ .+ \]$/, ""));
    const cross = VITEST_CROSS.exec(line);
    if (cross) crossNames.push(cross[1]!);
  });
  if (lastSummaryAt < 0) return null;
  return {
    lastSummaryAt,
    results: {
      framework: "vitest",
      passed,
      // A file that cannot be imported, or a failing beforeAll, fails the run without failing a
      // test; counting it keeps `failed > 0` truthful, as node:test does for a crashed file.
      failed: failed + failedSuites,
      skipped,
      // FAIL lines carry the file and suite path; × lines only the bare title.
      failedTests: failNames.length > 0 ? failNames : crossNames,
    },
  };
};

// Todo tests count as skipped: they did not run, and nothing about them needs fixing.
function countOutcomes(summary: string): { passed: number; failed: number; skipped: number } {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const [, n, kind] of summary.matchAll(/(\d+) (failed|passed|skipped|todo)\b/g)) {
    if (kind === "passed") counts.passed += int(n);
    else if (kind === "failed") counts.failed += int(n);
    else counts.skipped += int(n);
  }
  return counts;
}

// --- jest ------------------------------------------------------------------------------------

const JEST_TESTS = /^\s*Tests:\s+((?:\d+ [a-z]+, )*\d+ total)\s*$/;
const JEST_FILE_FAIL = /^\s*FAIL\s+(\S.*?)\s*$/;
const JEST_BULLET = /^\s*● (.+?)\s*$/;
const JEST_NOT_A_TEST = /^(?:Console|Test suite failed to run|.*Warning:?)$/;

const parseJest: Parser = (lines) => {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let lastSummaryAt = -1;
  let currentFile: string | null = null;
  const brokenFiles = new Set<string>();
  const names: string[] = [];
  lines.forEach((line, index) => {
    const tests = JEST_TESTS.exec(line);
    if (tests) {
      lastSummaryAt = index;
      // Last wins, as for vitest: jest redraws its running totals on a terminal.
      ({ passed, failed, skipped } = countOutcomes(tests[1]!));
      return;
    }
    const file = JEST_FILE_FAIL.exec(line);
    if (file) {
      currentFile = file[1]!;
      return;
    }
    const bullet = JEST_BULLET.exec(line);
    if (!bullet) return;
    if (bullet[1] === "Test suite failed to run") {
      if (currentFile) brokenFiles.add(currentFile);
    } else if (!JEST_NOT_A_TEST.test(bullet[1]!)) {
      names.push(bullet[1]!);
    }
  });
  if (lastSummaryAt < 0) return null;
  return {
    lastSummaryAt,
    results: {
      framework: "jest",
      passed,
      // Same reasoning as vitest's failed suites: a file that never ran still failed the run.
      failed: failed + brokenFiles.size,
      skipped,
      failedTests: [...names, ...brokenFiles],
    },
  };
};

// --- pytest ----------------------------------------------------------------------------------

const PYTEST_SUMMARY = /^=*\s*(.+?) in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?\s*=*$/;
const PYTEST_PART = /^(\d+) ([a-z][a-z ]*)$/;
const PYTEST_KINDS = new Set(["failed", "passed", "skipped", "xfailed", "xpassed", "error", "errors", "deselected"]);
const PYTEST_SHORT = /^(?:FAILED|ERROR) (.+?)(?: - .*)?\s*$/;

const parsePytest: Parser = (lines) => {
  const counts = new Map<string, number>();
  let lastSummaryAt = -1;
  const names: string[] = [];
  lines.forEach((line, index) => {
    const summary = PYTEST_SUMMARY.exec(line);
    if (summary) {
      const body = summary[1]!;
      const parts = body.split(", ").map((part) => PYTEST_PART.exec(part));
      // Every part must look like "N word" and one must be a pytest outcome; this keeps
      // unittest's "Ran 3 tests in 0.1s" and stray prose from matching.
      if (body === "no tests ran" || (parts.every(Boolean) && parts.some((p) => PYTEST_KINDS.has(p![2]!)))) {
        lastSummaryAt = index;
        for (const part of parts) {
          if (part) counts.set(part[2]!, (counts.get(part[2]!) ?? 0) + int(part[1]));
        }
        return;
      }
    }
    const short = PYTEST_SHORT.exec(line);
    if (short) names.push(short[1]!);
  });
  if (lastSummaryAt < 0) return null;
  const count = (key: string) => counts.get(key) ?? 0;
  return {
    lastSummaryAt,
    results: {
      framework: "pytest",
      // xpassed did pass and xfailed failed as expected; neither asks the model for a fix.
      passed: count("passed") + count("xpassed"),
      failed: count("failed") + count("error") + count("errors"),
      skipped: count("skipped") + count("xfailed"),
      failedTests: names,
    },
  };
};

// --- go test ---------------------------------------------------------------------------------

const GO_RESULT = /^\s*--- (PASS|FAIL|SKIP): (\S+) \(\d+(?:\.\d+)?s\)\s*$/;
const GO_PACKAGE_OK = /^ok\s+(\S+)\s+(?:\(cached\)|\d+(?:\.\d+)?s)(?:\s|$)/;
const GO_PACKAGE_FAIL = /^FAIL\s+(\S+)\s+(?:\(cached\)|\d+(?:\.\d+)?s|\[(build|setup) failed\])(?:\s|$)/;
const GO_PACKAGE_EMPTY = /^\?\s+(\S+)\s+\[no test files\]/;

const parseGo: Parser = (lines) => {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let lastSummaryAt = -1;
  let failsSincePackage = 0;
  const names: string[] = [];
  lines.forEach((line, index) => {
    const result = GO_RESULT.exec(line);
    if (result) {
      // Parents of failing subtests get their own --- FAIL line; go counts them, so do we.
      if (result[1] === "PASS") passed++;
      else if (result[1] === "SKIP") skipped++;
      else {
        failed++;
        failsSincePackage++;
        names.push(result[2]!);
      }
      return;
    }
    const fail = GO_PACKAGE_FAIL.exec(line);
    if (fail) {
      lastSummaryAt = index;
      // A package that fails with no failing test panicked, timed out or did not build; the
      // package name is the only handle the model gets on it.
      if (failsSincePackage === 0) {
        failed++;
        names.push(fail[2] ? `${fail[1]} [${fail[2]} failed]` : fail[1]!);
      }
      failsSincePackage = 0;
      return;
    }
    if (GO_PACKAGE_OK.test(line) || GO_PACKAGE_EMPTY.test(line)) {
      lastSummaryAt = index;
      failsSincePackage = 0;
    }
  });
  if (lastSummaryAt < 0) return null;
  return { lastSummaryAt, results: { framework: "go", passed, failed, skipped, failedTests: names } };
};

// --- cargo test ------------------------------------------------------------------------------

const CARGO_SUMMARY = /^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; (\d+) filtered out/;
const CARGO_FAILED = /^test (.+?) \.\.\. FAILED\s*$/;

const parseCargo: Parser = (lines) => {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  let lastSummaryAt = -1;
  const names: string[] = [];
  lines.forEach((line, index) => {
    // One result line per test binary (unit tests, each integration test, doc-tests): summed.
    const summary = CARGO_SUMMARY.exec(line);
    if (summary) {
      lastSummaryAt = index;
      passed += int(summary[1]);
      failed += int(summary[2]);
      skipped += int(summary[3]);
      return;
    }
    const failure = CARGO_FAILED.exec(line);
    if (failure) names.push(failure[1]!.replace(/ - should panic(?: with .*)?$/, ""));
  });
  if (lastSummaryAt < 0) return null;
  return { lastSummaryAt, results: { framework: "cargo", passed, failed, skipped, failedTests: names } };
};

const PARSERS: readonly Parser[] = [parseNodeTest, parseVitest, parseJest, parsePytest, parseGo, parseCargo];
