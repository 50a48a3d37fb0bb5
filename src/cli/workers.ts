import type { Command } from "commander";
import { CliError } from "../errors.js";
import { intOption, printJson, stateOption } from "./common.js";
import { stateUrlOf } from "../ledger/open-state.js";
import type { WorkerRow } from "../inspect/workers.js";
import { declareCommand } from "./command-specs.js";

// `ledgerloop workers`: the fleet of a PostgreSQL state, from its ll_workers rows (queue/fleet.ts).

interface WorkersArgs {
  state?: string;
  json?: boolean;
  recentMinutes?: number;
}

/** One worker as a line: who, where, what it holds, how recently it was heard from. */
export function workerLine(w: WorkerRow): string {
  const runs = w.runs.length ? ` (${w.runs.map((r) => (r.leaseExpired ? `${r.thread}, lease expired` : r.thread)).join("; ")})` : "";
  const heard = w.status === "dead" ? `no heartbeat for ${w.silentSeconds}s` : `heartbeat ${w.silentSeconds}s ago`;
  return (
    `${w.status.padEnd(8)} ${w.id}  host ${w.host}  pid ${w.pid}  runs ${w.runs.length}/${w.slots}${runs}  ${heard}  ` +
    `ledgerloop ${w.version} (schema ${w.schemaVersion})${w.note && w.status !== "live" ? `  — ${w.note}` : ""}`
  );
}

export async function handleWorkers(args: WorkersArgs): Promise<WorkerRow[]> {
  const url = stateUrlOf(args);
  if (!url) throw new CliError("workers needs the PostgreSQL state the workers use: --state postgres://… or LEDGERLOOP_STATE_URL", 2, "CONFIG_INVALID");
  const recentSeconds = (args.recentMinutes ?? 60) * 60;
  // Loaded on use: the query needs pg, which `--help` must not load.
  const { listWorkers } = await import("../inspect/workers.js");
  const rows = await listWorkers(url, { recentSeconds });
  if (args.json) for (const w of rows) printJson(w);
  else if (!rows.length) process.stdout.write(`no live workers, and none stopped or died in the last ${recentSeconds / 60} min\n`);
  else for (const w of rows) process.stdout.write(workerLine(w) + "\n");
  return rows;
}

export function registerWorkers(program: Command): void {
  const cmd = declareCommand(program, "workers")
    .option("--recent-minutes <n>", "also list workers that stopped or died within this many minutes (default 60)", intOption("--recent-minutes"))
    .option("--json", "one JSON object per worker");
  stateOption(cmd).action(async (opts: WorkersArgs) => {
    await handleWorkers(opts);
  });
}
