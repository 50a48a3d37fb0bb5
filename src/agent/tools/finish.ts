import { z } from "zod";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool } from "./tool.js";

export const FinishArgs = z
  .object({
    summary: z.string().min(1).max(4000).describe("What was done, how it was verified, and anything left open."),
  })
  .strict();
export type FinishArgs = z.infer<typeof FinishArgs>;

/** Ends the task. */
export const finishTool = defineTool({
  ...builtinTool("finish"),
  description:
    "Finish the task when the goal is met and verified (tests pass). The summary goes into the run's report. " + "Do not call other tools in the same turn.",
  schema: FinishArgs,
  idempotent: true,
  writes: "nothing",
  async run(args) {
    // The run decides (observe): a finish while the last test run failed is taken only when repeated.
    return {
      status: "ok",
      output: "Finish requested: the run ends now, unless the last test run failed (then the run status says what to do).",
      effects: [{ kind: "finish", summary: args.summary }],
    };
  },
});
