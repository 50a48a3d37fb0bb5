import fs from "node:fs";
import type { Command } from "commander";
import { CliError } from "../errors.js";
import { LOG_LEVELS, setStderrLogLevel } from "../telemetry/run-log.js";
import { resolveWorkspace, runLogFile, stateLocation } from "../workspace/location.js";
import { workspaceOptions } from "./common.js";
import { openExistingState, requireThread, type WorkspaceArgs } from "../ledger/open-state.js";
import { declareCommand } from "./command-specs.js";

export interface LogsArgs extends WorkspaceArgs {
  follow?: boolean;
  /** Only lines at this level or above. */
  level?: string;
}

const LEVEL_NUM: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
const LEVEL_NAME = Object.fromEntries(Object.entries(LEVEL_NUM).map(([k, v]) => [v, k]));
/** Fields every line carries or that the message already says: left out of the readable form. */
const QUIET_FIELDS = new Set(["level", "time", "thread", "traceId", "event", "msg", "pid", "hostname"]);

/** Adds --log-level (run logs on stderr too, from that level on) to a command that runs the agent. */
export function logLevelOption(cmd: Command): Command {
  return cmd.option(
    "--log-level <level>",
    `also print the run's JSON log on stderr from this level on (${LOG_LEVELS.join(", ")}; default silent)`,
    (v: string) => {
      try {
        setStderrLogLevel(v);
      } catch (err) {
        throw new CliError((err as Error).message, 2, "CONFIG_INVALID");
      }
      return v;
    },
  );
}

/** One log line for a terminal: time, level, event, message, then the other fields as key=value. */
export function formatLogLine(line: Record<string, unknown>): string {
  const time = typeof line.time === "string" ? line.time.slice(11, 23) : "";
  const level = (LEVEL_NAME[Number(line.level)] ?? String(line.level)).toUpperCase().padEnd(5);
  const rest = Object.entries(line)
    .filter(([k, v]) => !QUIET_FIELDS.has(k) && v !== null && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  return `${time} ${level} ${String(line.event ?? "").padEnd(13)} ${String(line.msg ?? "")}${rest ? `  ${rest}` : ""}`;
}

/** The log file of a known run (fails for an unknown thread, or a run without a log unless following). */
export async function runLogOf(thread: string, args: LogsArgs): Promise<string> {
  const workspace = resolveWorkspace(args.workspace ?? process.cwd());
  const { stateDir } = stateLocation(workspace, args.stateDir);
  const file = runLogFile(stateDir, thread);
  if (fs.existsSync(file)) return file;
  const st = await openExistingState(args);
  try {
    requireThread(st, thread);
  } finally {
    st.close();
  }
  if (!args.follow) throw new CliError(`run ${thread} has no log (${file}); runs started before run logs were kept have none`, 1, "NO_LOG");
  return file;
}

/**
 * Prints a run's log (`--json`: the lines as stored) and, with `follow`, the lines appended after,
 * until `signal` aborts (Ctrl-C). Returns how many lines were printed.
 */
export async function handleLogs(thread: string, args: LogsArgs, out: (s: string) => void, signal?: AbortSignal): Promise<number> {
  if (args.level && !(args.level in LEVEL_NUM))
    throw new CliError(`--level must be one of ${Object.keys(LEVEL_NUM).join(", ")}, got "${args.level}"`, 2, "CONFIG_INVALID");
  const min = args.level ? LEVEL_NUM[args.level]! : 0;
  const file = await runLogOf(thread, args);
  let offset = 0;
  let partial = "";
  let printed = 0;
  const drain = () => {
    let fd: number;
    try {
      fd = fs.openSync(file, "r");
    } catch {
      return; // not written yet (following a run that has not started its first node)
    }
    try {
      const size = fs.fstatSync(fd).size;
      if (size < offset) offset = 0; // replaced: start over
      if (size === offset) return;
      const buf = Buffer.alloc(size - offset);
      fs.readSync(fd, buf, 0, buf.length, offset);
      offset = size;
      const text = partial + buf.toString("utf8");
      const lines = text.split("\n");
      partial = lines.pop() ?? "";
      for (const l of lines) {
        if (!l.trim()) continue;
        let parsed: Record<string, unknown>;
        try {
          parsed = JSON.parse(l) as Record<string, unknown>;
        } catch {
          continue; // a torn line of a killed writer
        }
        if (Number(parsed.level) < min) continue;
        out(args.json ? l : formatLogLine(parsed));
        printed++;
      }
    } finally {
      fs.closeSync(fd);
    }
  };
  drain();
  if (!args.follow) return printed;
  await new Promise<void>((resolve) => {
    const timer = setInterval(drain, 200);
    const stop = () => {
      clearInterval(timer);
      drain();
      resolve();
    };
    if (signal?.aborted) stop();
    else signal?.addEventListener("abort", stop, { once: true });
  });
  return printed;
}

export function registerLogs(program: Command): void {
  workspaceOptions(
    declareCommand(program, "logs")
      .option("-f, --follow", "keep printing lines as the run appends them (Ctrl-C to stop)")
      .option("--level <level>", "only lines at this level or above (debug, info, warn, error)")
      .option("--json", "the lines as stored: one JSON object per line"),
  ).action(async (thread: string, opts: LogsArgs) => {
    const ac = new AbortController();
    const stop = () => ac.abort();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    try {
      await handleLogs(thread, opts, (s) => process.stdout.write(s + "\n"), ac.signal);
    } finally {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
    }
  });
}
