import { ConfigError } from "../errors.js";
import type { ToolCallingChatModel } from "../models/langchain.js";
import type { ChatModel } from "../models/port.js";
import type { ProgressEvent } from "../runtime.js";
import { RunSettings, type RunSettingsInput } from "../settings.js";

// openAgent's options and their checks: zod only, so that importing the package stays light and a
// bad option is refused before LangGraph, LangChain or the runtime are loaded.

/** Options of openAgent: the run settings, with `model` also accepting a LangChain chat model instance. */
export type OpenAgentOptions = Omit<RunSettingsInput, "model"> & {
  /** `openai:<name>`, `scripted:<trajectory.json>`, or any LangChain chat model with tool calling. */
  model: string | ToolCallingChatModel;
  /** Called with each node's progress line (nothing is printed otherwise). */
  onProgress?: (e: ProgressEvent) => void;
  /** Called with warnings (retrieval degraded, weaker isolation than asked). */
  onWarning?: (message: string) => void;
  /**
   * Work on a throwaway copy of the workspace (reflink where possible): the workspace is not
   * written; each run's result carries the diff it would apply, which `ledgerloop apply <thread>`
   * (or `applyDryRun`) applies.
   */
  dryRun?: boolean;
};

/** An option that is not a valid run setting; `field` names it. */
export class InvalidOptionError extends ConfigError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const API_ONLY = new Set(["onProgress", "onWarning", "dryRun"]);

/** Validates the options with the one settings schema; the first problem names its field. */
export async function validateOptions(options: OpenAgentOptions): Promise<{ settings: RunSettingsInput; model: ChatModel | undefined }> {
  if (typeof options !== "object" || options === null)
    throw new InvalidOptionError("(options)", "openAgent needs an options object with at least workspace and model");
  const { model, ...rest } = options;
  if (model === undefined)
    throw new InvalidOptionError("model", "invalid setting model: give a model string (openai:<name>, scripted:<file>) or a LangChain chat model");
  let instance: ChatModel | undefined;
  if (typeof model !== "string") {
    // A model instance means the caller has LangChain loaded already; the adapter comes with it.
    const { chatModelFromInstance } = await import("../models/langchain.js");
    try {
      instance = chatModelFromInstance(model);
    } catch (err) {
      throw new InvalidOptionError("model", (err as Error).message);
    }
  }
  const settings = Object.fromEntries(Object.entries(rest).filter(([k]) => !API_ONLY.has(k))) as Omit<RunSettingsInput, "model">;
  const candidate = { ...settings, model: instance ? instance.name : (model as string) };
  const parsed = RunSettings.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const keys = (issue as { keys?: string[] }).keys;
    const field = keys?.length ? keys.join(", ") : issue.path.join(".") || "(options)";
    throw new InvalidOptionError(field, `invalid setting ${field}: ${issue.message}`);
  }
  if (options.dryRun !== undefined && typeof options.dryRun !== "boolean") throw new InvalidOptionError("dryRun", "invalid setting dryRun: expected a boolean");
  return { settings: candidate, model: instance };
}
