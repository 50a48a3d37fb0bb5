import type pg from "pg";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type { LedgerEvent } from "../events.js";
import { PgLedger } from "../ledger/pg-ledger.js";
import type { Runtime } from "../runtime.js";
import { MaterialiseError } from "./materialise.js";

/**
 * The workspace revision a queued run continues from: its newest checkpoint's `workspaceRev`, or,
 * before any step recorded one, the revision its task_spec started from; null for a run that has
 * not started.
 */
export async function lastRevision(pool: pg.Pool, thread: string): Promise<string | null> {
  const has = await pool.query("SELECT to_regclass('checkpoints') AS t");
  if (has.rows[0]?.t) {
    const tuple = await new PostgresSaver(pool).getTuple({ configurable: { thread_id: thread, checkpoint_ns: "" } });
    const rev = (tuple?.checkpoint.channel_values as { workspaceRev?: string | null } | undefined)?.workspaceRev;
    if (rev) return rev;
  }
  const spec = (await new PgLedger(pool).list(thread, { types: ["task_spec"], limit: 1 }))[0] as LedgerEvent<"task_spec"> | undefined;
  return spec?.payload.revision ?? null;
}

/**
 * Writes revision `rev` into the runtime's (freshly cloned, empty) workspace from the PostgreSQL
 * revision store, so the run continues on the files its last checkpoint recorded.
 */
export async function restoreRevision(rt: Runtime, rev: string): Promise<void> {
  const replica = rt.revisionReplica;
  if (!replica) throw new MaterialiseError(`run continues from revision ${rev.slice(0, 12)}, but this state keeps no revisions in PostgreSQL`);
  await replica.pull(rt.revisions, rev);
  await rt.revisions.restore(rev);
}
