import type { Command } from "commander";
import type { GcReport } from "../ledger/maintenance.js";
import { acquireLease, workspaceScope } from "../ledger/lease.js";
import path from "node:path";
import { CliError } from "../errors.js";
import type { PgGcReport } from "../ledger/pg-maintenance.js";
import { intOption, log, printJson, stateOption, wholeNumberOption, workspaceOptions } from "./common.js";
import { openExistingState, stateUrlOf, type WorkspaceArgs } from "../ledger/open-state.js";
import { declareCommand } from "./command-specs.js";

export interface GcArgs extends WorkspaceArgs {
  keepLast?: number;
  state?: string;
  graceMinutes?: number;
  staleHours?: number;
}

/** gc of a PostgreSQL state: prunes checkpoints of runs that are not running and sweeps the revision replica. */
export async function handlePgGc(url: string, args: GcArgs): Promise<PgGcReport> {
  const [{ openPgState }, { collectPgGarbage }] = await Promise.all([import("../ledger/pg-db.js"), import("../ledger/pg-maintenance.js")]);
  const st = await openPgState(url, { max: 3 });
  try {
    return await collectPgGarbage(st.pool, {
      ...(args.keepLast !== undefined ? { keepLast: args.keepLast } : {}),
      ...(args.graceMinutes !== undefined ? { graceMs: args.graceMinutes * 60_000 } : {}),
      ...(args.staleHours !== undefined ? { staleMs: args.staleHours * 3_600_000 } : {}),
    });
  } finally {
    await st.close();
  }
}

/** Prunes old checkpoints and unreferenced workspace blobs. */
export async function handleGc(args: GcArgs): Promise<GcReport> {
  const [{ collectGarbage }, { RevisionStore }] = await Promise.all([import("../ledger/maintenance.js"), import("../workspace/revisions.js")]);
  const st = await openExistingState(args, { write: true });
  // gc deletes checkpoints and blobs: never while a run writes the workspace.
  let lease: ReturnType<typeof acquireLease> | undefined;
  try {
    lease = acquireLease(st.db, [workspaceScope(st.workspace)], { command: "gc" });
    const revisions = new RevisionStore(st.db, st.workspace, { blobsDir: path.join(st.stateDir, "blobs") });
    return await collectGarbage(st.db, revisions, st.stateDir, { keepLast: args.keepLast });
  } catch (err) {
    throw st.named(err);
  } finally {
    lease?.release();
    st.close();
  }
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
    const url = stateUrlOf(opts);
    if (url) {
      const r = await handlePgGc(url, opts);
      if (opts.json) return printJson(r);
      const p = r.replica;
      log(
        `gc: ${r.checkpointsDeleted} checkpoint(s) removed (${r.checkpointBlobsDeleted} stored value(s), ${r.writesDeleted} pending write(s)); ${r.heads} branch head(s) kept; ` +
          `revisions: ${p.revisionsDeleted} removed, ${p.revisionsKept} kept, ${p.treesDeleted} tree(s) and ${p.blobsDeleted} blob(s) removed, ${(p.bytesFreed / 1e6).toFixed(2)} MB freed`,
      );
      for (const s of r.skipped)
        log(
          `  left whole: ${s.thread} (${s.status}: it may be running${s.status === "unknown" ? "; --stale-hours prunes it once it has been silent that long" : ""})`,
        );
      return;
    }
    if (opts.graceMinutes !== undefined)
      throw new CliError("--grace-minutes applies to a PostgreSQL state (--state); a local gc has no pushes to wait for", 2, "CONFIG_INVALID");
    if (opts.staleHours !== undefined)
      throw new CliError("--stale-hours applies to a PostgreSQL state (--state); a local gc runs while no run writes the workspace", 2, "CONFIG_INVALID");
    const r = await handleGc(opts);
    if (opts.json) return printJson(r);
    log(
      `gc: ${r.checkpointsDeleted} checkpoint(s) and ${r.revisionsDeleted} revision(s) / ${r.blobsDeleted} blob(s) removed; ${r.heads} branch head(s) kept; ${(r.bytesBefore / 1e6).toFixed(2)} MB → ${(r.bytesAfter / 1e6).toFixed(2)} MB`,
    );
  });
}
