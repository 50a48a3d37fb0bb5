import path from "node:path";
import { checkpointHistory } from "../ledger/checkpoints.js";
import { CliError } from "../errors.js";
import type { LedgerEvent } from "../events.js";
import { openExistingState, requireThread, stateUrlOf, whereCheckpointsAre, type WorkspaceArgs } from "../ledger/open-state.js";
import type { FileDiffStat } from "../workspace/revisions.js";
import { pickCheckpoint, TimeTravelError } from "./time-travel-error.js";

// `diff` only reads: two checkpoints' workspace revisions and the revision store. On the SQLite
// state it reads them straight from the tables (ledger/checkpoints.ts), without a runtime, so it
// loads neither LangGraph nor the tokenizer nor the sandbox; on PostgreSQL it goes through the
// runtime's ports (runs/time-travel.ts), which pull a revision made elsewhere from the replica.

/** What `diff` compares: two checkpoints of a run (default its first and its latest). */
export interface DiffArgs extends WorkspaceArgs {
  /** Default: the run's first checkpoint. */
  from?: string;
  /** Default: the run's latest checkpoint. */
  to?: string;
  stat?: boolean;
}

/** The revisions compared, and the unified diff or (with `stat`) the per-file line counts. */
export type DiffResult = { from: string; to: string; diff: string } | { from: string; to: string; stat: FileDiffStat[] };

/** File changes between two checkpoints of a run. */
export async function diffRun(thread: string, args: DiffArgs): Promise<DiffResult> {
  if (stateUrlOf(args)) return diffThroughRuntime(thread, args);
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
    if (!st.runs.hasCheckpoints(thread)) {
      throw new CliError(
        `${whereCheckpointsAre(st, thread)}; this command needs them here (inspect the run with threads, history, ledger, report, context)`,
        1,
        "CHECKPOINTS_ELSEWHERE",
      );
    }
    const rows = checkpointHistory(st.db, thread);
    if (rows.length === 0) throw new CliError(`run ${thread} has no checkpoints to compare`, 1, "NOT_FOUND");
    const revisionAt = async (idOrPrefix: string | undefined, fallback: (typeof rows)[number]): Promise<string> => {
      const row = idOrPrefix === undefined ? fallback : pickCheckpoint(rows, (r) => r.checkpointId, thread, idOrPrefix);
      const own = row.values.workspaceRev;
      if (typeof own === "string" && own) return own;
      // Checkpoints before the first plan have none: the revision the run started from.
      const spec = (await st.ledger.list(thread, { types: ["task_spec"] }))[0] as LedgerEvent<"task_spec"> | undefined;
      if (!spec?.payload.revision) throw new TimeTravelError("NO_REVISION", `thread ${thread} has no workspace revision recorded yet`);
      return spec.payload.revision;
    };
    const from = await revisionAt(args.from, rows.at(-1)!);
    const to = await revisionAt(args.to, rows[0]!);
    const { RevisionStore } = await import("../workspace/revisions.js");
    const revisions = new RevisionStore(st.db, st.workspace, { blobsDir: path.join(st.stateDir, "blobs") });
    return args.stat ? { from, to, stat: await revisions.diff(from, to, { stat: true }) } : { from, to, diff: await revisions.diff(from, to) };
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}

async function diffThroughRuntime(thread: string, args: DiffArgs): Promise<DiffResult> {
  const [{ checkpointsOf, diffCheckpoints }, { runtimeForThread }] = await Promise.all([import("./time-travel.js"), import("./thread-runtime.js")]);
  const rt = await runtimeForThread(thread, args, { postgres: true });
  try {
    let { from, to } = args;
    if (from === undefined || to === undefined) {
      const all = await checkpointsOf(rt, thread); // newest first
      if (all.length === 0) throw new CliError(`run ${thread} has no checkpoints to compare`, 1, "NOT_FOUND");
      from ??= all.at(-1)!.checkpoint.id;
      to ??= all[0]!.checkpoint.id;
    }
    return await diffCheckpoints(rt, thread, from, to, { stat: args.stat });
  } finally {
    await rt.close();
  }
}
