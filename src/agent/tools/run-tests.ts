import { z } from "zod";
import { commandResult, runToolCommand } from "./command.js";
import { detectTestCommand } from "../../workspace/test-command.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool, toolError } from "./tool.js";

export const RunTestsArgs = z
  .object({
    command: z
      .string()
      .min(1)
      .max(10_000)
      .optional()
      .describe("Test command to run; by default it is detected from package.json, pytest config, go.mod or Cargo.toml."),
  })
  .strict();
export type RunTestsArgs = z.infer<typeof RunTestsArgs>;

/** Runs the workspace's test suite and parses the results. */
export const runTestsTool = defineTool({
  ...builtinTool("run_tests"),
  description:
    "Run the workspace's tests (command detected from package.json / pytest / go / cargo config unless given). " +
    "Returns passed/failed/skipped counts, the names of failing tests, and the output. A run with failing tests " +
    "is reported as an error with class test_failure.",
  schema: RunTestsArgs,
  // Tests can write files, databases or snapshots: not safe to assume a re-run is harmless.
  idempotent: false,
  writes: "reported",
  async command(args, ctx) {
    return args.command ?? (await detectTestCommand(ctx.workspace))?.command ?? null;
  },
  async run(args, ctx) {
    let command = ctx.checked?.command ?? args.command;
    if (!command) {
      const detected = await detectTestCommand(ctx.workspace);
      if (!detected) {
        return toolError("No test command found (no package.json test script, pytest config, go.mod or Cargo.toml). Pass `command` explicitly.");
      }
      command = detected.command;
    }
    const fb = await runToolCommand(ctx, command, { timeoutMs: ctx.testTimeoutMs, expectTests: true });
    const output = fb.tests ? fb.output : `${fb.output}\n(no test summary was recognised in the output; check that this is the right test command)`;
    return commandResult(fb, output);
  },
});
