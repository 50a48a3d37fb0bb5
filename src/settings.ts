import { z } from "zod";

/**
 * Run settings with their defaults; every field can come from flags, config or the graph context.
 * The descriptions are what LangGraph Studio's context form shows (the graph's context schema derives from this).
 */
export const RunSettings = z
  .object({
    workspace: z.string().min(1).describe("The workspace directory the agent works in (default for the LangGraph server: $LEDGERLOOP_WORKSPACE or its cwd)."),
    stateDir: z.string().min(1).optional().describe("Where the ledger and state database live (default: <workspace>/.ledgerloop)."),
    stateUrl: z
      .string()
      .regex(/^postgres(ql)?:\/\//i, "must be a postgres:// or postgresql:// URL")
      .optional()
      .describe("PostgreSQL for the ledger, checkpoints, lessons and run registry (default: $LEDGERLOOP_STATE_URL; else SQLite in stateDir)."),
    model: z.string().min(1).default("scripted:").describe("openai:<name> or scripted:<trajectory.json> (default for the LangGraph server: $LEDGERLOOP_MODEL)."),
    maxSteps: z.number().int().positive().max(100_000).default(50).describe("Stop after this many decide steps."),
    budgetTokens: z.number().int().min(1000).optional().describe("Prompt budget in tokens (default: the model's context window minus its reserved output)."),
    recentTurns: z.number().int().min(1).max(100).default(6).describe("Turns shown in full in the prompt."),
    promptLayout: z
      .enum(["cache", "legacy"])
      .default("cache")
      .describe('Decide prompt layout: "cache" (stable prefix, append-only turn log, volatile part last, for provider prompt caches) or "legacy".'),
    commandTimeoutMs: z.number().int().min(100).default(120_000).describe("Timeout of one command, in ms."),
    testTimeoutMs: z.number().int().min(100).default(300_000).describe("Timeout of one test run, in ms."),
    outputCapBytes: z.number().int().min(1024).default(16 * 1024).describe("Command output kept per stream, in bytes."),
    failureStreakLimit: z.number().int().positive().default(3).describe("Consecutive failed steps that trigger a reflection."),
    summarizeThresholdTokens: z.number().int().positive().default(8_000).describe("Unsummarised history (tokens) that triggers the summarize node."),
    retrieval: z.enum(["hybrid", "lexical"]).default("hybrid").describe("hybrid: n-gram index + Chroma vectors; lexical: a plain file scan, no index."),
    vectors: z.enum(["chroma", "off"]).default("chroma").describe("Vector side of the hybrid retriever: Chroma, or off (n-gram index only)."),
    embedder: z
      .string()
      .min(1)
      .default("hashed")
      .describe('Embedder of the vector side: "hashed" (offline, no model), "xenova:<model>", or "openai:<model>" (an OpenAI-compatible /v1/embeddings).'),
    history: z.boolean().default(true).describe("The workspace's git history as a search source (commit messages, co-change); off for a non-git workspace anyway."),
    historyPerFile: z.number().int().min(1).max(1000).default(40).describe("History: newest commits remembered per file."),
    historyMaxCommits: z.number().int().min(1).max(1_000_000).default(20_000).describe("History: commits read at most (newest first)."),
    sandbox: z.enum(["auto", "bwrap", "unshare", "none"]).optional().describe("Isolation of commands: the strongest available (auto), or a level by name."),
    allowNetwork: z.boolean().optional().describe("Commands may use the network (network tools and package installs allowed, not asked)."),
    approve: z
      .enum(["ask", "auto", "deny"])
      .default("ask")
      .describe("A command the policy wants approved: ask (pause with an interrupt Studio shows), auto (approve), deny (refuse)."),
    allow: z.array(z.string().min(1)).default(() => []).describe("Extra allowed commands (program, or program and leading arguments)."),
    maxCostUsd: z.number().positive().optional().describe("Stop the run (status budget_exhausted, resumable) once its model calls have cost this many USD at the price table."),
    maxTokens: z.number().int().positive().optional().describe("Stop the run (status budget_exhausted, resumable) once its model calls have used this many tokens (input + output)."),
  })
  .strict();
export type RunSettings = z.infer<typeof RunSettings>;
export type RunSettingsInput = z.input<typeof RunSettings>;
