/**
 * The built-in tools' names and risks, declared once. The core needs them (a project tool may not
 * take a built-in name: config.ts), but the core may not import the agent, so they live here, with
 * no imports; each tool's definition (agent/tools/*.ts) is built from its entry with
 * {@link builtinTool}, and the registry (agent/tools/index.ts) offers them in this order. The rest
 * of a tool (model-facing description, argument schema, handler) is on its definition.
 */

/** What a tool may affect; decides its permissions (a `network` tool needs --allow-network). */
export const TOOL_RISKS = ["read", "write", "exec", "network"] as const;
export type ToolRisk = (typeof TOOL_RISKS)[number];

/**
 * Who decides whether a call runs: "policy" (the command policy judges a tool's command line; a tool
 * that runs no command just runs), or a configured "allow", "ask" or "deny".
 */
export type ToolApproval = "allow" | "ask" | "deny" | "policy";

/**
 * Every built-in tool, in the order the model is shown them: read, write (the workspace or the
 * run's records), exec (runs commands), network. The approval of each is "policy".
 */
const CATALOGUE = {
  read_file: "read",
  write_file: "write",
  edit_file: "write",
  list_files: "read",
  search_code: "read",
  run_command: "exec",
  run_tests: "exec",
  start_process: "exec",
  process_status: "read",
  process_output: "read",
  stop_process: "exec",
  update_plan: "write",
  record_decision: "write",
  git_commit: "write",
  finish: "write",
} as const satisfies Record<string, ToolRisk>;

export type BuiltinToolName = keyof typeof CATALOGUE;

/** The built-in tools' names, in the order the model is shown them. */
export const BUILTIN_TOOL_NAMES = Object.keys(CATALOGUE) as readonly BuiltinToolName[];

/** The catalogue's facts of one built-in tool, for its definition to spread: `defineTool({ ...builtinTool("read_file"), … })`. */
export function builtinTool<N extends BuiltinToolName>(name: N): { name: N; risk: (typeof CATALOGUE)[N]; approve: "policy"; source: "built-in" } {
  return { name, risk: CATALOGUE[name], approve: "policy", source: "built-in" };
}
