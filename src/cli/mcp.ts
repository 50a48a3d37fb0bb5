import fs from "node:fs";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import { log, stateOption, workspaceOptions } from "./common.js";
import { stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import { declareCommand } from "./command-specs.js";

export interface McpArgs extends WorkspaceArgs {
  allowWrites?: boolean;
}

/** Serves a workspace's memory over MCP (stdio) until the client hangs up. */
export async function handleMcp(args: McpArgs): Promise<void> {
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  const { dbPath } = stateLocation(workspace, args.stateDir);
  const stateUrl = stateUrlOf(args);
  // Fail before the handshake: a client shows a server that exits at once with its stderr. With
  // --state the server is also the queue's run control, which needs no workspace of this machine.
  if (!fs.existsSync(dbPath) && !stateUrl)
    throw new CliError(`no ledgerloop state in ${workspace} (${dbPath} does not exist); start a run with \`ledgerloop run\``, 1, "NO_STATE");
  // The SDK loads on use only: `--help` and the other commands never pay for it.
  const { serveStdio } = await import("../mcp-server/server.js");
  const mode = args.allowWrites ? `record_decision${stateUrl ? ", cancel_run, requeue_run" : ""} allowed` : "read-only";
  log(`ledgerloop mcp: serving ${workspace} on stdio (${mode})`);
  await serveStdio({ workspace, ...(args.stateDir ? { stateDir: args.stateDir } : {}), allowWrites: !!args.allowWrites, ...(stateUrl ? { stateUrl } : {}) });
}

export function registerMcp(program: Command): void {
  const cmd = workspaceOptions(
    declareCommand(program, "mcp").option(
      "--allow-writes",
      "also offer record_decision (writes a decision event to a run's ledger), and cancel_run and requeue_run (run control of the --state queue)",
    ),
  );
  // --state is the queue cancel_run and requeue_run act on; the memory tools read the workspace.
  stateOption(cmd).action(async (opts: McpArgs) => {
    await handleMcp(opts);
  });
}
