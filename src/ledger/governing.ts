import crypto from "node:crypto";
import { LedgerloopError } from "../errors.js";
import type { Ledger } from "./port.js";

/**
 * The configuration a thread runs under. The config file lives in the workspace, so a run must not
 * quietly take on a file that changed since it started (by a command at a level that could not
 * stop it, by a person, by anything): the first step of a thread records the fingerprint of the
 * config it was given, and every later step of that thread — after a resume, a rewind, from Studio
 * or a script — compares it and stops on a difference until someone accepts the new file.
 */
export class GoverningConfigChangedError extends LedgerloopError {
  constructor(message: string) {
    super("CONFIG_CHANGED", message);
  }
}

/** sha256 of the config file's bytes, or "absent". */
export function configFingerprint(content: Buffer | string | null): string {
  if (content === null) return "absent";
  return crypto.createHash("sha256").update(content).digest("hex");
}

/** The table both ledgers keep the fingerprints in (SQLite: created with the ledger's schema; PostgreSQL: migration 5). */
export const THREAD_CONFIG_TABLE = "ll_thread_config";

/**
 * Records `sha` for a thread seen for the first time; throws GoverningConfigChangedError when the
 * thread was started under another config. The record is the ledger's, so a run continued on
 * another machine (a queue worker, `resume --state`) is held to the config it started with there.
 */
export async function checkThreadConfig(ledger: Pick<Ledger, "governingConfig">, thread: string, sha: string, file: string): Promise<void> {
  const recorded = await ledger.governingConfig(thread, sha);
  if (recorded === sha) return;
  const how = recorded === "absent" ? "was created" : sha === "absent" ? "was removed" : "changed";
  throw new GoverningConfigChangedError(
    `${file} ${how} since run ${thread} started, so the run stops instead of obeying a configuration it was not started with. ` +
      `Review the file; to go on under it, resume with --accept-config.`,
  );
}

/** Makes `sha` the thread's config (the user accepted the file as it is now). */
export async function acceptThreadConfig(ledger: Pick<Ledger, "acceptGoverningConfig">, thread: string, sha: string): Promise<void> {
  await ledger.acceptGoverningConfig(thread, sha);
}
