import os from "node:os";
import path from "node:path";
import type { Command } from "commander";
import { CliError, StateStoreError, errorMessage } from "../errors.js";
import { intOption, log, stateOption } from "./common.js";
import { stateUrlOf } from "../ledger/open-state.js";
import { isStateUnavailable } from "../ledger/state-unavailable.js";
import { declareCommand } from "./command-specs.js";
import { DEFAULT_STOP_GRACE_MS } from "../runs/worker-defaults.js";

// `ledgerloop worker`: the command around RunWorker (src/runs/worker.ts): its options, the
// PostgreSQL URL, signals (SIGTERM/SIGINT stop it gracefully, a second one exits at once) and printing.

/** How long a graceful stop may take beyond the grace period before the worker exits anyway. */
const STOP_BOUND_AFTER_GRACE_MS = 45_000;

export interface WorkerArgs {
  state?: string;
  concurrency?: number;
  dir?: string;
  leaseSeconds?: number;
  pollSeconds?: number;
  /** Exit once no run is held and the queue has had nothing for this many seconds (tests, batch jobs). */
  exitWhenIdle?: number;
  /** How long a run handed back for a passing cause waits in the queue (default 5; a materialise failure waits this × its attempt). */
  retryDelaySeconds?: number;
  /** On SIGTERM/SIGINT, how long a run's current step may go on before it is cut off (default 20). */
  stopGraceSeconds?: number;
  verbose?: boolean;
  keepDirs?: boolean;
  json?: boolean;
  /** Connections of the worker's one PostgreSQL pool, shared by the queue and every run (default: concurrency × 2 + 2). */
  poolSize?: number;
}

/** --pool-size: a whole number of at least 2 (creating the queue holds a lock on one connection while it writes on another). */
export function poolSizeOption(value: string): number {
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < 2) {
    throw new CliError(
      `--pool-size must be a whole number of at least 2 (the worker's PostgreSQL connections, shared by its queue and runs), got "${value}"`,
      2,
      "CONFIG_INVALID",
    );
  }
  return n;
}

export async function handleWorker(args: WorkerArgs): Promise<void> {
  const url = stateUrlOf(args);
  if (!url) throw new CliError("a worker needs the PostgreSQL state: --state postgres://… or LEDGERLOOP_STATE_URL", 2, "CONFIG_INVALID");
  const leaseMs = (args.leaseSeconds ?? 30) * 1000;
  // Loaded on use: the worker needs pg and pg-boss, which `--help` must not load.
  const { RunWorker } = await import("../runs/worker.js");
  const stopGraceMs = args.stopGraceSeconds !== undefined ? args.stopGraceSeconds * 1000 : DEFAULT_STOP_GRACE_MS;
  const stopBoundMs = stopGraceMs + STOP_BOUND_AFTER_GRACE_MS;
  const concurrency = args.concurrency ?? 1;
  if (args.poolSize !== undefined && args.poolSize < concurrency + 1) {
    log(`warning: --pool-size ${args.poolSize} is less than one connection per run plus one (${concurrency + 1}): runs will wait for connections`);
  }
  const w = new RunWorker(url, {
    concurrency,
    dir: path.resolve(args.dir ?? path.join(os.tmpdir(), "ledgerloop-worker")),
    leaseMs,
    pollSeconds: args.pollSeconds ?? 2,
    stopGraceMs,
    ...(args.retryDelaySeconds !== undefined ? { retryDelaySeconds: args.retryDelaySeconds } : {}),
    verbose: args.verbose,
    keepDirs: args.keepDirs,
    ...(args.poolSize !== undefined ? { poolSize: args.poolSize } : {}),
    onOutcome: args.json ? (o) => process.stdout.write(JSON.stringify(o) + "\n") : undefined,
    log,
  });
  // A last net: every queue and state call of the worker is awaited and classified, but a library
  // may still drop a promise. A database fault there must not take the worker's runs down with it
  // (each write that matters is retried by the worker); anything else is a bug and exits as before.
  process.on("unhandledRejection", (reason) => {
    if (isStateUnavailable(reason)) {
      log(`[worker ${w.id}] unhandled database fault outside the worker's own calls, ignored: ${errorMessage(reason)}`);
      return;
    }
    log(`[worker ${w.id}] unhandled rejection: ${errorMessage(reason)}`);
    process.exit(1);
  });
  await w.start();
  let signals = 0;
  let retired: string | undefined;
  await new Promise<void>((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => {
      if (++signals > 1) process.exit(sig === "SIGINT" ? 130 : 143);
      log(`[worker ${w.id}] ${sig}: stopping; its runs go back to the queue (a second signal exits at once)`);
      stopBounded();
    };
    // A run that does not stop in time is left to the reaper of another worker (its lease expires).
    let idleTimer: NodeJS.Timeout | undefined;
    const stopBounded = () => {
      clearInterval(idleTimer);
      const t = setTimeout(() => {
        log(`[worker ${w.id}] stopping took longer than ${stopBoundMs / 1000} s; exiting, another worker takes over what it held once its lease expires`);
        process.exit(1);
      }, stopBoundMs);
      t.unref();
      void w.stop().then(resolve, resolve);
    };
    // A newer ledgerloop migrated the database: this one finished its runs; it exits rather than idle on.
    void w.retired.then((reason) => {
      retired = reason;
      stopBounded();
    });
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    if (args.exitWhenIdle !== undefined) {
      const idleMs = args.exitWhenIdle * 1000;
      idleTimer = setInterval(() => {
        void w.idleFor(idleMs).then(
          (idle) => {
            if (!idle || signals) return;
            stopBounded();
          },
          () => {},
        );
      }, 500);
    }
  });
  // Everything the worker opened is closed by now. A timer left scheduled somewhere (seen after a
  // database restart, in about half the fault-test runs) must not keep a stopped worker alive
  // until the stop bound says it failed: exit shortly, with the code set by then.
  setTimeout(() => process.exit(), 2_000).unref();
  if (retired) throw new StateStoreError("STATE_DB_NEWER", `worker ${w.id} retired: ${retired}`);
}

export function registerWorker(program: Command): void {
  const cmd = declareCommand(program, "worker")
    .option("-c, --concurrency <n>", "runs driven at once by this worker (default 1)", intOption("--concurrency"))
    .option("--dir <dir>", "where runs from a repository are cloned (default: <tmp>/ledgerloop-worker)")
    .option("--lease-seconds <n>", "a run whose worker has not renewed its lease for this long is taken over (default 30)", intOption("--lease-seconds"))
    .option("--poll-seconds <n>", "how often an idle slot asks the queue (default 2)", intOption("--poll-seconds"))
    .option("--exit-when-idle <seconds>", "exit once nothing has been held or queued for this long", intOption("--exit-when-idle"))
    .option(
      "--stop-grace-seconds <n>",
      "on SIGTERM/SIGINT, how long a run's current step (its command) may go on before it is cut off (default 20)",
      intOption("--stop-grace-seconds"),
    )
    .option(
      "--retry-delay-seconds <n>",
      "how long a run handed back for a passing cause (the database away, its files out of reach) waits before it is taken again; a materialise failure waits this × its attempt (default 5)",
      intOption("--retry-delay-seconds"),
    )
    .option("--pool-size <n>", "PostgreSQL connections this worker holds, for its queue and all its runs (default: concurrency × 2 + 2)", poolSizeOption)
    .option("--keep-dirs", "keep each run's clone under --dir after the run ended (default: removed)")
    .option("--verbose", "print every run's progress lines")
    .option("--json", "print one JSON line per job outcome on stdout");
  stateOption(cmd).action(async (opts: WorkerArgs) => handleWorker(opts));
}
