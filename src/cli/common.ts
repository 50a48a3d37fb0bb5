import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import type Database from "better-sqlite3";
import { CliError, LedgerloopError } from "../errors.js";
import type { RunRegistry } from "../ledger/runs.js";
import type { SqliteLedger } from "../ledger/sqlite-ledger.js";
import type { ProgressEvent, Runtime } from "../runtime.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import { defaultRedactor } from "../secrets.js";
import type { RunSettings } from "../settings.js";

/** Options every command that reads a workspace's state accepts. */
export interface WorkspaceArgs {
  workspace?: string;
  stateDir?: string;
  json?: boolean;
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

export interface OpenedState {
  workspace: string;
  stateDir: string;
  dbPath: string;
  db: Database.Database;
  ledger: SqliteLedger;
  runs: RunRegistry;
  close(): void;
}

/**
 * Opens an existing state database; never creates one. Read-only unless `write` (gc, memory
 * forget): inspecting a run, even a corrupt or foreign file, writes nothing to it.
 */
export async function openExistingState(args: WorkspaceArgs, opts: { write?: boolean } = {}): Promise<OpenedState> {
  // Loaded on use: this module is imported by every command, `--help` included, and must stay light.
  const [{ RunRegistry }, { SqliteLedger }, { openStateDb }] = await Promise.all([
    import("../ledger/runs.js"),
    import("../ledger/sqlite-ledger.js"),
    import("../ledger/state-db.js"),
  ]);
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  const { stateDir, dbPath } = stateLocation(workspace, args.stateDir);
  if (!fs.existsSync(dbPath)) {
    throw new CliError(`no ledgerloop state in ${workspace} (${dbPath} does not exist); start a run with \`ledgerloop run\``, 1, "NO_STATE");
  }
  const db = openStateDb(dbPath, { create: false, readonly: !opts.write });
  if (!opts.write) {
    // Read-only, nothing creates the tables: a file with checkpoints only (plain LangGraph) or
    // from before the first run gets a sentence, not "no such table".
    const have = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name));
    const missing = ["ll_events", "ll_runs", "checkpoints"].filter((t) => !have.has(t));
    if (missing.length) {
      db.close();
      throw new CliError(
        `${dbPath} holds no ledgerloop run (tables ${missing.join(", ")} are missing); start a run with \`ledgerloop run\``,
        1,
        "NO_STATE",
      );
    }
  }
  return {
    workspace,
    stateDir,
    dbPath,
    db,
    ledger: new SqliteLedger(db),
    runs: new RunRegistry(db),
    close: () => db.close(),
  };
}

/** Fails with a one-line error unless the thread has checkpoints. */
export function requireThread(state: OpenedState, threadId: string): void {
  if (!state.runs.hasCheckpoints(threadId)) {
    throw new CliError(`unknown thread "${threadId}" in ${state.dbPath}; list runs with \`ledgerloop threads\``, 1, "UNKNOWN_THREAD");
  }
}

/** Exit code for an error reaching the top level. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof CliError) return err.exitCode;
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

/** A model for commands that run no node (rewind, fork, diff, gc): calling it is a bug. */
const INERT_MODEL = {
  name: "none:inspection",
  async invoke(): Promise<never> {
    throw new CliError("this command does not call a model", 1, "NO_MODEL");
  },
};

/**
 * An existing thread's workspace and the settings it was started with (none for a thread made
 * outside the CLI); reads the state database without writing to it. Fails for an unknown thread.
 */
export async function savedRun(thread: string, args: WorkspaceArgs): Promise<{ workspace: string; settings: RunSettings | undefined }> {
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    return { workspace: st.workspace, settings: st.runs.get(thread)?.settings };
  } finally {
    st.close();
  }
}

/**
 * The runtime of an existing thread, with the settings it was started with (model replaced by an
 * inert one unless the command runs the agent).
 */
export async function runtimeForThread(
  thread: string,
  args: WorkspaceArgs,
  opts: { progress?: (e: ProgressEvent) => void } = {},
): Promise<Runtime> {
  const { workspace, settings } = await savedRun(thread, args);
  // Loaded here, not at the top: inspection commands share this module and must not load LangGraph.
  const { createRuntime } = await import("../runtime.js");
  // Time-travel commands need no index: the next run refreshes it from the files' sizes and mtimes.
  return createRuntime(
    { ...(settings ?? {}), workspace, stateDir: args.stateDir ?? settings?.stateDir, model: INERT_MODEL.name, retrieval: "lexical" },
    { model: INERT_MODEL, progress: opts.progress, warn: (m) => log(`warning: ${m}`) },
  );
}

/** Quotes a word for a POSIX shell when it needs it. */
function shellWord(w: string): string {
  return /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/**
 * How to call this CLI in a printed hint so that it works as printed from any directory:
 * `ledgerloop` when that name on the user's PATH is this very package, else `node <its bin>`
 * (after `npm ci` in a clone nothing is on the PATH; `npx` and `npm run` add directories that
 * are gone once they exit, so those do not count).
 */
export function cliCommand(env: NodeJS.ProcessEnv = process.env): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "package.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const bin = path.join(dir, "bin", "ledgerloop.js");
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
