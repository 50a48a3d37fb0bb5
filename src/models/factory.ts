import path from "node:path";
import { ConfigError, ModelError } from "../errors.js";
import { OpenAIChatModel } from "./openai.js";
import type { ChatModel } from "./port.js";
import { ScriptedModel, loadTrajectory } from "./scripted.js";

export interface ModelFactoryOptions {
  env?: NodeJS.ProcessEnv;
  /** Where a scripted model appends the requests it receives (JSON lines). */
  recordFile?: string;
  /** Told before each retry wait of a model call (progress lines). */
  onRetry?: (info: { attempt: number; delayMs: number; fault: { kind: string; status?: number } }) => void;
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
    const baseURL = env.OPENAI_BASE_URL || undefined;
    // OpenAI itself always needs a key; local servers (a base URL of their own) often need none.
    if (!env.OPENAI_API_KEY && (!baseURL || /^https:\/\/api\.openai\.com(\/|$)/.test(baseURL))) {
      throw new ModelError(
        "MODEL_NO_API_KEY",
        `no API key for ${spec}: OPENAI_API_KEY is not set (for a local OpenAI-compatible server, set OPENAI_BASE_URL to it instead)`,
      );
    }
    return new OpenAIChatModel({
      model: rest,
      apiKey: env.OPENAI_API_KEY,
      baseURL,
      temperature: numberFromEnv(env, "LEDGERLOOP_TEMPERATURE", { min: 0, max: 2 }),
      timeoutMs: numberFromEnv(env, "LEDGERLOOP_MODEL_TIMEOUT_MS", { min: 100, max: 3_600_000, int: true }),
      maxRetries: numberFromEnv(env, "LEDGERLOOP_MODEL_RETRIES", { min: 0, max: 20, int: true }),
      retryBaseMs: numberFromEnv(env, "LEDGERLOOP_MODEL_RETRY_BASE_MS", { min: 1, max: 600_000, int: true }),
      onRetry: opts.onRetry,
    });
  }
  if (kind === "langchain") {
    // The name a LangChain model instance was recorded under (see langchain.ts): no command line
    // can rebuild the instance, so say how to give it again.
    throw new ModelError(
      "MODEL_UNKNOWN",
      `the run was started with a LangChain model instance (${spec}), which cannot be rebuilt from the command line: resume it from your script with openAgent({ ..., model: <the instance> }).resume(thread), or give a model here with --model openai:<name>`,
    );
  }
  throw new ModelError(
    "MODEL_UNKNOWN",
    `unknown model "${spec}": use openai:<model-name> (OPENAI_BASE_URL for other OpenAI-compatible servers) or scripted:<trajectory.json>`,
  );
}

/**
 * A numeric setting from the environment: unset or empty means the default; anything else must be
 * a number in range, or the run does not start (a typo must not silently mean "no timeout").
 */
function numberFromEnv(env: NodeJS.ProcessEnv, name: string, range: { min: number; max: number; int?: boolean }): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || (range.int && !Number.isInteger(n)) || n < range.min || n > range.max) {
    throw new ConfigError(
      `${name}=${JSON.stringify(raw.slice(0, 40))} is not valid: expected ${range.int ? "an integer" : "a number"} from ${range.min} to ${range.max}`,
    );
  }
  return n;
}
