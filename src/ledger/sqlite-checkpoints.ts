import type { Database } from "../sqlite/driver.js";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { Checkpoint, CheckpointMetadata, PendingWrite } from "@langchain/langgraph-checkpoint";
import { SqliteCheckpointSaver } from "./sqlite-saver.js";
import { failpoint } from "../failpoints.js";
import { checkpointRedaction } from "./checkpoint-redaction.js";
import type { Redactor } from "../secrets.js";

/**
 * The SQLite checkpointer, redacting secrets from every checkpoint and pending write before they are stored:
 * a token pasted into a goal must not end up on disk (the same redaction as RedactingPostgresSaver).
 */
export class RedactingSqliteSaver extends SqliteCheckpointSaver {
  constructor(
    db: Database,
    private readonly redactor: Redactor,
  ) {
    super(db);
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    const saved = await super.put(config, checkpointRedaction.checkpoint(this.redactor, checkpoint), checkpointRedaction.metadata(this.redactor, metadata));
    failpoint("checkpoint-put");
    return saved;
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    return super.putWrites(config, checkpointRedaction.writes(this.redactor, writes), taskId);
  }
}
