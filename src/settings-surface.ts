import type { RunSettings } from "./settings.js";

// Where each run setting can be given besides openAgent's options, declared once next to the
// settings schema (settings.ts: type, default, description). The CLI's setting flags
// (cli/setting-flags.ts) and the configuration reference (docs/configuration.md, made by
// `npm run docs`) are generated from these declarations; a test fails when the docs disagree.

/** Where one setting comes from besides openAgent's options. */
export interface SettingSurface {
  /** CLI flag of `run` (and of the commands listed in `commands`); false: none. Default: --kebab-case of the key. */
  flag?: string | false;
  /** Environment variable read when nothing else set it. */
  env?: string;
  /** Key in ledgerloop.config.json (dotted path). */
  config?: string;
}

/** Every run setting's surfaces (every key listed, so a new setting cannot be forgotten here). */
export const SETTING_SURFACES: { readonly [K in keyof RunSettings]-?: SettingSurface } = {
  workspace: { flag: "--workspace", env: "LEDGERLOOP_WORKSPACE" },
  stateDir: { flag: "--state-dir", env: "LEDGERLOOP_STATE_DIR" },
  stateUrl: { flag: "--state", env: "LEDGERLOOP_STATE_URL" },
  model: { env: "LEDGERLOOP_MODEL" },
  summaryModel: { config: "summaryModel" },
  maxSteps: {},
  toolCallFormat: {},
  budgetTokens: { flag: "--budget" },
  failureStreakLimit: { flag: false },
  proseStreakLimit: { flag: false },
  repeatLimit: { flag: false },
  summarizeThresholdTokens: { flag: false },
  sandbox: {},
  approve: {},
  allowNetwork: { config: "sandbox.network" },
  retrieval: {},
  vectors: {},
  embedder: {},
  history: { flag: false },
  promptLayout: { flag: false },
  maxCostUsd: { flag: "--max-cost" },
  maxTokens: {},
  recentTurns: { flag: false },
  commandTimeoutMs: { flag: false },
  testTimeoutMs: { flag: false },
  outputCapBytes: { flag: false },
  historyPerFile: { flag: false },
  historyMaxCommits: { flag: false },
  allow: { config: "sandbox.policy.allow" },
  vectorLine: { flag: false },
};

/** The flag of a setting, or null when it has none. */
export function flagOf(key: keyof RunSettings): string | null {
  const f = SETTING_SURFACES[key].flag;
  if (f === false) return null;
  return f ?? `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** Environment variables ledgerloop reads that are not run settings, with what they do. */
export const OTHER_ENVIRONMENT: ReadonlyArray<{ name: string; what: string }> = [
  { name: "LEDGERLOOP_MODEL_TIMEOUT_MS", what: "Timeout of one model call, in ms." },
  { name: "LEDGERLOOP_MODEL_RETRIES", what: "Retries of a failed model or embeddings call (default 2)." },
  { name: "LEDGERLOOP_MODEL_RETRY_BASE_MS", what: "First backoff between model call retries, in ms; doubles each retry." },
  { name: "LEDGERLOOP_TEMPERATURE", what: "Sampling temperature of openai: models (0 to 2)." },
  { name: "LEDGERLOOP_EMBEDDINGS_BASE_URL", what: "Base URL (ending in /v1) of the openai: embedder (else OPENAI_BASE_URL)." },
  { name: "LEDGERLOOP_EMBEDDINGS_API_KEY", what: "API key of the openai: embedder (else OPENAI_API_KEY)." },
  { name: "LEDGERLOOP_MODELS_DIR", what: "Where xenova: embedder models are cached (default <stateDir>/models)." },
  { name: "LEDGERLOOP_CHROMA_IDLE_SECONDS", what: "Seconds after which an idle Chroma server started by ledgerloop stops (0: never)." },
  { name: "LEDGERLOOP_LEASE_TTL_MS", what: "How long a run's lease holder on another machine keeps it without renewing (default 30 s)." },
  { name: "LEDGERLOOP_LEASE_HEARTBEAT_MS", what: "How often a lease holder renews its lease (default 5 s)." },
  { name: "LEDGERLOOP_DRY_RUNS", what: "Where dry runs keep their copies and records (default <tmp>/ledgerloop-dry-runs)." },
  { name: "LEDGERLOOP_RECORD_REQUESTS", what: "A file the CLI's run and resume append every model request to (JSON lines), for debugging." },
  { name: "LEDGERLOOP_DEBUG", what: "Print the stack of an unexpected CLI error." },
  { name: "LEDGERLOOP_FAILPOINT", what: "Test only: <name>:<n> crashes the process at a named point (crash-and-resume tests)." },
  { name: "LEDGERLOOP_COMMAND", what: "Set by ledgerloop in each command's environment: the tag that finds the command's leftover processes." },
  { name: "LEDGERLOOP_TOOL_INPUT", what: "Set by ledgerloop for a project tool: its JSON arguments." },
  { name: "LEDGERLOOP_TOOL_NAME", what: "Set by ledgerloop for a project tool: its name." },
];
