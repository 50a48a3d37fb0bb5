import { z } from "zod";
import { Subtask, SubtaskStatus } from "../../events.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool } from "./tool.js";

export const UpdatePlanArgs = z
  .object({
    subtasks: z
      .array(
        z
          .object({
            id: Subtask.shape.id.describe('Short stable id, e.g. "s1" or "health-a".'),
            description: Subtask.shape.description,
            status: SubtaskStatus,
          })
          .strict(),
      )
      .min(1)
      .max(50)
      .refine((list) => new Set(list.map((s) => s.id)).size === list.length, { message: "subtask ids must be unique" })
      .describe("The whole plan: every subtask with its current status."),
  })
  .strict();
export type UpdatePlanArgs = z.infer<typeof UpdatePlanArgs>;

/** Replaces the plan (subtasks and their statuses). */
export const updatePlanTool = defineTool({
  ...builtinTool("update_plan"),
  description:
    "Replace the task plan: the full list of subtasks with status pending, in_progress, completed or blocked. " +
    "Mark a subtask completed only once there is evidence (e.g. its tests pass). Marking one blocked triggers a replan.",
  schema: UpdatePlanArgs,
  idempotent: true,
  writes: "nothing",
  async run(args) {
    const count = (s: string) => args.subtasks.filter((t) => t.status === s).length;
    return {
      status: "ok",
      output: `Plan updated: ${count("completed")} completed, ${count("in_progress")} in progress, ${count("pending")} pending, ${count("blocked")} blocked.`,
      effects: [{ kind: "plan", subtasks: args.subtasks }],
    };
  },
});
