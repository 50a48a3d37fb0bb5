import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import { packageRoot } from "../package-root.js";
import type { DriveResult } from "../runs/drive.js";
import { cliCommand, log } from "./common.js";
import { logLevelOption } from "./logs.js";
import { handleRun } from "./run.js";
import { declareCommand } from "./command-specs.js";

export const DEMO_DIR = path.join(packageRoot(), "examples", "demo");
export const DEMO_TASK =
  'Give the users and orders services a GET /health endpoint answering {status: "ok", service: <name>}, ' +
  "and implement collectHealth in dashboard/aggregate.js so the dashboard aggregates them (overall ok/degraded). " +
  "All tests must pass.";

export interface DemoArgs {
  workspace?: string;
  json?: boolean;
  quiet?: boolean;
  maxSteps?: number;
}

/** Copies the bundled example workspace and runs the bundled scripted trajectory on it. */
export async function handleDemo(args: DemoArgs): Promise<DriveResult> {
  let workspace: string;
  if (args.workspace) {
    workspace = path.resolve(args.workspace);
    if (fs.existsSync(workspace) && fs.readdirSync(workspace).length > 0) {
      throw new CliError(`${workspace} exists and is not empty; give a new directory to --workspace`, 2, "CONFIG_INVALID");
    }
    fs.mkdirSync(workspace, { recursive: true });
  } else {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-demo-"));
  }
  fs.cpSync(path.join(DEMO_DIR, "workspace"), workspace, { recursive: true });
  if (!args.json) log(`demo workspace: ${workspace}`);
  const { result, runtime } = await handleRun(DEMO_TASK, {
    workspace,
    model: `scripted:${path.join(DEMO_DIR, "trajectory.json")}`,
    json: args.json,
    quiet: args.quiet,
    maxSteps: args.maxSteps ?? 30,
  });
  if (!args.json) {
    const ll = cliCommand();
    log(`\nThe demo ran a scripted trajectory (no model API needed). Look around (from any directory):`);
    log(`  ${ll} threads -w ${runtime.workspace}`);
    log(`  ${ll} ledger ${result.thread} -w ${runtime.workspace} --type decision,environment_feedback`);
    log(`  ${ll} ledger ${result.thread} -w ${runtime.workspace} --file services/orders/server.js`);
    log(`  ${ll} web -w ${runtime.workspace}`);
    log(`  cd ${runtime.workspace} && npm test`);
    log(`Travel in time (each prints what to run next):`);
    log(`  ${ll} history ${result.thread} -w ${runtime.workspace} --step 4        # the checkpoint before step 4 acted`);
    log(`  ${ll} diff ${result.thread} -w ${runtime.workspace} --stat             # what the run changed`);
    log(`  ${ll} replay ${result.thread} -w ${runtime.workspace}                  # re-run it from the ledger, no model calls`);
    if (ll !== "ledgerloop")
      log(`(to type just \`ledgerloop\`: \`npm link\` in ${path.dirname(path.dirname(ll.slice("node ".length)))}, or \`npm i -g\` of its packed tarball)`);
  }
  return result;
}

export function registerDemo(program: Command): void {
  logLevelOption(
    declareCommand(program, "demo")
      .option("-w, --workspace <dir>", "where to put the demo workspace (default: a new temp directory)")
      .option("--json", "print one JSON object with the outcome on stdout")
      .option("-q, --quiet", "no progress lines"),
  ).action(async (opts: DemoArgs) => {
    const result = await handleDemo(opts);
    process.exitCode = result.status === "finished" ? 0 : 1;
  });
}
