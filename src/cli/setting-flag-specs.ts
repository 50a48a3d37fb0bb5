// Made by `npm run docs` from src/settings.ts and src/settings-surface.ts; do not edit by hand.
// The shape and help of each setting's CLI flag, as data, so that `--help` loads no schema library.

/** One setting's flag: its argument, its kind and its help. */
export interface SettingFlagSpec {
  key: string;
  arg: string;
  kind: "boolean" | "list" | "value";
  help: string;
}

export const SETTING_FLAG_SPECS: readonly SettingFlagSpec[] = [
  {
    "key": "workspace",
    "arg": "<value>",
    "kind": "value",
    "help": "The workspace directory the agent works in (default for the LangGraph server: $LEDGERLOOP_WORKSPACE or its cwd)"
  },
  {
    "key": "stateDir",
    "arg": "<value>",
    "kind": "value",
    "help": "Where the ledger and state database live (default: <workspace>/.ledgerloop)"
  },
  {
    "key": "stateUrl",
    "arg": "<value>",
    "kind": "value",
    "help": "PostgreSQL for the ledger, checkpoints, lessons and run registry (default: $LEDGERLOOP_STATE_URL; else SQLite in stateDir)"
  },
  {
    "key": "model",
    "arg": "<value>",
    "kind": "value",
    "help": "openai:<name> or scripted:<trajectory.json> (default for the LangGraph server: $LEDGERLOOP_MODEL)"
  },
  {
    "key": "summaryModel",
    "arg": "<value>",
    "kind": "value",
    "help": "A cheaper model for plan, summarize and reflect (openai:<name> or scripted:<trajectory.json>); decide stays on `model` (default: `model` for all)"
  },
  {
    "key": "maxSteps",
    "arg": "<n>",
    "kind": "value",
    "help": "Stop after this many decide steps (default: 50)"
  },
  {
    "key": "toolCallFormat",
    "arg": "<native|text>",
    "kind": "value",
    "help": "native: the provider's tool-calling API; text: tools described in the prompt and calls parsed from the answer (<tool_call> JSON, fenced JSON), for models served without tool calling (default: \"native\")"
  },
  {
    "key": "budgetTokens",
    "arg": "<n>",
    "kind": "value",
    "help": "Prompt budget in tokens, at least 1000 (default: the model's context window minus its reserved output)"
  },
  {
    "key": "sandbox",
    "arg": "<auto|bwrap|unshare|none>",
    "kind": "value",
    "help": "Isolation of commands: the strongest available (auto), or a level by name"
  },
  {
    "key": "approve",
    "arg": "<ask|auto|deny>",
    "kind": "value",
    "help": "A command the policy wants approved: ask (pause with an interrupt Studio shows), auto (approve), deny (refuse) (default: \"ask\")"
  },
  {
    "key": "allowNetwork",
    "arg": "",
    "kind": "boolean",
    "help": "Commands may use the network (network tools and package installs allowed, not asked)"
  },
  {
    "key": "retrieval",
    "arg": "<hybrid|lexical>",
    "kind": "value",
    "help": "hybrid: n-gram index + Chroma vectors; lexical: a plain file scan, no index (default: \"hybrid\")"
  },
  {
    "key": "vectors",
    "arg": "<chroma|off>",
    "kind": "value",
    "help": "Vector side of the hybrid retriever: Chroma, or off (n-gram index only) (default: \"chroma\")"
  },
  {
    "key": "embedder",
    "arg": "<value>",
    "kind": "value",
    "help": "Embedder of the vector side: \"hashed\" (offline, no model), \"xenova:<model>\", or \"openai:<model>\" (an OpenAI-compatible /v1/embeddings) (default: \"hashed\")"
  },
  {
    "key": "maxCostUsd",
    "arg": "<n>",
    "kind": "value",
    "help": "Stop the run (status budget_exhausted, resumable) once its model calls have cost this many USD at the price table"
  },
  {
    "key": "maxTokens",
    "arg": "<n>",
    "kind": "value",
    "help": "Stop the run (status budget_exhausted, resumable) once its model calls have used this many tokens (input + output)"
  },
  {
    "key": "allow",
    "arg": "<value...>",
    "kind": "list",
    "help": "Extra allowed commands (program, or program and leading arguments)"
  }
];
