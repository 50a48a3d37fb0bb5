import { z } from "zod";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool } from "./tool.js";

export const RecordDecisionArgs = z
  .object({
    text: z.string().min(1).max(2000).describe("The decision and its reason, in one or two sentences."),
  })
  .strict();
export type RecordDecisionArgs = z.infer<typeof RecordDecisionArgs>;

/** Pins an architecture or design decision so it stays in every later prompt. */
export const recordDecisionTool = defineTool({
  ...builtinTool("record_decision"),
  description:
    "Record a design or architecture decision (with its reason). Recorded decisions are pinned: they are shown " +
    "in every later step of the run, however long it gets.",
  schema: RecordDecisionArgs,
  idempotent: true,
  writes: "nothing",
  async run(args) {
    return { status: "ok", output: "Decision recorded.", effects: [{ kind: "decision", text: args.text }] };
  },
});
