import { z } from "zod";
import { parseTestOutput, stripAnsi, type TestResults } from "./test-results.js";

export const ErrorClass = z.enum([
  "dependency_missing",
  "syntax_error",
  "type_error",
  "test_failure",
  "timeout",
  "resource_limit",
  "policy_denied",
  "command_not_found",
  "permission_denied",
  "sandbox_violation",
  /**
   * Stopped from outside, not by anything it did: the run itself was stopped (Ctrl-C, a worker's
   * hard stop) or the run's sandbox session ended under it. It may have done part of its work.
   */
  "interrupted",
  "unknown",
]);
export type ErrorClass = z.infer<typeof ErrorClass>;

export interface ClassifyInput {
  exitCode: number | null;
  /** The run was stopped while the command ran, and the command did not end cleanly on its own. */
  aborted?: boolean;
  /** The run's sandbox session ended while the command ran and killed it. */
  sessionEnded?: boolean;
  /** The command's cgroups show no limit was hit: a SIGKILL is then not read as one. */
  limitsRuledOut?: boolean;
  signal?: string | null;
  stdout: string;
  stderr: string;
  timedOut?: boolean;
  /** Set when a resource limit was hit. */
  limit?: string | null;
  denied?: boolean;
  /** The workspace guard had to undo something the command did (see git-guard.ts). */
  violations?: boolean;
  /** Parsed from stdout+stderr when left undefined; pass null to say there are none. */
  tests?: TestResults | null;
}

const COMMAND_NOT_FOUND = [
  /\bcommand not found\b/,
  // dash and busybox: "sh: 1: vitest: not found"
  /^(?:\S*\/)?(?:ba|da|z)?sh: (?:line )?(?:\d+: )?\S+: not found\s*$/m,
  /\bspawn \S+ ENOENT\b/,
  /\bENOENT\b[^\n]*\bspawn\b/,
];

const PERMISSION_DENIED = [/\bEACCES\b/, /\bEPERM\b/, /Permission denied/];

// Specifiers quoted in "module not found" messages; a relative or absolute path means a
// mistyped import of the project's own file, which installing packages will not fix.
const MISSING_SPECIFIER = [/Cannot find module '([^']+)'/g, /Cannot find module "([^"]+)"/g, /Failed to resolve import "([^"]+)"/g];

const MISSING_PACKAGE = [
  /Cannot find package '[^']+'/,
  /\bModuleNotFoundError\b/,
  /\bNo module named\b/,
  /\bcannot find package\b/i,
  /^npm (?:ERR!|error) missing\b/m,
  /\bno required module provides package\b/,
  /\bmissing go\.sum entry\b/,
  /\bno matching package named\b/,
];

const SYNTAX_ERROR = [
  /\bSyntaxError\b/,
  /\bIndentationError\b/,
  /\bTabError\b/,
  /\berror TS1\d{3}\b/,
  // go vet/build and POSIX shells
  /\bsyntax error\b/,
];

const TYPE_ERROR = [/\bTypeError\b/, /\berror TS(?:2|7)\d{3}\b/, /\berror TS18\d{3}\b/, /\berror\[E0308\]/];

const RESOURCE_SIGNALS = new Set(["SIGKILL", "SIGXCPU", "SIGXFSZ"]);
// A shell between us and the killed process reports the signal as exit status 128 + n.
const RESOURCE_EXIT_CODES = new Set([128 + 9, 128 + 24, 128 + 25]);

/** Names the most likely cause of a failed command for the model; null when it succeeded. */
export function classifyError(input: ClassifyInput): ErrorClass | null {
  if (input.denied) return "policy_denied";
  if (input.violations) return "sandbox_violation";
  // A fork bomb that hits the process limit and then runs out the clock was stopped by the limit:
  // that, not the timeout, is what the model must change.
  if (input.limit && input.limit !== "timeout") return "resource_limit";
  if (input.timedOut || input.limit === "timeout") return "timeout";
  // Killed by our own stop, not by anything the command did: the model must hear that, not "SIGKILL".
  if (input.aborted || input.sessionEnded) return "interrupted";
  if (input.exitCode === 0 && !input.signal) return null;

  // Facts the caller observed (above) beat anything read from the output. Below, causes that stop
  // the code from loading at all rank above a test failure: when a missing package or a parse
  // error breaks a suite, every failing test is a symptom, and a model shown "test_failure" with
  // a list of names would chase the names instead of installing the package or fixing the file.
  // A runtime TypeError, though, is what a failing test typically prints, so there the test
  // failure and its names rank higher; compile-time type errors rarely come with a test summary,
  // so they still surface as type_error.
  const text = stripAnsi(`${input.stdout}\n${input.stderr}`);
  const tests = input.tests === undefined ? parseTestOutput(text) : input.tests;

  if (input.exitCode === 127 || matchesAny(COMMAND_NOT_FOUND, text)) return "command_not_found";
  if (input.exitCode === 126 || matchesAny(PERMISSION_DENIED, text)) return "permission_denied";
  if (mentionsMissingPackage(text)) return "dependency_missing";
  if (matchesAny(SYNTAX_ERROR, text)) return "syntax_error";
  if (tests && tests.failed > 0) return "test_failure";
  if (matchesAny(TYPE_ERROR, text)) return "type_error";
  if (!input.limitsRuledOut) {
    if (input.signal && RESOURCE_SIGNALS.has(input.signal)) return "resource_limit";
    if (input.exitCode !== null && RESOURCE_EXIT_CODES.has(input.exitCode)) return "resource_limit";
  }
  return "unknown";
}

function matchesAny(patterns: readonly RegExp[], text: string): boolean {
  return patterns.some((pattern) => pattern.test(text));
}

function mentionsMissingPackage(text: string): boolean {
  if (matchesAny(MISSING_PACKAGE, text)) return true;
  let sawLocalPath = false;
  for (const pattern of MISSING_SPECIFIER) {
    for (const match of text.matchAll(pattern)) {
      if (isLocalSpecifier(match[1]!)) sawLocalPath = true;
      else return true;
    }
  }
  // Node's ESM loader names a missing local file with ERR_MODULE_NOT_FOUND too, so the code
  // alone only counts when no quoted path already explained it.
  return !sawLocalPath && /\bERR_MODULE_NOT_FOUND\b/.test(text);
}

function isLocalSpecifier(specifier: string): boolean {
  return /^(?:\.{1,2}(?:[/\\]|$)|[/\\]|[A-Za-z]:[/\\]|file:|#)/.test(specifier);
}
