import { errorMessage } from "../errors.js";
import type { Runtime } from "../runtime.js";
import { runCommand } from "../sandbox/engine.js";

// A `--repo` run on a queue worker lives in a fresh clone each holding (first start, takeover, a
// run handed back and taken again): the clone has the pinned commit and the run's recorded
// revision, and none of what git ignores (installed dependencies, build outputs, a virtualenv).
// The submission may declare a setup command that re-creates them; the worker runs it here, in
// the run's own sandbox, before driving the run, and leaves the model a one-time note (shown in its
// next prompt through rt.notices, and so recorded in that step's context_built prompt) saying
// the run moved and what the setup did. Nothing is written to the ledger here: the graph's nodes
// are its only writers.

/** Characters of the setup's output the model and the worker's log are shown (its end). */
export const SETUP_TAIL_CHARS = 2000;

/** What the setup command did on this worker. */
export interface SetupOutcome {
  command: string;
  ok: boolean;
  exitCode: number | null;
  durationMs: number;
  /** Why it did not end with exit 0 beyond its exit code (a signal, a limit, the policy), if known. */
  cause: string | null;
  /** The end of its output (stdout then stderr), redacted. */
  tail: string;
}

/** Runs the declared setup command in the run's sandbox, under its policy and limits; never throws for the command's failure. */
export async function runSetup(rt: Runtime, command: string, signal?: AbortSignal): Promise<SetupOutcome> {
  const t0 = Date.now();
  try {
    const fb = await runCommand({
      sandbox: rt.sandbox,
      workspace: rt.workspace,
      command,
      // Installing dependencies takes longer than most commands: the run's longer limit.
      timeoutMs: Math.max(rt.settings.commandTimeoutMs, rt.settings.testTimeoutMs),
      outputCapBytes: rt.settings.outputCapBytes,
      signal,
      policy: rt.policy,
      // The person who submitted the run wrote it: an "ask" rule is answered; a "deny" still refuses it.
      approved: true,
      files: rt.revisions.tracker,
    });
    const e = fb.exec;
    const cause = e.denied
      ? `refused by the command policy (rule ${e.denied.rule}): ${e.denied.reason}`
      : e.timedOut
        ? "timed out"
        : e.limit
          ? `stopped by the ${e.limit} limit`
          : e.signal
            ? `killed by ${e.signal}`
            : null;
    // Redacted whole before it is cut, so a cut cannot split a secret the redactor would know.
    const output = rt.redactor.redact([e.stdout.trimEnd(), e.stderr.trimEnd()].filter(Boolean).join("\n"));
    return {
      command,
      ok: e.exitCode === 0 && !e.signal && !e.denied,
      exitCode: e.exitCode,
      durationMs: e.durationMs,
      cause,
      tail: output.length > SETUP_TAIL_CHARS ? `…${output.slice(-SETUP_TAIL_CHARS)}` : output,
    };
  } catch (err) {
    // The sandbox could not start it (a broken session): the run goes on, and the model is told.
    return {
      command,
      ok: false,
      exitCode: null,
      durationMs: Date.now() - t0,
      cause: `could not be started: ${rt.redactor.redact(errorMessage(err))}`,
      tail: "",
    };
  }
}

/** The worker's log line for a setup outcome (its output's last lines when it failed). */
export function setupLogLine(o: SetupOutcome): string {
  const head = `setup \`${o.command}\`: ${o.ok ? "ok" : `failed (exit ${o.exitCode ?? "none"}${o.cause ? `, ${o.cause}` : ""})`} in ${(o.durationMs / 1000).toFixed(1)} s`;
  if (o.ok || !o.tail) return head;
  return `${head}; the end of its output:\n${o.tail.split("\n").slice(-10).join("\n")}`;
}

/**
 * The note the model gets in its next prompt, or null when there is nothing to say (a first start
 * whose setup went well, or none declared). `moved`: the run had made progress in another copy.
 */
export function setupNotice(moved: boolean, o: SetupOutcome | null): string | null {
  const did = o
    ? o.ok
      ? `The setup command declared with the task, \`${o.command}\`, was run in this copy and exited 0 after ${(o.durationMs / 1000).toFixed(1)} s.`
      : `The setup command declared with the task, \`${o.command}\`, was run in this copy and FAILED (exit ${o.exitCode ?? "none"}${o.cause ? `, ${o.cause}` : ""}) after ${(o.durationMs / 1000).toFixed(1)} s, so what it creates may be missing or incomplete.` +
        (o.tail ? ` The end of its output:\n\`\`\`\n${o.tail}\n\`\`\`` : " It printed nothing.")
    : null;
  if (!moved) return o && !o.ok ? `# Workspace setup\n${did}` : null;
  return [
    "# Workspace moved",
    "This run moved to a fresh copy of the repository on this worker (another machine, or the same one starting over): your tracked files are as you left them, but files git ignores (installed dependencies, build outputs, caches, virtualenvs) were not carried over.",
    did ??
      "No setup command was declared with the task, so whatever ignored files you created before the move are missing here and may need to be created again (install the dependencies, rebuild) before you rely on them.",
  ].join("\n");
}

/**
 * After a worker materialised a repo source into a fresh clone and restored the run's revision:
 * runs the setup command (if declared), logs its outcome, and leaves the model its note.
 */
export async function prepareFreshClone(
  rt: Runtime,
  o: { setup: string | undefined; moved: boolean; signal?: AbortSignal; say: (line: string) => void },
): Promise<SetupOutcome | null> {
  const outcome = o.setup ? await runSetup(rt, o.setup, o.signal) : null;
  if (outcome) o.say(setupLogLine(outcome));
  const note = setupNotice(o.moved, outcome);
  if (note) (rt.notices ??= []).push(note);
  return outcome;
}
