import { AsyncLocalStorage } from "node:async_hooks";
import { z } from "zod";
import { editFileTool } from "./edit-file.js";
import { finishTool } from "./finish.js";
import { gitCommitTool } from "./git-commit.js";
import { listFilesTool } from "./list-files.js";
import { readFileTool } from "./read-file.js";
import { recordDecisionTool } from "./record-decision.js";
import { runCommandTool } from "./run-command.js";
import { runTestsTool } from "./run-tests.js";
import { searchCodeTool } from "./search-code.js";
import { processOutputTool } from "./process-output.js";
import { processStatusTool } from "./process-status.js";
import { startProcessTool } from "./start-process.js";
import { stopProcessTool } from "./stop-process.js";
import { registerTool, type RegisteredTool } from "./tool.js";
import { updatePlanTool } from "./update-plan.js";
import { BUILTIN_TOOL_NAMES, type BuiltinToolName } from "../../tool-catalogue.js";
import { writeFileTool } from "./write-file.js";

export type { BoundCall, CommandContext, RegisteredTool, ToolContext, ToolDefinition, ToolResult, ToolEffect, ToolSource, CodeSearcher } from "./tool.js";

/**
 * The built-in tools by name. The catalogue (tool-catalogue.ts) declares each one's name and risk
 * once; the compiler holds this table to it (every catalogued name, each with the definition of
 * that name). A new tool: its line in the catalogue, one file exporting
 * `defineTool({ ...builtinTool(name), ... })`, its line here, and its accept/reject cases and spec
 * snapshot in test/tools/schemas.test.ts.
 */
const BUILTIN: { readonly [N in BuiltinToolName]: RegisteredTool & { readonly name: N } } = {
  read_file: registerTool(readFileTool),
  write_file: registerTool(writeFileTool),
  edit_file: registerTool(editFileTool),
  list_files: registerTool(listFilesTool),
  search_code: registerTool(searchCodeTool),
  run_command: registerTool(runCommandTool),
  run_tests: registerTool(runTestsTool),
  start_process: registerTool(startProcessTool),
  process_status: registerTool(processStatusTool),
  process_output: registerTool(processOutputTool),
  stop_process: registerTool(stopProcessTool),
  update_plan: registerTool(updatePlanTool),
  record_decision: registerTool(recordDecisionTool),
  git_commit: registerTool(gitCommitTool),
  finish: registerTool(finishTool),
};

/**
 * Every built-in tool, in the order the model is shown them (the catalogue's): the registry that
 * `ledgerloop tools`, the policy, config validation and telemetry read. Names and arguments are a
 * public contract.
 */
export const TOOLS: readonly RegisteredTool[] = BUILTIN_TOOL_NAMES.map((name) => BUILTIN[name]);

const BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

/**
 * The tools a run adds to the built-in ones (project tools from ledgerloop.config.json), for the
 * node running now: the graph runs every node inside `withRunTools` (agent/run-keeping.ts), so
 * the nodes' calls below see the run's own tools without passing them around.
 */
const runTools = new AsyncLocalStorage<readonly RegisteredTool[]>();

/** Runs `fn` with `extra` tools offered beside the built-in ones. */
export function withRunTools<T>(extra: readonly RegisteredTool[], fn: () => T): T {
  return extra.length ? runTools.run(extra, fn) : fn();
}

/** Every tool of the run in scope: the built-in ones, then its own. */
export function allTools(): readonly RegisteredTool[] {
  const extra = runTools.getStore();
  return extra?.length ? [...TOOLS, ...extra] : TOOLS;
}

/** The tool of that name, or undefined. */
export function getTool(name: string): RegisteredTool | undefined {
  return BY_NAME.get(name) ?? runTools.getStore()?.find((t) => t.name === name);
}

/** A tool as the model sees it: name, description, JSON Schema of the arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

const SPECS = new Map<RegisteredTool, ToolSpec>();

/** Model-facing specs of the given tools (all by default); computed once per tool. */
export function toolSpecs(tools: readonly RegisteredTool[] = allTools()): ToolSpec[] {
  return tools.map((t) => {
    const known = SPECS.get(t);
    if (known) return known;
    const { $schema: _drop, ...parameters } = z.toJSONSchema(t.schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    const spec = { name: t.name, description: t.description, parameters };
    SPECS.set(t, spec);
    return spec;
  });
}

export type ValidatedCall = { ok: true; tool: RegisteredTool; args: unknown } | { ok: false; error: string };

/** Checks a model's tool call: known tool, JSON arguments, schema. Never throws. */
export function validateToolCall(name: string, args: unknown, argsText?: string, refused?: string): ValidatedCall {
  const tool = getTool(name);
  if (!tool) {
    return {
      ok: false,
      error: `Unknown tool "${name.slice(0, 100)}". Available tools: ${allTools()
        .map((t) => t.name)
        .join(", ")}.`,
    };
  }
  // Over-limit arguments (see args-guard.ts) were replaced by a preview: refuse before parsing it.
  if (refused) return { ok: false, error: refused };
  let value = args;
  if (value === undefined && argsText !== undefined && argsText.trim() === "") {
    // Some OpenAI-compatible servers send "" for a call without arguments.
    value = {};
  } else if (value === undefined && argsText !== undefined) {
    try {
      value = JSON.parse(argsText);
    } catch (err) {
      return {
        ok: false,
        error: `Arguments of ${name} are not valid JSON (${(err as Error).message}): ${argsText.slice(0, 200)}`,
      };
    }
  }
  const bound = tool.bind(value ?? {});
  if (!bound.ok) {
    const issues = bound.issues
      .slice(0, 5)
      .map((i) => `${i.path.length ? i.path.join(".") : "(arguments)"}: ${i.message}`)
      .join("; ");
    return { ok: false, error: `Invalid arguments for ${name}: ${issues}.` };
  }
  return { ok: true, tool, args: bound.args };
}
