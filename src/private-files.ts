import fs from "node:fs";
import path from "node:path";

/**
 * Modes of the files that hold a run's history. Redaction hides the secrets it recognises; what it
 * does not recognise still sits in the ledger, the index and the reports, which therefore are
 * readable by their owner only: files 0600, the state directory 0700. Files made by an older
 * version (0644 under the usual umask) are tightened when they are opened.
 */

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** Removes group and other permissions from an existing path; silent when it is not ours to change. */
function tighten(p: string, mode: number): void {
  try {
    const st = fs.statSync(p);
    if ((st.mode & 0o077) !== 0) fs.chmodSync(p, st.mode & 0o777 & mode);
  } catch {
    // absent, or owned by someone else (a read-only inspection of another user's state)
  }
}

/**
 * Creates `dir` (and its parents) and makes it 0700. An existing directory is tightened only when it
 * is a ledgerloop state directory by name, so that a `--state-dir` pointing at a shared directory
 * (`/tmp`) is never narrowed.
 */
export function ensurePrivateDir(dir: string): void {
  const existed = fs.existsSync(dir);
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (!existed || path.basename(dir) === ".ledgerloop") tighten(dir, PRIVATE_DIR_MODE);
}

/**
 * Makes sure a database file exists with mode 0600 before SQLite opens it (SQLite gives its -wal and
 * -shm files the mode of the database), and tightens an existing one with its companions.
 */
export function ensurePrivateFile(file: string): void {
  try {
    fs.closeSync(fs.openSync(file, fs.constants.O_CREAT | fs.constants.O_WRONLY, PRIVATE_FILE_MODE));
  } catch {
    // read-only location: opening will report it
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) tighten(f, PRIVATE_FILE_MODE);
}

/** Tightens an existing file and its SQLite companions without creating anything. */
export function tightenExisting(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) tighten(f, PRIVATE_FILE_MODE);
}

/** Writes a whole file readable by its owner only (an existing file is tightened first). */
export function writePrivateFile(file: string, data: string): void {
  ensurePrivateDir(path.dirname(file));
  tighten(file, PRIVATE_FILE_MODE);
  fs.writeFileSync(file, data, { mode: PRIVATE_FILE_MODE });
}
