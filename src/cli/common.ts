import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { CliError, LedgerloopError } from "../errors.js";
import { packageRoot } from "../package-root.js";
import { defaultRedactor } from "../secrets.js";

/** Adds --state to a command that can keep its durable state in PostgreSQL. */
export function stateOption(cmd: Command): Command {
  return cmd.option(
    "--state <url>",
    "keep the ledger, checkpoints, lessons and run registry in PostgreSQL: postgres://user[:password]@host[:port]/db (default: $LEDGERLOOP_STATE_URL)",
  );
}

/** Adds --reconnect-seconds to a command that drives a run (run, resume). */
export function reconnectOption(cmd: Command): Command {
  return cmd.option(
    "--reconnect-seconds <n>",
    "on a PostgreSQL state, how long a run that lost its database waits for it to come back before it stays paused (exit 6); 0 pauses at once (default 60)",
    wholeNumberOption("--reconnect-seconds", "seconds"),
  );
}

/** Parser of an option that takes a whole number of `unit`, 0 included. */
export function wholeNumberOption(name: string, unit: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new CliError(`${name} must be a whole number of ${unit}, got "${v}"`, 2, "CONFIG_INVALID");
    return n;
  };
}

/** Milliseconds a driven run waits for a lost state database (--reconnect-seconds, default 60). */
export function reconnectMsOf(args: { reconnectSeconds?: number }): number {
  return (args.reconnectSeconds ?? 60) * 1000;
}

/** Adds --workspace and --state-dir to a command. */
export function workspaceOptions(cmd: Command): Command {
  return cmd
    .option("-w, --workspace <dir>", "the workspace directory (default: current directory)")
    .option("--state-dir <dir>", "where the state database lives (default: <workspace>/.ledgerloop)");
}

/** Progress and logs go to stderr, so stdout stays clean for --json. */
export function log(line: string): void {
  process.stderr.write(defaultRedactor.redact(line) + "\n");
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + "\n");
}

/** Exit code of `run`/`resume` for a run's outcome (documented in the README). */
export function exitCodeForStatus(status: string): number {
  return (
    ({ finished: 0, budget_exhausted: 3, rate_limited: 4, model_unavailable: 5, state_unavailable: 6, no_progress: 7 } as Record<string, number>)[status] ?? 1
  );
}

/** Exit code for an error reaching the top level. */
export function exitCodeFor(err: unknown): number {
  // CliError and the errors that name their own code (a held lease, a copied workspace).
  const own = (err as { exitCode?: unknown } | null)?.exitCode;
  if (err instanceof LedgerloopError && typeof own === "number") return own;
  if (err instanceof LedgerloopError) return err.code === "CONFIG_INVALID" || err.code === "MODEL_UNKNOWN" ? 2 : 1;
  return 1;
}

/** Parses a positive integer flag, naming the flag on failure. */
export function intOption(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new CliError(`${name} must be a positive integer, got "${value}"`, 2, "CONFIG_INVALID");
    return n;
  };
}

/** Quotes a word for a POSIX shell when it needs it. */
export function shellWord(w: string): string {
  return /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/**
 * How to call this CLI in a printed hint so that it works as printed from any directory:
 * `ledgerloop` when that name on the user's PATH is this very package, else `node <its bin>`
 * (after `npm ci` in a clone nothing is on the PATH; `npx` and `npm run` add directories that
 * are gone once they exit, so those do not count).
 */
export function cliCommand(env: NodeJS.ProcessEnv = process.env): string {
  const bin = path.join(packageRoot(), "bin", "ledgerloop.js");
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return null;
    }
  };
  for (const d of (env.PATH ?? "").split(path.delimiter)) {
    if (!d || d.includes(`${path.sep}_npx${path.sep}`) || d.endsWith(path.join("node_modules", ".bin"))) continue;
    const found = real(path.join(d, "ledgerloop"));
    if (found) return found === real(bin) ? "ledgerloop" : `node ${shellWord(bin)}`;
  }
  return `node ${shellWord(bin)}`;
}
