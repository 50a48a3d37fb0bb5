/**
 * One error family for the whole runtime. `code` is a stable literal that callers and tests match on;
 * `name` follows the concrete class so logs say what failed.
 */
export class LedgerloopError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad configuration, flags or settings given by the user. */
export class ConfigError extends LedgerloopError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("CONFIG_INVALID", message, options);
  }
}

/** The state database is unreadable, corrupt, or belongs to something else. */
export class StateStoreError extends LedgerloopError {
  constructor(
    code:
      | "STATE_DB_CORRUPT"
      | "STATE_DB_FOREIGN"
      | "STATE_DB_LOCKED"
      | "STATE_DB_UNREADABLE"
      // PostgreSQL state (--state postgres://…): a malformed URL, a refused login, no server, a newer schema.
      | "STATE_URL_INVALID"
      | "STATE_DB_AUTH"
      | "STATE_DB_UNREACHABLE"
      | "STATE_DB_NEWER",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** A ledger invariant was violated (unknown parent, invalid payload, key reused for another event). */
export class LedgerError extends LedgerloopError {
  constructor(
    code:
      | "LEDGER_INVALID_EVENT"
      | "LEDGER_UNKNOWN_PARENT"
      | "LEDGER_KEY_CONFLICT"
      | "LEDGER_NOT_FOUND"
      // An import (ledgerloop migrate) into a thread that already holds other events.
      | "LEDGER_IMPORT_CONFLICT"
      // A queue worker whose lease on the run was taken over (src/ledger/pg-run-leases.ts).
      | "LEASE_LOST",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** `ledgerloop migrate` refused or failed: a target holding another run, or a copy that does not match its source. */
export class MigrationError extends LedgerloopError {
  constructor(
    code: "MIGRATE_TARGET_CONFLICT" | "MIGRATE_MISMATCH" | "MIGRATE_NO_STATE" | "MIGRATE_UNKNOWN_THREAD" | "MIGRATE_SAME_STATE" | "MIGRATE_RUN_ACTIVE",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** A path the agent asked for lies outside the workspace (or leads out through a symlink). */
export class PathEscapeError extends LedgerloopError {
  constructor(message: string) {
    super("PATH_OUTSIDE_WORKSPACE", message);
  }
}

/** A workspace path the confined reader will not read: not a regular file, or larger than the caller allows. */
export class WorkspaceFileError extends LedgerloopError {
  constructor(code: "NOT_A_REGULAR_FILE" | "FILE_TOO_LARGE", message: string) {
    super(code, message);
  }
}

/** The model endpoint failed or answered something unusable. */
export class ModelError extends LedgerloopError {
  constructor(
    code:
      | "MODEL_UNKNOWN"
      | "MODEL_UNREACHABLE"
      | "MODEL_BAD_RESPONSE"
      | "SCRIPT_INVALID"
      | "MODEL_RATE_LIMITED"
      | "MODEL_UNAVAILABLE"
      | "MODEL_AUTH"
      | "MODEL_NO_API_KEY"
      | "MODEL_CONTEXT_LENGTH"
      | "BUDGET_EXHAUSTED",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** A user-facing CLI failure: one line on stderr and this exit code. */
export class CliError extends LedgerloopError {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1, code = "CLI_ERROR", options?: { cause?: unknown }) {
    super(code, message, options);
    this.exitCode = exitCode;
  }
}

/** A deleted run's id stays retired: search indexes on every machine forget whatever was indexed under it. */
export function threadDeleted(thread: string): CliError {
  return new CliError(`thread "${thread}" was deleted (\`ledgerloop delete\`) and its id is not used again; pick another --thread`, 1, "THREAD_DELETED");
}

/** Message of any thrown value, without the stack. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** SQLite's driver cannot be loaded: its per-platform compiled package is missing or unusable. */
export class NativeModuleError extends LedgerloopError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("NATIVE_MODULE_UNUSABLE", message, options);
  }
}

/**
 * The driver loads its compiled module at the first `new Database`, not at import, so a missing or
 * broken one surfaces as a failure to open whatever file comes first. Such a failure says nothing
 * about the file: it must not be reported as "cannot open state database" nor make a cache be moved
 * aside as corrupt. Returns the error to throw instead, or null when `err` is something else.
 */
export function nativeModuleError(err: unknown): NativeModuleError | null {
  return err instanceof NativeModuleError ? err : null;
}
