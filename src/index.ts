// ledgerloop's public API (`import … from "ledgerloop"`). The inspection functions are the very
// handlers the CLI commands call, so a script and `ledgerloop history` cannot disagree.
// Importing it loads zod and little else: what needs LangGraph or LangChain loaded is either loaded
// on first use (openAgent, createRuntime, the time-travel functions) or lives under a subpath:
// `ledgerloop/graph` (createCodingAgent, recursionLimitFor, graph) and `ledgerloop/models`.

export { openAgent, InvalidOptionError, type Agent, type AgentRunResult, type CodingAgentGraph, type OpenAgentOptions } from "./api/agent.js";
export { createRuntime } from "./api/runtime.js";
export type { ProgressEvent, Runtime, RuntimeOverrides } from "./runtime.js";
export { RunSettings, type RunSettingsInput } from "./settings.js";
export type { ToolCallingChatModel } from "./models/langchain.js";
export type { ChatMessage, ChatModel, ModelRequest, ModelResponse } from "./models/port.js";
export type { ApprovalRequest } from "./agent/nodes/act.js";

// The graph state and the ledger event schemas (zod), with their types under the same names.
export * from "./state.js";

// Typed read access to what the CLI shows, the time-travel commands and the queue's run control,
// each loaded on its first call.
export {
  cancelSubmittedRun,
  deleteThread,
  forkThread,
  getContext,
  getHistory,
  getLedgerEvents,
  getReport,
  listThreads,
  listWorkers,
  replayThread,
  requeueSubmittedRun,
  rewindThread,
} from "./api/inspection.js";
export type { WorkspaceArgs } from "./ledger/open-state.js";
export type { ThreadRow } from "./inspect/threads.js";
export type { HistoryRow } from "./inspect/history.js";
export type { LedgerArgs } from "./inspect/ledger.js";
export type { ContextArgs, ContextReport } from "./inspect/context.js";
export type { RunReport } from "./report/report.js";
export type { ForkArgs, ReplayArgs, RewindArgs } from "./runs/thread-time-travel.js";
export type { DeleteArgs, DeleteReport } from "./runs/delete.js";
export type { WorkerRow } from "./inspect/workers.js";
export type { CancelResult } from "./queue/run-control.js";
export { TimeTravelError } from "./runs/time-travel-error.js";
export type { Divergence, ForkResult, ReplayResult, RewindResult } from "./runs/time-travel.js";

export { CliError, ConfigError, LedgerError, LedgerloopError, ModelError, StateStoreError } from "./errors.js";
