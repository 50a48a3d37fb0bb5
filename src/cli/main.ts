import { Command, CommanderError } from "commander";
import { errorMessage, nativeModuleError } from "../errors.js";
import { registerAdopt } from "./adopt.js";
import { registerApply } from "./apply.js";
import { exitCodeFor, log } from "./common.js";
import { registerContext } from "./context.js";
import { registerDelete } from "./delete.js";
import { registerDemo } from "./demo.js";
import { registerDiff } from "./diff.js";
import { registerDoctor } from "./doctor.js";
import { registerEval } from "./eval.js";
import { registerExec } from "./exec.js";
import { registerFork } from "./fork.js";
import { registerGc } from "./gc.js";
import { registerHistory } from "./history.js";
import { registerIndex } from "./index.js";
import { registerLedger } from "./ledger.js";
import { registerLogs } from "./logs.js";
import { registerMcp } from "./mcp.js";
import { registerMemory } from "./memory.js";
import { registerMigrate } from "./migrate.js";
import { registerReplay } from "./replay.js";
import { registerReport } from "./report.js";
import { registerResume } from "./resume.js";
import { registerRewind } from "./rewind.js";
import { registerRun } from "./run.js";
import { registerRunControl } from "./run-control.js";
import { registerSearch } from "./search.js";
import { registerStats } from "./stats.js";
import { registerSubmit } from "./submit.js";
import { registerThreads } from "./threads.js";
import { registerTools } from "./tools.js";
import { registerWeb } from "./web.js";
import { registerWorker } from "./worker.js";
import { registerWorkers } from "./workers.js";

/** The `ledgerloop` command line. */
export function buildProgram(): Command {
  const program = new Command()
    .name("ledgerloop")
    .description("A runtime layer for long-horizon coding agents: checkpointed LangGraph runs with a write-ahead ledger.")
    .version("0.1.0")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();
  registerRun(program);
  registerResume(program);
  registerSubmit(program);
  registerWorker(program);
  registerWorkers(program);
  registerRunControl(program);
  registerDemo(program);
  registerEval(program);
  registerHistory(program);
  registerLedger(program);
  registerThreads(program);
  registerContext(program);
  registerMemory(program);
  registerRewind(program);
  registerFork(program);
  registerDiff(program);
  registerReplay(program);
  registerGc(program);
  registerDelete(program);
  registerStats(program);
  registerIndex(program);
  registerSearch(program);
  registerExec(program);
  registerDoctor(program);
  registerReport(program);
  registerWeb(program);
  registerAdopt(program);
  registerMcp(program);
  registerLogs(program);
  registerTools(program);
  registerApply(program);
  registerMigrate(program);
  return program;
}

/** Runs the CLI; errors become one line on stderr and a non-zero exit code. */
export async function main(argv = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode;
      return;
    }
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
