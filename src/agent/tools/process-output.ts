import { z } from "zod";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError } from "./tool.js";

export const ProcessOutputArgs = z
  .object({
    name: z.string().min(1).max(64).describe("The name start_process gave the process."),
    tail: z.number().int().min(1).max(500).optional().describe("How many of the newest lines (default 50)."),
    grep: z.string().min(1).max(500).optional().describe("Only lines matching this regular expression."),
  })
  .strict();

/** The output of a background process (stdout and stderr interleaved, the newest lines kept). */
export const processOutputTool = defineTool({
  ...builtinTool("process_output"),
  description:
    "Read the output (stdout and stderr together) of a background process started with start_process: the newest " +
    "lines (tail, default 50), optionally only those matching grep (a regular expression). Only the newest 500 lines " +
    "are kept.",
  schema: ProcessOutputArgs,
  idempotent: true,
  writes: "nothing",
  async run(args, ctx) {
    const r = ctx.processes?.output(args.name, { tail: args.tail, grep: args.grep }) ?? "background processes are not available in this run";
    if (typeof r === "string") return toolError(r, r.startsWith("grep") ? "invalid_call" : "unknown_process");
    const head = `${args.name}: ${r.lines.length} line(s)${args.grep ? ` matching /${args.grep}/` : ""}${r.dropped ? ` (${r.dropped} older lines no longer kept)` : ""}`;
    return { status: "ok", output: `${head}\n${r.lines.join("\n")}` };
  },
});
