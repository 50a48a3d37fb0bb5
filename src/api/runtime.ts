import type { Runtime, RuntimeOverrides } from "../runtime.js";
import type { RunSettingsInput } from "../settings.js";

/** Builds a runtime (state database, sandbox, retriever, model) for `createCodingAgent`; the runtime module loads on the first call. */
export async function createRuntime(input: RunSettingsInput, overrides: RuntimeOverrides = {}): Promise<Runtime> {
  const runtime = await import("../runtime.js");
  return runtime.createRuntime(input, overrides);
}
