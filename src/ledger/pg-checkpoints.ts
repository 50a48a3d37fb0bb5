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

  // newVersions must reach PostgresSaver: it stores only the channels that changed (the validation
  // suite caught a first version of this wrapper that dropped it).
  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const saved = await super.put(config, checkpointRedaction.checkpoint(this.redactor, checkpoint), checkpointRedaction.metadata(this.redactor, metadata), newVersions);
    failpoint("checkpoint-put");
    return saved;
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return super.putWrites(config, checkpointRedaction.writes(this.redactor, writes), taskId);
  }
}
