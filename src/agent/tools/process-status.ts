import { z } from "zod";
import { describeExit } from "../../sandbox/processes.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError } from "./tool.js";

export const ProcessNameArgs = z.object({ name: z.string().min(1).max(64).describe("The name start_process gave the process.") }).strict();

/** Whether a background process runs, its ports and last output. */
export const processStatusTool = defineTool({
  ...builtinTool("process_status"),
  description:
    "Show a background process started with start_process: running, exited on its own (exit code) or stopped; its pid, " +
    "the TCP ports it listens on, and its last output lines.",
  schema: ProcessNameArgs,
  idempotent: true,
  writes: "nothing",
  async run(args, ctx) {
    const v = ctx.processes?.get(args.name) ?? "background processes are not available in this run";
    if (typeof v === "string") return toolError(v, "unknown_process");
    const state =
      v.status === "running"
        ? `running (pid ${v.pid}${v.ports.length ? `, listening on ${v.ports.join(", ")}` : ", no listening port"})`
        : `${v.status === "stopped" ? "stopped" : "exited on its own"} (${describeExit(v.exit!)})`;
    const up = Math.round(((v.exit?.at ?? Date.now()) - v.startedAt) / 1000);
    return {
      status: "ok",
      output: `${v.name}: ${state}, ran ${up} s — ${v.command}\n--- last output ---\n${v.lastLines.join("\n") || "(none)"}`,
    };
  },
});
