import { describeExit } from "../../sandbox/processes.js";
import { ProcessNameArgs } from "./process-status.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError } from "./tool.js";

/** Stops a background process (SIGTERM, SIGKILL after 2 s). */
export const stopProcessTool = defineTool({
  ...builtinTool("stop_process"),
  description: "Stop a background process started with start_process (SIGTERM, then SIGKILL after 2 s), with everything it started. Returns its last output.",
  schema: ProcessNameArgs,
  // Stopping a stopped process changes nothing.
  idempotent: true,
  async run(args, ctx) {
    const r = (await ctx.processes?.stop(args.name)) ?? "background processes are not available in this run";
    if (typeof r === "string") return toolError(r, "unknown_process");
    const last = r.view.lastLines.slice(-10);
    const out = `${last.length ? `\n--- last output ---\n${last.join("\n")}` : ""}`;
    if (!r.wasRunning)
      return {
        status: "ok",
        output: `${args.name} was not running (${r.view.status === "stopped" ? "stopped" : "exited on its own"}, ${describeExit(r.exit)})${out}`,
      };
    return {
      status: "ok",
      output: `stopped ${args.name} (${describeExit(r.exit)})${out}`,
      effects: [
        {
          kind: "process",
          event: { kind: "stop", name: args.name, command: r.view.command, pid: r.view.pid, exitCode: r.exit.exitCode, signal: r.exit.signal, lastLines: last },
        },
      ],
    };
  },
});
