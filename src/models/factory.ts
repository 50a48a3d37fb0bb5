import path from "node:path";
import { ModelError } from "../errors.js";
import { OpenAIChatModel } from "./openai.js";
import type { ChatModel } from "./port.js";
import { ScriptedModel, loadTrajectory } from "./scripted.js";

export interface ModelFactoryOptions {
  env?: NodeJS.ProcessEnv;
  /** Where a scripted model appends the requests it receives (JSON lines). */
  recordFile?: string;
}

/** Builds a model from its spec: `openai:<name>` or `scripted:<trajectory.json>`. */
export function createModel(spec: string, opts: ModelFactoryOptions = {}): ChatModel {
  const env = opts.env ?? process.env;
  const colon = spec.indexOf(":");
  const kind = colon === -1 ? spec : spec.slice(0, colon);
  const rest = colon === -1 ? "" : spec.slice(colon + 1);
  if (kind === "scripted" && rest) {
    const file = path.resolve(rest);
    return new ScriptedModel(loadTrajectory(file), { name: `scripted:${file}`, recordFile: opts.recordFile });
  }
  if (kind === "openai" && rest) {
    return new OpenAIChatModel({
      model: rest,
      apiKey: env.OPENAI_API_KEY,
      baseURL: env.OPENAI_BASE_URL || undefined,
      temperature: env.LEDGERLOOP_TEMPERATURE ? Number(env.LEDGERLOOP_TEMPERATURE) : undefined,
    });
  }
  throw new ModelError(
    "MODEL_UNKNOWN",
    `unknown model "${spec}": use openai:<model-name> (OPENAI_BASE_URL for other OpenAI-compatible servers) or scripted:<trajectory.json>`,
  );
}
