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

// Typed read access to what the CLI shows, and the time-travel commands.
export type { WorkspaceArgs } from "./ledger/open-state.js";
export { listThreads, type ThreadRow } from "./inspect/threads.js";
export { getHistory, type HistoryRow } from "./inspect/history.js";
export { getLedgerEvents, type LedgerArgs } from "./inspect/ledger.js";
export { getContext, type ContextArgs, type ContextReport } from "./inspect/context.js";
export { getReport } from "./inspect/report.js";
export type { RunReport } from "./report/report.js";
export { forkThread, replayThread, rewindThread, type ForkArgs, type ReplayArgs, type RewindArgs } from "./runs/thread-time-travel.js";
export { deleteThread, type DeleteArgs, type DeleteReport } from "./runs/delete.js";
// The queue's run control and fleet, for scripts and services holding the state URL (as the CLI's cancel, requeue and workers).
export { cancelSubmittedRun, requeueSubmittedRun } from "./runs/run-control.js";
export { listWorkers, type WorkerRow } from "./inspect/workers.js";
export type { CancelResult } from "./queue/run-control.js";
export { TimeTravelError } from "./runs/time-travel-error.js";
export type { Divergence, ForkResult, ReplayResult, RewindResult } from "./runs/time-travel.js";

export { CliError, ConfigError, LedgerError, LedgerloopError, ModelError, StateStoreError } from "./errors.js";
