import type { Agent } from "./agent-session.js";
import { validateOptions, type OpenAgentOptions } from "./agent-options.js";

// The package's entry point for scripts. Importing it loads zod only: LangGraph, LangChain and the
// runtime (agent-session.ts) are loaded by the first openAgent call, after the options are checked.

export { InvalidOptionError, type OpenAgentOptions } from "./agent-options.js";
export type { Agent, AgentRunResult, CodingAgentGraph } from "./agent-session.js";

/**
 * Opens an agent on a workspace: validates the options (throwing InvalidOptionError before anything
 * runs), builds the runtime (state database, sandbox, retriever) and the checkpointed graph.
 */
export async function openAgent(options: OpenAgentOptions): Promise<Agent> {
  const { settings, model } = await validateOptions(options);
  const { openSession } = await import("./agent-session.js");
  return openSession(options, settings, model);
}
