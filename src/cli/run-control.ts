import type { Command } from "commander";
import { CliError } from "../errors.js";
import { log, printJson, stateOption } from "./common.js";
import { stateUrlOf } from "../ledger/open-state.js";
import { cancelSubmittedRun, requeueSubmittedRun } from "../runs/run-control.js";
import { declareCommand } from "./command-specs.js";

// `ledgerloop cancel` and `ledgerloop requeue`: run control of the PostgreSQL queue, from any machine.

interface ControlArgs {
  state?: string;
  json?: boolean;
  /** requeue --from: the checkpoint to continue from. */
  from?: string;
}

function urlOf(args: ControlArgs, what: string): string {
  const url = stateUrlOf(args);
  if (!url) throw new CliError(`${what} needs the PostgreSQL state the workers use: --state postgres://… or LEDGERLOOP_STATE_URL`, 2, "CONFIG_INVALID");
  return url;
}

export async function handleCancel(thread: string, args: ControlArgs): Promise<void> {
  const r = await cancelSubmittedRun(urlOf(args, "cancel"), thread);
  if (args.json) printJson(r);
  else if (r.state === "cancelled") log(`cancelled run ${thread} (it was ${r.was}); \`ledgerloop requeue ${thread}\` continues it`);
  else log(`asked worker ${r.worker} to cancel run ${thread}: it stops at the next step boundary`);
}

export async function handleRequeue(thread: string, args: ControlArgs): Promise<void> {
  const r = await requeueSubmittedRun(urlOf(args, "requeue"), thread, args.from !== undefined ? { from: args.from } : {});
  if (args.json) printJson(r);
  else
    log(`queued run ${thread} again (job ${r.jobId}; it was ${r.was}); a worker continues it from ${r.from ? `checkpoint ${r.from}` : "its last checkpoint"}`);
}

export function registerRunControl(program: Command): void {
  const cancel = declareCommand(program, "cancel").option("--json", "print what was done as JSON");
  stateOption(cancel).action(async (thread: string, opts: ControlArgs) => handleCancel(thread, opts));
  const requeue = declareCommand(program, "requeue")
    .option("--from <checkpoint>", "continue from this checkpoint of the run instead (an id or 6+ character prefix, as `history --state` lists them)")
    .option("--json", "print the new job as JSON");
  stateOption(requeue).action(async (thread: string, opts: ControlArgs) => handleRequeue(thread, opts));
}
