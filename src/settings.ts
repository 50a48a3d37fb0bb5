import { z } from "zod";

// The run settings: ONE zod schema. Everything else derives from it: the graph's context schema
// (Studio's form, the SDK's `context`), the context the CLI and openAgent pass to the graph, the
// options openAgent accepts, the settings stored with a run. A new setting is one line in one of
// the two groups below: `perRun` when a client may also set it per run (it then travels in the
// graph context and shows in Studio's form), `processOnly` when only the process starting the run
// sets it (flags, config, openAgent options). A CLI flag for it is wired in src/cli/run.ts.

/**
 * Settings a client may set per run as well. Their order is the order of Studio's context form.
 * The descriptions are what that form shows.
 */
const perRun = {
  workspace: z.string().min(1).describe("The workspace directory the agent works in (default for the LangGraph server: $LEDGERLOOP_WORKSPACE or its cwd)."),
  stateDir: z.string().min(1).optional().describe("Where the ledger and state database live (default: <workspace>/.ledgerloop)."),
  stateUrl: z
    .string()
    .regex(/^postgres(ql)?:\/\//i, "must be a postgres:// or postgresql:// URL")
    .optional()
    .describe("PostgreSQL for the ledger, checkpoints, lessons and run registry (default: $LEDGERLOOP_STATE_URL; else SQLite in stateDir)."),
  model: z.string().min(1).default("scripted:").describe("openai:<name> or scripted:<trajectory.json> (default for the LangGraph server: $LEDGERLOOP_MODEL)."),
  summaryModel: z
    .string()
    .min(1)
    .optional()
    .describe(
      "A cheaper model for plan, summarize and reflect (openai:<name> or scripted:<trajectory.json>); decide stays on `model` (default: `model` for all).",
    ),
  maxSteps: z.number().int().positive().max(100_000).default(50).describe("Stop after this many decide steps."),
  toolCallFormat: z
    .enum(["native", "text"])
    .default("native")
    .describe(
      "native: the provider's tool-calling API; text: tools described in the prompt and calls parsed from the answer (<tool_call> JSON, fenced JSON), for models served without tool calling.",
    ),
  // At least 1000: the fixed part of every prompt is more than that (the 11 tool schemas alone are
  // ~1,500 tokens), so a smaller budget could only fail every step (ContextBudgetError).
  budgetTokens: z
    .number()
    .int()
    .min(1000)
    .optional()
    .describe("Prompt budget in tokens, at least 1000 (default: the model's context window minus its reserved output)."),
  failureStreakLimit: z.number().int().positive().default(3).describe("Consecutive failed steps that trigger a reflection."),
  proseStreakLimit: z
    .number()
    .int()
    .positive()
    .default(3)
    .describe("Answers without a tool call (prose, empty) in a row after which the run stops as no_progress (resumable)."),
  repeatLimit: z
    .number()
    .int()
    .positive()
    .default(3)
    .describe(
      "Steps in a row with the same calls and the same results after which the model is told and a reflection runs; twice as many stop the run as no_progress.",
    ),
  summarizeThresholdTokens: z.number().int().positive().default(8_000).describe("Unsummarised history (tokens) that triggers the summarize node."),
  sandbox: z.enum(["auto", "bwrap", "unshare", "none"]).optional().describe("Isolation of commands: the strongest available (auto), or a level by name."),
  approve: z
    .enum(["ask", "auto", "deny"])
    .default("ask")
    .describe("A command the policy wants approved: ask (pause with an interrupt Studio shows), auto (approve), deny (refuse)."),
  allowNetwork: z.boolean().optional().describe("Commands may use the network (network tools and package installs allowed, not asked)."),
  retrieval: z.enum(["hybrid", "lexical"]).default("hybrid").describe("hybrid: n-gram index + Chroma vectors; lexical: a plain file scan, no index."),
  vectors: z.enum(["chroma", "off"]).default("chroma").describe("Vector side of the hybrid retriever: Chroma, or off (n-gram index only)."),
  embedder: z
    .string()
    .min(1)
    .default("hashed")
    .describe('Embedder of the vector side: "hashed" (offline, no model), "xenova:<model>", or "openai:<model>" (an OpenAI-compatible /v1/embeddings).'),
  history: z
    .boolean()
    .default(true)
    .describe("The workspace's git history as a search source (commit messages, co-change); off for a non-git workspace anyway."),
  promptLayout: z
    .enum(["cache", "legacy"])
    .default("cache")
    .describe('Decide prompt layout: "cache" (stable prefix, append-only turn log, volatile part last, for provider prompt caches) or "legacy".'),
  maxCostUsd: z
    .number()
    .positive()
    .optional()
    .describe("Stop the run (status budget_exhausted, resumable) once its model calls have cost this many USD at the price table."),
  maxTokens: z
    .number()
    .int()
    .positive()
    .optional()
    .describe("Stop the run (status budget_exhausted, resumable) once its model calls have used this many tokens (input + output)."),
};

/** Settings only the process that starts a run sets (flags, config, openAgent options); not in the graph context. */
const processOnly = {
  recentTurns: z.number().int().min(1).max(100).default(6).describe("Turns shown in full in the prompt."),
  commandTimeoutMs: z.number().int().min(100).default(120_000).describe("Timeout of one command, in ms."),
  testTimeoutMs: z.number().int().min(100).default(300_000).describe("Timeout of one test run, in ms."),
  outputCapBytes: z
    .number()
    .int()
    .min(1024)
    .default(16 * 1024)
    .describe("Command output kept per stream, in bytes."),
  historyPerFile: z.number().int().min(1).max(1000).default(40).describe("History: newest commits remembered per file."),
  historyMaxCommits: z.number().int().min(1).max(1_000_000).default(20_000).describe("History: commits read at most (newest first)."),
  allow: z
    .array(z.string().min(1))
    .default(() => [])
    .describe("Extra allowed commands (program, or program and leading arguments)."),
  vectorLine: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe(
      'Shared Chroma (CHROMA_URL): the revision line whose vectors stay apart from other lines of the repository, e.g. the thread\'s fork root (default "main").',
    ),
};

/**
 * Run settings with their defaults; every field can come from flags, config or openAgent options,
 * the per-run ones also from the graph context.
 */
export const RunSettings = z.object({ ...perRun, ...processOnly }).strict();
export type RunSettings = z.infer<typeof RunSettings>;
export type RunSettingsInput = z.input<typeof RunSettings>;

type PerRunKey = keyof typeof perRun;
const PER_RUN_KEYS = Object.keys(perRun) as PerRunKey[];

/**
 * A settings field without its default, same checks and description. zod's `.partial()` keeps a
 * field's default (an unset `model` would become "scripted:"), but a context must leave unset what
 * the runtime decides (the server's $LEDGERLOOP_MODEL, the model's own budget).
 */
function withoutDefault(f: z.ZodType): z.ZodOptional<z.ZodType> {
  const inner = f instanceof z.ZodDefault ? (f.unwrap() as z.ZodType) : f instanceof z.ZodOptional ? (f.unwrap() as z.ZodType) : f;
  const d = f.description ?? inner.description;
  return (d ? inner.describe(d) : inner).optional();
}

/**
 * Serializable run settings: they travel in the graph's context so that the LangGraph server can
 * pass them too. `RunSettings.pick(<the per-run fields>)` with every field optional and without its
 * default: an unset one takes the runtime's default. Not strict, as before: a host may add keys.
 */
export const RunContext = z.object(
  Object.fromEntries(PER_RUN_KEYS.map((k) => [k, withoutDefault(RunSettings.shape[k])])) as {
    [K in PerRunKey]: z.ZodOptional<z.ZodType<Exclude<RunSettings[K], undefined>>>;
  },
);
export type RunContext = z.infer<typeof RunContext>;

/**
 * The graph context of a run with these settings: every per-run field, `undefined` where unset
 * (LangGraph's typing of a context wants each key of the schema present).
 */
export function runContextOf(settings: RunSettings): { [K in PerRunKey]: RunContext[K] } {
  return Object.fromEntries(PER_RUN_KEYS.map((k) => [k, settings[k]])) as { [K in PerRunKey]: RunContext[K] };
}
