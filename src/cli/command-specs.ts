import type { Command } from "commander";

// Each top-level command's name, one-line description and arguments, declared once: the root help
// lists them from here without loading a command's module (src/cli/command-table.ts), and each module
// declares its command from here before adding its options. This file stays free of any import but
// commander's types, so the root help pays for nothing else.

/** The command modules under src/cli/, by file name; command-table.ts loads each on demand. */
export type CommandModule =
  | "run"
  | "resume"
  | "submit"
  | "worker"
  | "workers"
  | "run-control"
  | "demo"
  | "eval"
  | "history"
  | "ledger"
  | "threads"
  | "context"
  | "memory"
  | "rewind"
  | "fork"
  | "diff"
  | "replay"
  | "gc"
  | "delete"
  | "stats"
  | "index"
  | "search"
  | "exec"
  | "doctor"
  | "report"
  | "web"
  | "adopt"
  | "mcp"
  | "logs"
  | "tools"
  | "apply"
  | "migrate";

/** A positional argument as commander takes it (`<name>`, `[name]`, `<name...>`); no description, no help section. */
export interface CommandArgument {
  name: string;
  description?: string;
}

/** A top-level command: its name, the module that registers it, its one line, its arguments; `options: false` when it has none. */
export interface CommandSpec {
  name: string;
  module: CommandModule;
  description: string;
  args?: readonly CommandArgument[];
  options?: false;
}

/** Every top-level command, in the order the root help lists them. */
export const COMMANDS = [
  { name: "run", module: "run", description: "start a new run of the agent on a task", args: [{ name: "<task>", description: "what the agent should do" }] },
  {
    name: "resume",
    module: "resume",
    description: "continue a run from its last checkpoint (after a crash, a kill, a stop or a pause for approval)",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  {
    name: "submit",
    module: "submit",
    description: "queue a run for the workers of a PostgreSQL state (see `ledgerloop worker`)",
    args: [{ name: "[task]", description: "what the agent should do (or --tasks FILE)" }],
  },
  {
    name: "worker",
    module: "worker",
    description: "take runs from the PostgreSQL queue (ledgerloop submit) and drive them; any number of workers on any number of machines",
  },
  {
    name: "workers",
    module: "workers",
    description: "list the queue's workers: live ones, and those that stopped or died recently (host, pid, slots, runs, last heartbeat, version)",
  },
  {
    name: "cancel",
    module: "run-control",
    description: "cancel a run of the PostgreSQL queue: a queued one at once, a running one at its next step boundary",
    args: [{ name: "<thread>", description: "the run's thread id" }],
  },
  {
    name: "requeue",
    module: "run-control",
    description: "queue a failed, paused, cancelled or rewound run of the PostgreSQL queue again; a worker continues it from its last checkpoint",
    args: [{ name: "<thread>", description: "the run's thread id" }],
  },
  { name: "demo", module: "demo", description: "run the bundled demo task (scripted model) on a fresh copy of the example workspace" },
  {
    name: "eval",
    module: "eval",
    description: "run a suite of tasks with a model and score them with their hidden tests (optionally against a plain LangGraph agent)",
    args: [
      {
        name: "<suite>",
        description:
          "a folder of task folders (task.json, workspace/ or repo+commit, hidden/), e.g. eval/suite; with --format swe-bench a task list (JSON/JSONL)",
      },
    ],
  },
  {
    name: "history",
    module: "history",
    description: "list a run's checkpoints newest first: the agent step, what runs next, the checkpoint id (one per LangGraph superstep)",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  {
    name: "ledger",
    module: "ledger",
    description: "print a run's ledger events (actions, feedback, decisions, ...)",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  { name: "threads", module: "threads", description: "list the runs recorded in a workspace (CLI, scripts, LangGraph server), newest first" },
  {
    name: "context",
    module: "context",
    description: "show what the model saw at a step: every piece of the prompt, why it was there, and what was left out",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  { name: "memory", module: "memory", description: "long-term memory: lessons learned by earlier runs in a workspace", options: false },
  {
    name: "rewind",
    module: "rewind",
    description: "move a run back to a checkpoint: workspace files, ledger branch and graph state together (runs nothing)",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  {
    name: "fork",
    module: "fork",
    description: "start a new thread from a checkpoint of a run (the original stays untouched)",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  {
    name: "diff",
    module: "diff",
    description: "file changes between two checkpoints of a run (unified diff); without --from/--to, the whole run's",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  {
    name: "replay",
    module: "replay",
    description:
      "re-run a thread from a checkpoint with the model responses recorded in its ledger (no model calls), in a scratch copy of the workspace, and report where tool results differ",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  { name: "gc", module: "gc", description: "prune old checkpoints and unreferenced workspace blobs; branch heads stay resumable and runs replayable" },
  {
    name: "delete",
    module: "delete",
    description: "delete one run whole (ledger, checkpoints, prompts, run log, report, indexed events); without --yes, only say what would go",
    args: [{ name: "<thread>" }],
  },
  { name: "stats", module: "stats", description: "sizes of checkpoints, ledger, workspace blobs and index" },
  { name: "index", module: "index", description: "build or update the workspace's search index (symbols, n-grams, vectors in Chroma)" },
  {
    name: "search",
    module: "search",
    description: "search the workspace's code and/or its runs' ledger events (hybrid: n-grams, symbols, paths, vectors)",
    args: [{ name: "<query>", description: "identifiers, words, a path fragment or a description" }],
  },
  {
    name: "exec",
    module: "exec",
    description: "run one command exactly as the agent would (policy, sandbox, limits) and print the structured feedback",
    args: [{ name: "<command...>", description: "the command (one quoted command line, or words after --)" }],
  },
  { name: "doctor", module: "doctor", description: "show the isolation level commands will get here and why, and check the parts a run needs" },
  {
    name: "report",
    module: "report",
    description: "the end-of-task report of a run: summary, plan, decisions, files changed, tests, problems, lessons, cost",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  {
    name: "web",
    module: "web",
    description: "serve a read-only web view of the workspace's runs, or with --state of every run in a PostgreSQL state (loopback only unless --host)",
  },
  {
    name: "adopt",
    module: "adopt",
    description: "make the state of a copied workspace (cp -a) its own, so its runs can continue there separately from the original",
  },
  {
    name: "mcp",
    module: "mcp",
    description: "serve the workspace's memory to other agents over MCP (stdio): search, ledger_query, context_of_step, decisions, lessons, report",
  },
  {
    name: "logs",
    module: "logs",
    description: "print a run's structured log: nodes, subtasks (start, end, duration), model calls, tool runs, retries, pauses",
    args: [{ name: "<thread>", description: "the run id" }],
  },
  {
    name: "tools",
    module: "tools",
    description: "list every tool the model would get in this workspace (built-in and project tools), with its source, risk and arguments",
  },
  {
    name: "apply",
    module: "apply",
    description: "apply the changes of a `run --dry-run` to the real workspace (refused when it changed the same files since)",
    args: [{ name: "<thread>", description: "the dry run's thread id" }],
  },
  {
    name: "migrate",
    module: "migrate",
    description: "move runs (registry, checkpoints, ledger, lessons) between SQLite and PostgreSQL state, either way, and check the copy",
  },
] as const satisfies readonly CommandSpec[];

/** A top-level command's name. */
export type CommandName = (typeof COMMANDS)[number]["name"];

const SPECS: readonly CommandSpec[] = COMMANDS;

/** What the root help shows after a command's name: `[options]` (unless it has none) and its arguments. */
export function usageOf(spec: CommandSpec): string {
  return [...(spec.options === false ? [] : ["[options]"]), ...(spec.args ?? []).map((a) => a.name)].join(" ");
}

/** Adds the command `name` to `program` with its table description and arguments; the caller adds options and action. */
export function declareCommand(program: Command, name: CommandName): Command {
  const spec = SPECS.find((c) => c.name === name)!;
  const cmd = program.command(spec.name).description(spec.description);
  for (const a of spec.args ?? []) cmd.argument(a.name, a.description);
  return cmd;
}
