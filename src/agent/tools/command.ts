import { runCommand, type CommandFeedback } from "../../sandbox/engine.js";
import type { ToolContext, ToolResult } from "./tool.js";

/**
 * Runs a shell command for a tool through the one execution engine, with everything the context
 * carries: sandbox, limits, crash-recovery hooks, and the policy verdict checked before the run
 * (used when it is about this very command line).
 */
export function runToolCommand(
  ctx: ToolContext,
  command: string,
  opts: { timeoutMs: number; expectTests?: boolean; env?: Record<string, string> },
): Promise<CommandFeedback> {
  return runCommand({
    sandbox: ctx.sandbox,
    workspace: ctx.workspace,
    command,
    timeoutMs: opts.timeoutMs,
    outputCapBytes: ctx.outputCapBytes,
    signal: ctx.signal,
    onStart: ctx.onProcessStart,
    tag: ctx.commandTag,
    expectTests: opts.expectTests,
    ...(opts.env ? { env: opts.env } : {}),
    policy: ctx.policy,
    approved: ctx.approved,
    verdict: ctx.checked?.command === command ? ctx.checked.verdict : undefined,
    files: ctx.files,
  });
}

/** A command's feedback as a tool result (`output` replaces the text the model reads). */
export function commandResult(fb: CommandFeedback, output = fb.output): ToolResult {
  return {
    status: fb.ok ? "ok" : fb.errorClass === "interrupted" ? "interrupted" : "error",
    output,
    exitCode: fb.exec.exitCode,
    signal: fb.exec.signal,
    stdout: fb.exec.stdout,
    stderr: fb.exec.stderr,
    truncated: fb.exec.truncated,
    filesChanged: fb.filesChanged,
    tests: fb.tests,
    errorClass: fb.errorClass,
    sandbox: fb.exec.isolation,
    command: fb.command,
    stoppedBy: fb.stoppedBy,
    limit: fb.limit,
    ...(fb.exec.usage ? { usage: fb.exec.usage } : {}),
  };
}
