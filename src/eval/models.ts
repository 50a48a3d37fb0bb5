import { createModel } from "../models/factory.js";
import type { ChatModel, ModelRequest, ModelResponse } from "../models/port.js";
import { TextToolCallModel } from "../models/text-tools.js";
import { EvalSuiteError, type EvalTask } from "./task.js";
import { TEST_SERVER_MODEL } from "./test-server.js";

// The model of one task run. `--model` takes what `ledgerloop run --model` takes, plus names of its
// own: `oracle` (each task's oracle.json, a scripted trajectory that solves it) and `nothing` (a
// model that never calls a tool), which together show that the hidden tests discriminate, and
// `test-server[:SEED]` (the oracle played over HTTP by test-server.ts, misbehaving as real models do).

/** What the eval's models answer when the model is `nothing`. */
export const NOTHING_ANSWER = "I have read the task. I will not change anything.";

/**
 * A model that answers every request with prose and no tool call: the bounded do-nothing
 * behaviour of the model-behaviour contract (ledgerloop stops it as no_progress; a plain loop ends
 * at its first answer without a tool call).
 */
export class NothingModel implements ChatModel {
  readonly name = "nothing";
  async invoke(_req: ModelRequest): Promise<ModelResponse> {
    return { content: NOTHING_ANSWER, toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 } };
  }
}

/** How a task run gets its model: a spec the runtime builds (as `run --model`), or an instance. */
export type TaskModel = { spec: string; instance?: undefined } | { spec: string; instance: ChatModel };

/** The seed of a `test-server[:SEED]` model spec, or null for any other spec. */
export function testServerSeed(spec: string): number | null {
  const m = /^test-server(?::(.*))?$/.exec(spec);
  if (!m) return null;
  if (m[1] === undefined) return 1;
  if (!/^\d{1,9}$/.test(m[1])) throw new EvalSuiteError(`--model ${spec}: the test server's seed must be a whole number, as in test-server:2`);
  return Number(m[1]);
}

/**
 * The model of `task` for the eval's `--model` value; `oracle` and `test-server` need the task's
 * oracle.json, and `test-server` the URL of the server the eval started (`endpoint`).
 */
export function taskModel(spec: string, task: EvalTask, endpoint?: string): TaskModel {
  if (spec === "oracle" || testServerSeed(spec) !== null) {
    if (!task.oracleFile) throw new EvalSuiteError(`task ${task.dir}: --model ${spec} needs an oracle.json trajectory in the task folder`);
    if (spec === "oracle") return { spec: `scripted:${task.oracleFile}` };
    if (!endpoint) throw new EvalSuiteError(`--model ${spec} is played by the server that ledgerloop eval starts; it has no address here`);
    // The same OpenAI adapter a user's `--model openai:<name>` gets, pointed at the server.
    const env = { ...process.env, OPENAI_BASE_URL: endpoint, OPENAI_API_KEY: "test-server" };
    return { spec, instance: createModel(`openai:${TEST_SERVER_MODEL}`, { env }) };
  }
  if (spec === "nothing") return { spec, instance: new NothingModel() };
  return { spec };
}

/** A fresh model instance for a loop that does not go through the runtime (the plain baseline). */
export function chatModelOf(m: TaskModel, toolCallFormat: "native" | "text" = "native"): ChatModel {
  const model = m.instance ?? createModel(m.spec);
  return toolCallFormat === "text" ? new TextToolCallModel(model) : model;
}

/** The label of an eval's model in reports. */
export function modelLabel(spec: string): string {
  return spec.startsWith("scripted:") ? `scripted:${spec.slice(9).split("/").pop()}` : spec;
}
