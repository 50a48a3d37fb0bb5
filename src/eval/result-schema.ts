import { z } from "zod";

/** A stored result file's shape (run-task.ts EvalResult), checked when `--resume` reads it back. */
export const EvalResultSchema = z.object({
  task: z.string(),
  agent: z.enum(["ledgerloop", "plain"]),
  repeat: z.number().int().positive(),
  model: z.string(),
  solved: z.boolean(),
  status: z.string(),
  steps: z.number(),
  modelCalls: z.number(),
  inputTokens: z.number(),
  cachedInputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number(),
  wallMs: z.number(),
  thread: z.string().optional(),
  hiddenExit: z.number().nullable(),
  hiddenOutput: z.string(),
  error: z.string().optional(),
  faults: z.array(z.string()).optional(),
  kills: z.number().int().optional(),
  patch: z.string().optional(),
  patchExcluded: z.array(z.string()).optional(),
  effects: z
    .object({ actions: z.number(), duplicatedSteps: z.array(z.number()), duplicatedOutcomes: z.number(), withoutOutcome: z.number(), interrupted: z.number() })
    .optional(),
});
