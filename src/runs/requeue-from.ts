import type pg from "pg";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { defaultRedactor } from "../secrets.js";
import { pickCheckpoint, TimeTravelError } from "./time-travel-error.js";

// `ledgerloop requeue <thread> --from <checkpoint>`: the run's head is moved to that checkpoint on
// the PostgreSQL state alone (a `time_travel` event, a new head forked from it), as `rewind` does
// without touching any files; the worker that takes the run next continues from there, and its
// files are that checkpoint's revision (resume-point.ts and the nodes' alignment restore it).

/** A checkpoint of a queued run, found and ready to become its head. */
export interface RequeuePoint {
  /** The checkpoint's full id. */
  checkpoint: string;
  /** Moves the run's head there (call with the run's queue row locked). */
  move: () => Promise<void>;
}

/** The threads (other than `thread`) that have a checkpoint with this id or id prefix. */
async function ownersOf(pool: pg.Pool, thread: string, idOrPrefix: string): Promise<string[]> {
  const r = await pool.query<{ thread_id: string }>(
    "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id <> $1 AND (checkpoint_id = $2 OR ($3 AND starts_with(checkpoint_id, $2))) ORDER BY thread_id LIMIT 3",
    [thread, idOrPrefix, idOrPrefix.length >= 6],
  );
  return r.rows.map((x) => x.thread_id);
}

/**
 * Finds checkpoint `idOrPrefix` of `thread` on the state behind `pool`; a checkpoint that is
 * unknown, or of another run, is refused in one line naming which.
 */
export async function requeuePoint(pool: pg.Pool, thread: string, idOrPrefix: string): Promise<RequeuePoint> {
  const [{ PgLedger }, { RedactingPostgresSaver }, { tableExists }, tt] = await Promise.all([
    import("../ledger/pg-ledger.js"),
    import("../ledger/pg-checkpoints.js"),
    import("../ledger/pg-db.js"),
    import("./time-travel.js"),
  ]);
  const list = `\`ledgerloop history ${thread} --state …\` lists its checkpoints`;
  const ports = { ledger: new PgLedger(pool), checkpointer: new RedactingPostgresSaver(pool, defaultRedactor) };
  // PostgresSaver's tables exist only once some run was checkpointed.
  const all = (await tableExists(pool, "checkpoints")) ? await tt.checkpointsOf(ports, thread) : [];
  if (!all.length) throw new TimeTravelError("CHECKPOINT_NOT_FOUND", `run ${thread} has no checkpoints yet (it never started); requeue it without --from`);
  let target: CheckpointTuple;
  try {
    target = pickCheckpoint(all, (t) => t.checkpoint.id, thread, idOrPrefix);
  } catch (err) {
    if ((err as TimeTravelError).code !== "CHECKPOINT_NOT_FOUND") throw err;
    const others = await ownersOf(pool, thread, idOrPrefix);
    if (others.length) throw new TimeTravelError("CHECKPOINT_NOT_FOUND", `checkpoint ${idOrPrefix} is of run ${others.join(", ")}, not of ${thread}; ${list}`);
    throw new TimeTravelError("CHECKPOINT_NOT_FOUND", `no checkpoint ${idOrPrefix} in run ${thread}; ${list}`);
  }
  const revision = await tt.revisionOf(ports, thread, target);
  return {
    checkpoint: target.checkpoint.id,
    move: async () => {
      // Read again under the row's lock: the newest checkpoint is the one the rewind event leaves.
      const latest = (await tt.checkpointsOf(ports, thread))[0] ?? null;
      await tt.moveHead(ports, thread, target, latest, revision, null);
    },
  };
}
