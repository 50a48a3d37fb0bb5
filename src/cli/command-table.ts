import { Help, type Command } from "commander";
import { COMMANDS, usageOf, type CommandModule } from "./command-specs.js";

// What `ledgerloop --help` lists, without loading a command's module: each command's module imports
// what its action needs (LangGraph, SQLite, zod, …), and starting the CLI for its help or for one
// command should pay for that command only. The commands themselves (name, description, arguments)
// are declared in command-specs.ts, which the modules read too.

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
} satisfies Record<CommandModule, () => Promise<Register>>;

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
  const usage = new Map<string, string>(COMMANDS.map((c) => [c.name, usageOf(c)]));
  program.configureHelp({
    subcommandTerm(this: Help, cmd: Command): string {
      const u = usage.get(cmd.name());
      return u === undefined ? Help.prototype.subcommandTerm.call(this, cmd) : u ? `${cmd.name()} ${u}` : cmd.name();
    },
  });
  for (const c of COMMANDS) program.command(c.name).description(c.description);
}
