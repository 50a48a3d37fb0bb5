import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { CommandFeedback } from "../sandbox/engine.js";
import { resolveWorkspace } from "../workspace/location.js";
import { intOption, log, printJson } from "./common.js";
import { sandboxOptions, sandboxSettings, type RunArgs } from "./run.js";
import readline from "node:readline/promises";
import { declareCommand } from "./command-specs.js";

export interface ExecArgs extends Pick<RunArgs, "sandbox" | "allowNetwork" | "allow"> {
  workspace?: string;
  json?: boolean;
  yes?: boolean;
  timeout?: number;
}

/** The exit code a shell would give for what happened (126 for a refusal, 124 for a timeout). */
export function exitCodeOf(fb: CommandFeedback): number {
  const r = fb.exec;
  if (r.denied) return 126;
  if (r.timedOut) return 124;
  if (r.exitCode !== null) return r.exitCode;
  const signals: Record<string, number> = { SIGKILL: 9, SIGTERM: 15, SIGXCPU: 24, SIGXFSZ: 25, SIGSEGV: 11, SIGABRT: 6 };
  return 128 + (r.signal ? (signals[r.signal] ?? 1) : 1);
}

/** Runs one command exactly as the agent's run_command would: same policy, sandbox and feedback. */
export async function handleExec(argv: string[], args: ExecArgs): Promise<CommandFeedback> {
  if (argv.length === 0) throw new CliError("give the command after --, e.g. ledgerloop exec -- npm test", 2, "CONFIG_INVALID");
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  const flagged = await sandboxSettings(args, { approveFlag: "--approve-mode" });
  // The sandbox (execa, the policy parser) loads on use only.
  const [{ commandPolicy }, { runCommand }, { createSandbox, DEFAULT_OUTPUT_CAP }, { shQuote }, { isolationWarning }, { evaluatePolicy }] = await Promise.all([
    import("../config.js"),
    import("../sandbox/engine.js"),
    import("../sandbox/executor.js"),
    import("../sandbox/isolation.js"),
    import("../sandbox/detect.js"),
    import("../sandbox/policy.js"),
  ]);
  // One argument is a command line as the agent would send it; several are argv words to quote.
  const command = argv.length === 1 ? argv[0]! : argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : shQuote(a))).join(" ");
  const { policy, allowNetwork } = commandPolicy(workspace, { allowNetwork: flagged.allowNetwork, allow: flagged.allow });
  const sandbox = createSandbox({ level: flagged.sandbox ?? "auto", workspace, allowNetwork });
  const warning = isolationWarning(sandbox.level, [...sandbox.reasons]);
  if (warning && !args.json) log(warning);
  let approved = false;
  const verdict = evaluatePolicy(command, policy, { workspace, cwd: workspace, level: sandbox.level });
  if (verdict.decision === "ask") {
    if (args.yes) approved = true;
    else if (process.stdin.isTTY && !args.json) {
      const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
      try {
        log(`policy: ${verdict.rule}: ${verdict.reason}`);
        approved = /^y(es)?$/i.test((await rl.question("run it anyway? [y/N] ")).trim());
      } finally {
        rl.close();
      }
    }
  }
  return runCommand({
    sandbox,
    workspace,
    command,
    timeoutMs: args.timeout ?? 120_000,
    outputCapBytes: DEFAULT_OUTPUT_CAP,
    policy,
    approved,
    verdict,
  });
}

export function registerExec(program: Command): void {
  const cmd = declareCommand(program, "exec")
    .option("-w, --workspace <dir>", "the workspace directory (default: current directory)")
    .option("--timeout <ms>", "wall-clock limit in milliseconds (default 120000)", intOption("--timeout"))
    .option("-y, --yes", "approve the command if the policy asks for approval")
    .option("--json", "print one JSON object with the feedback");
  sandboxOptions(cmd, { approveFlag: "--approve-mode" });
  cmd.action(async (argv: string[], opts: ExecArgs) => {
    const fb = await handleExec(argv, opts);
    process.exitCode = exitCodeOf(fb);
    if (opts.json) {
      const r = fb.exec;
      return printJson({
        command: fb.command,
        exitCode: r.exitCode,
        signal: r.signal,
        durationMs: r.durationMs,
        timedOut: r.timedOut,
        stoppedBy: fb.stoppedBy,
        limit: fb.limit,
        usage: r.usage ?? null,
        sandbox: r.isolation,
        denied: r.denied ?? null,
        verdict: fb.verdict ? { decision: fb.verdict.decision, rule: fb.verdict.rule, reason: fb.verdict.reason } : null,
        stdout: r.stdout,
        stderr: r.stderr,
        truncated: r.truncated,
        filesChanged: fb.filesChanged,
        tests: fb.tests,
        errorClass: fb.errorClass,
      });
    }
    process.stdout.write(fb.exec.stdout);
    process.stderr.write(fb.exec.stderr);
    log(fb.output.split("\n").slice(0, 3).join("\n"));
  });
}
