import { Help, type Command } from "commander";

// What `ledgerloop --help` lists, without loading a command's module: each command's module imports
// what its action needs (LangGraph, SQLite, zod, …), and starting the CLI for its help or for one
// command should pay for that command only. test/cli/command-table.test.ts checks this table against
// what the modules register.

type Register = (program: Command) => void;

/** The module of each command, by file name under src/cli/, loaded on demand. */
const MODULES = {
  run: async () => (await import("./run.js")).registerRun,
  resume: async () => (await import("./resume.js")).registerResume,
  submit: async () => (await import("./submit.js")).registerSubmit,
  worker: async () => (await import("./worker.js")).registerWorker,
  workers: async () => (await import("./workers.js")).registerWorkers,
  "run-control": async () => (await import("./run-control.js")).registerRunControl,
  demo: async () => (await import("./demo.js")).registerDemo,
  eval: async () => (await import("./eval.js")).registerEval,
  history: async () => (await import("./history.js")).registerHistory,
  ledger: async () => (await import("./ledger.js")).registerLedger,
  threads: async () => (await import("./threads.js")).registerThreads,
  context: async () => (await import("./context.js")).registerContext,
  memory: async () => (await import("./memory.js")).registerMemory,
  rewind: async () => (await import("./rewind.js")).registerRewind,
  fork: async () => (await import("./fork.js")).registerFork,
  diff: async () => (await import("./diff.js")).registerDiff,
  replay: async () => (await import("./replay.js")).registerReplay,
  gc: async () => (await import("./gc.js")).registerGc,
  delete: async () => (await import("./delete.js")).registerDelete,
  stats: async () => (await import("./stats.js")).registerStats,
  index: async () => (await import("./index.js")).registerIndex,
  search: async () => (await import("./search.js")).registerSearch,
  exec: async () => (await import("./exec.js")).registerExec,
  doctor: async () => (await import("./doctor.js")).registerDoctor,
  report: async () => (await import("./report.js")).registerReport,
  web: async () => (await import("./web.js")).registerWeb,
  adopt: async () => (await import("./adopt.js")).registerAdopt,
  mcp: async () => (await import("./mcp.js")).registerMcp,
  logs: async () => (await import("./logs.js")).registerLogs,
  tools: async () => (await import("./tools.js")).registerTools,
  apply: async () => (await import("./apply.js")).registerApply,
  migrate: async () => (await import("./migrate.js")).registerMigrate,
} satisfies Record<string, () => Promise<Register>>;

/** A top-level command as the root help lists it: its name, `[options]` and arguments, and one line. */
export interface CommandInfo {
  name: string;
  usage: string;
  module: keyof typeof MODULES;
  description: string;
}

/** Every top-level command, in the order the root help lists them. */
export const COMMANDS: readonly CommandInfo[] = [
  { name: "run", usage: "[options] <task>", module: "run", description: "start a new run of the agent on a task" },
  {
    name: "resume",
    usage: "[options] <thread>",
    module: "resume",
    description: "continue a run from its last checkpoint (after a crash, a kill, a stop or a pause for approval)",
  },
  { name: "submit", usage: "[options] [task]", module: "submit", description: "queue a run for the workers of a PostgreSQL state (see `ledgerloop worker`)" },
  {
    name: "worker",
    usage: "[options]",
    module: "worker",
    description: "take runs from the PostgreSQL queue (ledgerloop submit) and drive them; any number of workers on any number of machines",
  },
  {
    name: "workers",
    usage: "[options]",
    module: "workers",
    description: "list the queue's workers: live ones, and those that stopped or died recently (host, pid, slots, runs, last heartbeat, version)",
  },
  {
    name: "cancel",
    usage: "[options] <thread>",
    module: "run-control",
    description: "cancel a run of the PostgreSQL queue: a queued one at once, a running one at its next step boundary",
  },
  {
    name: "requeue",
    usage: "[options] <thread>",
    module: "run-control",
    description: "queue a failed, paused, cancelled or rewound run of the PostgreSQL queue again; a worker continues it from its last checkpoint",
  },
  { name: "demo", usage: "[options]", module: "demo", description: "run the bundled demo task (scripted model) on a fresh copy of the example workspace" },
  {
    name: "eval",
    usage: "[options] <suite>",
    module: "eval",
    description: "run a suite of tasks with a model and score them with their hidden tests (optionally against a plain LangGraph agent)",
  },
  {
    name: "history",
    usage: "[options] <thread>",
    module: "history",
    description: "list a run's checkpoints newest first: the agent step, what runs next, the checkpoint id (one per LangGraph superstep)",
  },
  { name: "ledger", usage: "[options] <thread>", module: "ledger", description: "print a run's ledger events (actions, feedback, decisions, ...)" },
  {
    name: "threads",
    usage: "[options]",
    module: "threads",
    description: "list the runs recorded in a workspace (CLI, scripts, LangGraph server), newest first",
  },
  {
    name: "context",
    usage: "[options] <thread>",
    module: "context",
    description: "show what the model saw at a step: every piece of the prompt, why it was there, and what was left out",
  },
  { name: "memory", usage: "", module: "memory", description: "long-term memory: lessons learned by earlier runs in a workspace" },
  {
    name: "rewind",
    usage: "[options] <thread>",
    module: "rewind",
    description: "move a run back to a checkpoint: workspace files, ledger branch and graph state together (runs nothing)",
  },
  { name: "fork", usage: "[options] <thread>", module: "fork", description: "start a new thread from a checkpoint of a run (the original stays untouched)" },
  {
    name: "diff",
    usage: "[options] <thread>",
    module: "diff",
    description: "file changes between two checkpoints of a run (unified diff); without --from/--to, the whole run's",
  },
  {
    name: "replay",
    usage: "[options] <thread>",
    module: "replay",
    description:
      "re-run a thread from a checkpoint with the model responses recorded in its ledger (no model calls), in a scratch copy of the workspace, and report where tool results differ",
  },
  {
    name: "gc",
    usage: "[options]",
    module: "gc",
    description: "prune old checkpoints and unreferenced workspace blobs; branch heads stay resumable and runs replayable",
  },
  {
    name: "delete",
    usage: "[options] <thread>",
    module: "delete",
    description: "delete one run whole (ledger, checkpoints, prompts, run log, report, indexed events); without --yes, only say what would go",
  },
  { name: "stats", usage: "[options]", module: "stats", description: "sizes of checkpoints, ledger, workspace blobs and index" },
  { name: "index", usage: "[options]", module: "index", description: "build or update the workspace's search index (symbols, n-grams, vectors in Chroma)" },
  {
    name: "search",
    usage: "[options] <query>",
    module: "search",
    description: "search the workspace's code and/or its runs' ledger events (hybrid: n-grams, symbols, paths, vectors)",
  },
  {
    name: "exec",
    usage: "[options] <command...>",
    module: "exec",
    description: "run one command exactly as the agent would (policy, sandbox, limits) and print the structured feedback",
  },
  {
    name: "doctor",
    usage: "[options]",
    module: "doctor",
    description: "show the isolation level commands will get here and why, and check the parts a run needs",
  },
  {
    name: "report",
    usage: "[options] <thread>",
    module: "report",
    description: "the end-of-task report of a run: summary, plan, decisions, files changed, tests, problems, lessons, cost",
  },
  {
    name: "web",
    usage: "[options]",
    module: "web",
    description: "serve a read-only web view of the workspace's runs, or with --state of every run in a PostgreSQL state (loopback only unless --host)",
  },
  {
    name: "adopt",
    usage: "[options]",
    module: "adopt",
    description: "make the state of a copied workspace (cp -a) its own, so its runs can continue there separately from the original",
  },
  {
    name: "mcp",
    usage: "[options]",
    module: "mcp",
    description: "serve the workspace's memory to other agents over MCP (stdio): search, ledger_query, context_of_step, decisions, lessons, report",
  },
  {
    name: "logs",
    usage: "[options] <thread>",
    module: "logs",
    description: "print a run's structured log: nodes, subtasks (start, end, duration), model calls, tool runs, retries, pauses",
  },
  {
    name: "tools",
    usage: "[options]",
    module: "tools",
    description: "list every tool the model would get in this workspace (built-in and project tools), with its source, risk and arguments",
  },
  {
    name: "apply",
    usage: "[options] <thread>",
    module: "apply",
    description: "apply the changes of a `run --dry-run` to the real workspace (refused when it changed the same files since)",
  },
  {
    name: "migrate",
    usage: "[options]",
    module: "migrate",
    description: "move runs (registry, checkpoints, ledger, lessons) between SQLite and PostgreSQL state, either way, and check the copy",
  },
];

/** Registers the command named `name` (and any command its module registers with it); false when there is none. */
export async function registerCommand(program: Command, name: string): Promise<boolean> {
  const info = COMMANDS.find((c) => c.name === name);
  if (!info) return false;
  (await MODULES[info.module]())(program);
  return true;
}

/** Registers every command, in the root help's order (each module once). */
export async function registerAll(program: Command): Promise<void> {
  const registers = await Promise.all([...new Set(COMMANDS.map((c) => c.module))].map((m) => MODULES[m]()));
  for (const register of registers) register(program);
}

/** Lists every command by name for the root help, unknown-command errors and their suggestions; none of them can run. */
export function listCommands(program: Command): void {
  const usage = new Map(COMMANDS.map((c) => [c.name, c.usage]));
  program.configureHelp({
    subcommandTerm(this: Help, cmd: Command): string {
      const u = usage.get(cmd.name());
      return u === undefined ? Help.prototype.subcommandTerm.call(this, cmd) : u ? `${cmd.name()} ${u}` : cmd.name();
    },
  });
  for (const c of COMMANDS) program.command(c.name).description(c.description);
}
