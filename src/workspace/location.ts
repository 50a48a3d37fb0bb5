import fs from "node:fs";
import path from "node:path";
import { ConfigError } from "../errors.js";

// Where a workspace and its state live: needed by every command, so it imports nothing heavy.

/** Resolves and checks the workspace directory, returning its real path. */
export function resolveWorkspace(dir: string): string {
  const abs = path.resolve(dir);
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch {
    throw new ConfigError(`workspace ${abs} does not exist`);
  }
  if (!st.isDirectory()) throw new ConfigError(`workspace ${abs} is not a directory`);
  return fs.realpathSync(abs);
}

/** Where the state database of a workspace lives. */
export function stateLocation(workspace: string, stateDir?: string): { stateDir: string; dbPath: string } {
  const dir = path.resolve(stateDir ?? path.join(workspace, ".ledgerloop"));
  return { stateDir: dir, dbPath: path.join(dir, "state.db") };
}

/** Where the report of a run that stopped is written: `<state dir>/reports/<thread>.md`. */
export function reportFile(stateDir: string, thread: string): string {
  return path.join(stateDir, "reports", `${thread}.md`);
}

/** Where a run's JSON log lives: `<state dir>/logs/<thread>.jsonl` (one JSON object a line, appended by every process that runs the thread). */
export function runLogFile(stateDir: string, thread: string): string {
  return path.join(stateDir, "logs", `${thread.replace(/[^\w.-]/g, "_")}.jsonl`);
}
