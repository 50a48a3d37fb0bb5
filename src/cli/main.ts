import { Command, CommanderError } from "commander";
import { COMMANDS } from "./command-specs.js";
import { listCommands, registerAll, registerCommand } from "./command-table.js";

// Start-up is a matter of what loads: the root help, the version and an unknown command need the
// command table only; `ledgerloop <command> …` (and `help <command>`) load that command's module.

function baseProgram(): Command {
  return new Command()
    .name("ledgerloop")
    .description("A runtime layer for long-horizon coding agents: checkpointed LangGraph runs with a write-ahead ledger.")
    .version("0.1.0")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();
}

/** The `ledgerloop` command line with every command registered (every command module loaded). */
export async function buildProgram(): Promise<Command> {
  const program = baseProgram();
  await registerAll(program);
  return program;
}

/** The program for these arguments: the one command they name, the list alone when they name none. */
async function programFor(args: string[]): Promise<Command> {
  const program = baseProgram();
  if (await registerCommand(program, (args[0] === "help" ? args[1] : args[0]) ?? "")) return program;
  const known = new Set<string>(COMMANDS.map((c) => c.name));
  // A command name after a root option (`-h run`): rare enough to take the whole program for.
  if (args.some((a) => known.has(a))) await registerAll(program);
  else listCommands(program);
  return program;
}

/** Runs the CLI; errors become one line on stderr and a non-zero exit code. */
export async function main(argv = process.argv): Promise<void> {
  try {
    await (await programFor(argv.slice(2))).parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode;
      return;
    }
    const [{ errorMessage, nativeModuleError }, { exitCodeFor, log }] = await Promise.all([import("../errors.js"), import("./common.js")]);
    log(`ledgerloop: ${errorMessage(nativeModuleError(err) ?? err)}`);
    if (process.env.LEDGERLOOP_DEBUG) console.error(err);
    process.exitCode = exitCodeFor(err);
  }
}

// `ledgerloop ledger ... | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw err;
});

await main();
