import fs from "node:fs";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import type { IdentityOutcome } from "../ledger/workspace-identity.js";
import { resolveWorkspace, stateLocation } from "../workspace/location.js";
import { log, printJson, workspaceOptions } from "./common.js";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { declareCommand } from "./command-specs.js";

/** Makes a copied workspace's state its own (a new identity; the original is not touched). */
export async function handleAdopt(args: WorkspaceArgs): Promise<{ workspace: string; stateDir: string; outcome: IdentityOutcome; id: string }> {
  // Loaded on use, like every command's heavy parts: `--help` must not load SQLite.
  const [{ claimWorkspace }, { openStateDb }] = await Promise.all([import("../ledger/workspace-identity.js"), import("../ledger/state-db.js")]);
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  const { stateDir, dbPath } = stateLocation(workspace, args.stateDir);
  if (!fs.existsSync(dbPath)) throw new CliError(`no ledgerloop state in ${workspace} (${dbPath} does not exist); nothing to adopt`, 1, "NO_STATE");
  const db = openStateDb(dbPath, { create: false });
  try {
    const { outcome, identity } = claimWorkspace(db, { workspace, stateDir }, { adopt: true, warn: (m) => log(`warning: ${m}`) });
    return { workspace, stateDir, outcome, id: identity.id };
  } finally {
    db.close();
  }
}

export function registerAdopt(program: Command): void {
  workspaceOptions(declareCommand(program, "adopt").option("--json", "one JSON object")).action(async (opts: WorkspaceArgs) => {
    const r = await handleAdopt(opts);
    if (opts.json) return printJson(r);
    const said = {
      adopted: "adopted: its runs now continue here, separately from the original",
      moved: "adopted (the workspace had been moved)",
      same: "already its own: nothing to do",
      created: "recorded",
    }[r.outcome];
    log(`${r.workspace}: ${said}`);
  });
}
