import type { Command } from "commander";
import type { WorkspaceArgs } from "../ledger/open-state.js";
import { openStateAdmin } from "../state-admin/open-state-admin.js";
import type { GcOutcome } from "../state-admin/state-admin.js";
import { intOption, log, printJson, stateOption, wholeNumberOption, workspaceOptions } from "./common.js";
import { declareCommand } from "./command-specs.js";

export interface GcArgs extends WorkspaceArgs {
  keepLast?: number;
  state?: string;
  graceMinutes?: number;
  staleHours?: number;
}

/** Prunes old checkpoints and unreferenced workspace revisions of the state `args` name (see StateAdmin.gc). */
export async function handleGc(args: GcArgs): Promise<GcOutcome> {
  return (await openStateAdmin(args)).gc(args);
}

export function registerGc(program: Command): void {
  stateOption(
    workspaceOptions(
      declareCommand(program, "gc")
        .option("--keep-last <n>", "keep this many checkpoints back from each branch head (default: all)", intOption("--keep-last"))
        .option(
          "--grace-minutes <n>",
          "with --state: keep revisions pushed this recently even if nothing names them yet (default 60)",
          wholeNumberOption("--grace-minutes", "minutes"),
        )
        .option(
          "--stale-hours <n>",
          "with --state: prune a run whose runner is on another host and that recorded nothing for this long, as a stopped one (default: leave it whole)",
          intOption("--stale-hours"),
        )
        .option("--json", "one JSON object"),
    ),
  ).action(async (opts: GcArgs & { json?: boolean }) => {
    const { backend, report: r } = await handleGc(opts);
    if (opts.json) return printJson(r);
    if (backend === "sqlite")
      return log(
        `gc: ${r.checkpointsDeleted} checkpoint(s) and ${r.revisionsDeleted} revision(s) / ${r.blobsDeleted} blob(s) removed; ${r.heads} branch head(s) kept; ${(r.bytesBefore / 1e6).toFixed(2)} MB → ${(r.bytesAfter / 1e6).toFixed(2)} MB`,
      );
    const p = r.replica;
    log(
      `gc: ${r.checkpointsDeleted} checkpoint(s) removed (${r.checkpointBlobsDeleted} stored value(s), ${r.writesDeleted} pending write(s)); ${r.heads} branch head(s) kept; ` +
        `revisions: ${p.revisionsDeleted} removed, ${p.revisionsKept} kept, ${p.treesDeleted} tree(s) and ${p.blobsDeleted} blob(s) removed, ${(p.bytesFreed / 1e6).toFixed(2)} MB freed`,
    );
    for (const s of r.skipped)
      log(
        `  left whole: ${s.thread} (${s.status}: it may be running${s.status === "unknown" ? "; --stale-hours prunes it once it has been silent that long" : ""})`,
      );
  });
}
