import { randomInt } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { ChannelVersions, Checkpoint, CheckpointMetadata, PendingWrite } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import type pg from "pg";
import { failpoint } from "../failpoints.js";
import type { Redactor } from "../secrets.js";
import { checkpointRedaction } from "./checkpoint-redaction.js";

/** LangGraph's official PostgresSaver with the same redaction (and crash failpoint) as the SQLite saver. */
export class RedactingPostgresSaver extends PostgresSaver {
  constructor(
    pool: pg.Pool,
    private readonly redactor: Redactor,
    options: { schema?: string } = {},
  ) {
    super(pool, undefined, options);
  }

  /**
   * One more than `current`'s whole part plus a random fraction, never a plain `current + 1`.
   * PostgresSaver keys the channel values of every checkpoint of a thread by (channel, version) and
   * never overwrites one: with integer versions, a checkpoint written on top of an older one (rewind's
   * updateState) takes versions the thread's later checkpoints already used, and gets their values
   * (rewound to a checkpoint before `act`, the run's head had no next node). The fraction makes each
   * new version its own, as Python's PostgresSaver does; versions stay numbers, so they still compare
   * with the integer ones of runs checkpointed before this.
   */
  override getNextVersion(current: number | undefined): number {
    if (typeof current !== "number" && current !== undefined) return super.getNextVersion(current);
    return Math.floor(current ?? 0) + 1 + randomInt(1, 2 ** 32) / 2 ** 32;
  }

  // newVersions must reach PostgresSaver: it stores only the channels that changed (the validation
  // suite caught a first version of this wrapper that dropped it).
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const saved = await super.put(
      config,
      checkpointRedaction.checkpoint(this.redactor, checkpoint),
      checkpointRedaction.metadata(this.redactor, metadata),
      newVersions,
    );
    failpoint("checkpoint-put");
    return saved;
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return super.putWrites(config, checkpointRedaction.writes(this.redactor, writes), taskId);
  }
}
