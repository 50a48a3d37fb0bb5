import type { CommandLimit, StoppedBy } from "../events.js";
import type { FileChanges, TestCounts } from "../state.js";
import { classifyError } from "./error-class.js";
import { capText } from "./output-cap.js";
import { evaluatePolicy, type PolicyContext, type PolicyVerdict, type SandboxPolicy } from "./policy.js";
import type { ExecResult, ProcessInfo, Sandbox } from "./port.js";
import { parseTestOutput } from "./test-results.js";
import { trackCommand, type WorkspaceTracker } from "../workspace/tracker.js";

export interface CommandFeedback {
  command: string;
  exec: ExecResult;
  filesChanged: FileChanges;
  tests: TestCounts | null;
  errorClass: string | null;
  /** The text the model reads. */
  output: string;
  ok: boolean;
  /** The policy's verdict on the command line, when a policy was given. */
  verdict: PolicyVerdict | null;
  /** What ended the command when it did not end by itself. */
  stoppedBy: StoppedBy | null;
  /** The limit that stopped it, when `stoppedBy` is "limit" (a limit also hit by a command the run stopped is not named). */
  limit: CommandLimit | null;
}

export interface RunCommandOptions {
  sandbox: Sandbox;
  workspace: string;
  command: string;
  timeoutMs: number;
  outputCapBytes: number;
  signal?: AbortSignal;
  onStart?: (p: ProcessInfo) => void | Promise<void>;
  /** Names the command's processes for crash recovery (`ExecRequest.tag`). */
  tag?: string;
  /** Treat the run as a test run: failing tests make it a failure even with exit code 0. */
  expectTests?: boolean;
  /** The command policy: a denial never runs; an "ask" runs only when `approved`. */
  policy?: SandboxPolicy;
  /** An "ask" decision was approved (by the user, or by --approve auto). */
  approved?: boolean;
  /**
   * The policy's verdict on `command`, when the caller already evaluated it (to ask for approval):
   * used instead of evaluating the same command line again.
   */
  verdict?: PolicyVerdict;
  /** Extra environment for the command (project tools' arguments); the sandbox drops secret-looking names. */
  env?: Record<string, string>;
  /**
   * The workspace's walk tracker (the act node passes the revision store's): the files before the
   * command come from its kept walk, and the walk after it is kept for the step's revision.
   */
  files?: WorkspaceTracker;
}

/** The result of a command refused before it ran (exit code 126, as a shell reports "cannot execute"). */
export function deniedResult(isolation: string, rule: string, reason: string): ExecResult {
  return {
    exitCode: 126,
    signal: null,
    stdout: "",
    stderr: "",
    durationMs: 0,
    timedOut: false,
    truncated: false,
    isolation,
    limit: null,
    denied: { rule, reason },
  };
}

/**
 * The one execution engine: runs a command through the sandbox and turns what happened into
 * structured feedback (exit, output, files changed, parsed tests, error class). `run_command`,
 * `run_tests` and `ledgerloop exec` all go through here.
 */
export async function runCommand(o: RunCommandOptions): Promise<CommandFeedback> {
  const verdict = o.policy
    ? (o.verdict ?? evaluatePolicy(o.command, o.policy, { workspace: o.workspace, cwd: o.workspace, level: o.sandbox.level as PolicyContext["level"] }))
    : null;
  if (verdict && (verdict.decision === "deny" || (verdict.decision === "ask" && !o.approved))) {
    const reason = verdict.decision === "ask" ? `needs approval, which it did not get: ${verdict.reason}` : verdict.reason;
    const exec = deniedResult(o.sandbox.level, verdict.rule, reason);
    return {
      command: o.command,
      exec,
      filesChanged: { created: [], modified: [], deleted: [] },
      tests: null,
      errorClass: "policy_denied",
      output: formatFeedback(o.command, exec, { created: [], modified: [], deleted: [] }, null, o.outputCapBytes),
      ok: false,
      verdict,
      stoppedBy: null,
      limit: null,
    };
  }
  const { result: exec, changes: filesChanged } = await trackCommand(o.workspace, o.files, () =>
    o.sandbox.exec({
      command: o.command,
      cwd: o.workspace,
      timeoutMs: o.timeoutMs,
      outputCapBytes: o.outputCapBytes,
      signal: o.signal,
      onStart: o.onStart,
      tag: o.tag,
      ...(o.env ? { env: o.env } : {}),
    }),
  );
  const tests = exec.denied ? null : parseTestOutput(`${exec.stdout}\n${exec.stderr}`);
  // The run was stopped while this ran (its signal killed the process group) and it did not end
  // cleanly first: an interruption, which may have left part of its work done.
  const aborted = o.signal?.aborted === true && !(exec.exitCode === 0 && !exec.signal);
  const errorClass = classifyError({
    aborted,
    sessionEnded: exec.sessionEnded === true,
    limitsRuledOut: exec.limitsRuledOut === true,
    exitCode: exec.exitCode,
    signal: exec.signal,
    stdout: exec.stdout,
    stderr: exec.stderr,
    timedOut: exec.timedOut,
    limit: exec.limit ?? null,
    denied: Boolean(exec.denied),
    violations: Boolean(exec.violations?.length),
    tests,
  });
  const testsFailed = Boolean(tests && tests.failed > 0);
  const ok = errorClass === null && !(o.expectTests && testsFailed);
  const stop = stoppedBy(exec, aborted);
  return {
    command: o.command,
    exec,
    filesChanged,
    tests,
    errorClass: ok ? null : (errorClass ?? (testsFailed ? "test_failure" : "unknown")),
    output: formatFeedback(o.command, exec, filesChanged, tests, o.outputCapBytes, aborted),
    ok,
    verdict,
    stoppedBy: stop,
    limit: stop === "limit" ? (exec.limit ?? null) : null,
  };
}

/** The one cause the feedback names for a command that was ended: the run's stop outranks what it caused. */
function stoppedBy(r: ExecResult, aborted: boolean): StoppedBy | null {
  if (aborted) return "run_stopped";
  if (r.sessionEnded) return "session_ended";
  if (r.limit) return "limit";
  if (r.limitsRuledOut) return "outside";
  return null;
}

function formatFeedback(command: string, r: ExecResult, files: FileChanges, tests: TestCounts | null, cap: number, aborted = false): string {
  const lines: string[] = [];
  if (r.denied) {
    lines.push(`command refused by policy (rule ${r.denied.rule}): ${r.denied.reason}`);
    return lines.join("\n");
  }
  const how = aborted
    ? `was stopped because the run was stopped (${r.signal ? `killed by ${r.signal}` : `exit code ${r.exitCode}`}); it may have done part of its work`
    : r.sessionEnded
      ? `was killed (${r.signal}) when the run's sandbox session ended, not by anything it did; it may have done part of its work`
      : r.timedOut
        ? `timed out after ${r.durationMs} ms and was killed${r.limit && r.limit !== "timeout" ? ` (it had also hit the ${r.limit} limit)` : ""}`
        : r.limit
          ? `stopped: ${r.limit} limit exceeded`
          : r.signal
            ? `killed by ${r.signal}`
            : `exit code ${r.exitCode}`;
  lines.push(`$ ${command}`, `${how} (${(r.durationMs / 1000).toFixed(2)} s, sandbox: ${r.isolation})`);
  if (tests) {
    const failing = tests.failedTests.length ? `; failing: ${tests.failedTests.slice(0, 10).join(", ")}` : "";
    lines.push(`tests (${tests.framework}): ${tests.passed} passed, ${tests.failed} failed, ${tests.skipped} skipped${failing}`);
  }
  const changed = [...files.created.map((f) => `+${f}`), ...files.modified.map((f) => `~${f}`), ...files.deleted.map((f) => `-${f}`)];
  if (changed.length) lines.push(`files changed: ${changed.slice(0, 30).join(" ")}${changed.length > 30 ? " …" : ""}`);
  // The sandbox already kept head and tail within the cap and marked the cut: cutting again would
  // hide how much was lost. capText only guards against a sandbox that returns more than asked.
  if (r.stdout.trim()) lines.push("--- stdout ---", capText(r.stdout.trimEnd(), 2 * cap));
  if (r.stderr.trim()) lines.push("--- stderr ---", capText(r.stderr.trimEnd(), 2 * cap));
  if (r.truncated) lines.push("(output was cut in the middle; re-run with a narrower command to see the rest)");
  return lines.join("\n");
}
