import { z } from "zod";

/** Run settings with their defaults; every field can come from flags, config or the graph context. */
export const RunSettings = z
  .object({
    workspace: z.string().min(1),
    /** Defaults to <workspace>/.ledgerloop */
    stateDir: z.string().min(1).optional(),
    model: z.string().min(1).default("scripted:"),
    maxSteps: z.number().int().positive().max(100_000).default(50),
    /** Prompt budget; default: the model's context window minus its reserved output. */
    budgetTokens: z.number().int().min(1000).optional(),
    recentTurns: z.number().int().min(1).max(100).default(6),
    /** Decide prompt layout: "cache" (stable prefix, append-only log, volatile part last) or "legacy". */
    promptLayout: z.enum(["cache", "legacy"]).default("cache"),
    commandTimeoutMs: z.number().int().min(100).default(120_000),
    testTimeoutMs: z.number().int().min(100).default(300_000),
    outputCapBytes: z.number().int().min(1024).default(16 * 1024),
    failureStreakLimit: z.number().int().positive().default(3),
    summarizeThresholdTokens: z.number().int().positive().default(8_000),
    /** "hybrid": n-gram index + Chroma vectors (the default); "lexical": a plain file scan, no index. */
    retrieval: z.enum(["hybrid", "lexical"]).default("hybrid"),
    /** Vector side of the hybrid retriever: Chroma, or off (n-gram index only). */
    vectors: z.enum(["chroma", "off"]).default("chroma"),
    /** Embedder of the vector side: "hashed" (offline, no model) or "xenova:<model>". */
    embedder: z.string().min(1).default("hashed"),
    /** Isolation of commands: the strongest available ("auto"), or a level by name. */
    sandbox: z.enum(["auto", "bwrap", "unshare", "none"]).optional(),
    /** Commands may use the network (network tools and package installs allowed, not asked). */
    allowNetwork: z.boolean().optional(),
    /** What happens to a command the policy wants approved: ask the user (pause), approve, or refuse. */
    approve: z.enum(["ask", "auto", "deny"]).default("ask"),
    /** Extra allowed commands (program, or program and leading arguments), on top of the config file. */
    allow: z.array(z.string().min(1)).default(() => []),
  })
  .strict();
export type RunSettings = z.infer<typeof RunSettings>;
export type RunSettingsInput = z.input<typeof RunSettings>;
