import { z } from "zod";
import { commandResult, runToolCommand } from "./command.js";
import { builtinTool } from "../../tool-catalogue.js";
import { defineTool } from "./tool.js";

export const MAX_COMMAND_TIMEOUT_MS = 30 * 60 * 1000;

export const RunCommandArgs = z
  .object({
    command: z.string().min(1).max(10_000).describe("A shell command line, run with bash in the workspace root."),
    timeoutMs: z.number().int().min(100).max(MAX_COMMAND_TIMEOUT_MS).optional().describe("Wall-clock limit in milliseconds (default set by the runtime)."),
  })
  .strict();
export type RunCommandArgs = z.infer<typeof RunCommandArgs>;

/** Runs a shell command in the sandbox. */
export const runCommandTool = defineTool({
  ...builtinTool("run_command"),
  description:
    "Run a shell command in the workspace root (bash, sandboxed, no network by default). Returns the exit code, " +
    "stdout and stderr (long output is cut in the middle), files the command created/modified/deleted, parsed " +
    "test results when the output has them, and an error class. Prefer run_tests for the test suite.",
  schema: RunCommandArgs,
  // A command may have side effects that must not happen twice (a migration, a commit).
  idempotent: false,
  writes: "reported",
  async command(args) {
    return args.command;
  },
  async run(args, ctx) {
    return commandResult(await runToolCommand(ctx, args.command, { timeoutMs: args.timeoutMs ?? ctx.commandTimeoutMs }));
  },
});
