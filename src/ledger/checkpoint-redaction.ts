import type { Checkpoint, CheckpointMetadata, PendingWrite } from "@langchain/langgraph-checkpoint";
import type { Redactor } from "../secrets.js";

/**
 * The redaction every checkpoint saver of ledgerloop applies before anything is stored (a token
 * pasted into a goal must not end up on disk or in a shared database). Used by RedactingSqliteSaver
 * (runtime.ts) and RedactingPostgresSaver (pg-checkpoints.ts), so both backends store the same thing.
 * Kept free of database imports: every command loads it.
 */
export const checkpointRedaction = {
  checkpoint: (r: Redactor, checkpoint: Checkpoint): Checkpoint => r.redactDeep(checkpoint),
  metadata: (r: Redactor, metadata: CheckpointMetadata): CheckpointMetadata => r.redactDeep(metadata),
  writes: (r: Redactor, writes: PendingWrite[]): PendingWrite[] => writes.map(([channel, value]) => [channel, r.redactDeep(value)] as PendingWrite),
};
