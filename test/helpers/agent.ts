import type { RunnableConfig } from "@langchain/core/runnables";
import type { Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { createCodingAgent, recursionLimitFor } from "../../src/agent/graph.js";
import type { ChatMessage } from "../../src/models/port.js";
import { ScriptedModel, type Trajectory } from "../../src/models/scripted.js";
import { createRuntime, RedactingSqliteSaver, type Runtime, type RuntimeOverrides } from "../../src/runtime.js";
import type { RunSettingsInput } from "../../src/settings.js";
import type { LedgerEvent, TaskStateValue } from "../../src/state.js";

/**
 * Remembers every checkpoint object it saved with its serialized form, so a test can prove no node
 * mutated state in place after it was checkpointed (which would silently corrupt time travel).
 */
export class GuardedSaver extends RedactingSqliteSaver {
  private readonly saved: Array<{ ref: Checkpoint; json: string }> = [];

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    this.saved.push({ ref: checkpoint, json: JSON.stringify(checkpoint.channel_values) });
    return super.put(config, checkpoint, metadata);
  }

  /** Throws if any checkpoint's values changed after they were saved. */
  verify(): number {
    for (const s of this.saved) {
      const now = JSON.stringify(s.ref.channel_values);
      if (now !== s.json) throw new Error(`checkpoint ${s.ref.id} was mutated after it was saved:\nbefore ${s.json}\nafter  ${now}`);
    }
    return this.saved.length;
  }
}

export interface TestAgent {
  rt: Runtime;
  model: ScriptedModel;
  saver: GuardedSaver;
  run(goal: string | null, thread?: string): Promise<TaskStateValue>;
  events(thread?: string): Promise<LedgerEvent[]>;
  /** The messages of the decide request for 1-based step n. */
  decidePrompt(step: number): ChatMessage[];
  close(): Promise<void>;
}

/** A runtime on `workspace` driven by a scripted trajectory, with the mutation-guarded checkpointer. */
export async function testAgent(
  workspace: string,
  trajectory: Trajectory,
  settings: Partial<RunSettingsInput> = {},
  overrides: Omit<RuntimeOverrides, "model"> = {},
): Promise<TestAgent> {
  const model = new ScriptedModel(trajectory);
  // A plain file scan unless a test asks for the hybrid retriever: it starts a Chroma server per runtime.
  const rt = await createRuntime({ workspace, model: "scripted:test", retrieval: "lexical", ...settings }, { ...overrides, model });
  const saver = new GuardedSaver(rt.db, rt.redactor);
  rt.checkpointer = saver;
  const agent = createCodingAgent({ runtime: rt });
  return {
    rt,
    model,
    saver,
    async run(goal, thread = "t1") {
      await agent.invoke(goal === null ? null : { goal }, {
        configurable: { thread_id: thread },
        recursionLimit: recursionLimitFor(rt.settings.maxSteps),
        durability: "sync",
      });
      return (await agent.getState({ configurable: { thread_id: thread } })).values as TaskStateValue;
    },
    events: (thread = "t1") => rt.ledger.list(thread),
    decidePrompt(step) {
      const req = model.requests.find((r) => r.node === "decide" && r.turn === step - 1);
      if (!req) throw new Error(`no decide request for step ${step}`);
      return req.messages;
    },
    close: () => rt.close(),
  };
}

/** All text of a prompt, for "does the model see X" assertions. */
export function promptText(messages: ChatMessage[]): string {
  return messages.map((m) => m.content + ("toolCalls" in m && m.toolCalls ? JSON.stringify(m.toolCalls) : "")).join("\n");
}
