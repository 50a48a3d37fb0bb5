import fs from "node:fs";
import path from "node:path";
import type { Logger } from "pino";
import { ConfigError } from "../errors.js";
import { PRIVATE_FILE_MODE, ensurePrivateDir } from "../private-files.js";
import { runLogFile } from "../workspace/location.js";

/** pino's levels, and `silent`. */
export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

let stderrLevel: LogLevel = "silent";

/** Run logs also go to stderr from this level on (`--log-level`); "silent" (the default) keeps stderr to the progress lines. */
export function setStderrLogLevel(level: string): void {
  if (!LOG_LEVELS.includes(level as LogLevel)) throw new ConfigError(`--log-level must be one of ${LOG_LEVELS.join(", ")}, got "${level}"`);
  stderrLevel = level as LogLevel;
}

export interface RunLog {
  logger: Logger;
  file: string;
  /** Lines already in the file when it was opened (an earlier process of the same run). */
  earlier: Array<Record<string, unknown>>;
}

/** Earlier lines are read back for the state they carry (subtask starts); a huge log is not worth it. */
const MAX_REREAD_BYTES = 8 * 1024 * 1024;

function readEarlier(file: string): Array<Record<string, unknown>> {
  try {
    if (fs.statSync(file).size > MAX_REREAD_BYTES) return [];
    return fs
      .readFileSync(file, "utf8")
      .split("\n")
      .flatMap((l) => {
        try {
          return l.trim() ? [JSON.parse(l) as Record<string, unknown>] : [];
        } catch {
          return [];
        }
      });
  } catch {
    return [];
  }
}

/**
 * Opens (appends to) a run's log: synchronous writes, so a killed runner loses no line; file 0600
 * in the private state directory. `base` fields (thread, trace id) go on every line.
 */
export async function openRunLog(stateDir: string, thread: string, base: Record<string, unknown>): Promise<RunLog> {
  const { default: pino } = await import("pino");
  const file = runLogFile(stateDir, thread);
  ensurePrivateDir(path.dirname(file));
  const earlier = readEarlier(file);
  const fd = fs.openSync(file, "a", PRIVATE_FILE_MODE);
  const streams: Array<{ level: LogLevel; stream: NodeJS.WritableStream | ReturnType<typeof pino.destination> }> = [
    { level: "debug", stream: pino.destination({ dest: fd, sync: true }) },
  ];
  if (stderrLevel !== "silent") streams.push({ level: stderrLevel, stream: pino.destination({ dest: 2, sync: true }) });
  const lowest = stderrLevel === "trace" ? "trace" : "debug";
  const logger = pino(
    { level: lowest, base, timestamp: pino.stdTimeFunctions.isoTime, messageKey: "msg" },
    pino.multistream(streams as Parameters<typeof pino.multistream>[0]),
  );
  return { logger, file, earlier };
}
