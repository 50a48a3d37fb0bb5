import path from "node:path";

/** Where the report of a run that stopped is written: `<state dir>/reports/<thread>.md`. */
export function reportFile(stateDir: string, thread: string): string {
  return path.join(stateDir, "reports", `${thread}.md`);
}
