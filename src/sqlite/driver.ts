import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { NativeModuleError, errorMessage } from "../errors.js";

/**
 * ledgerloop's one SQLite driver: `libsql` (SQLite 3.45 with FTS5), whose compiled module comes
 * from the npm registry as a per-platform package, so an install compiles nothing. This class
 * gives it the synchronous better-sqlite3 shape the rest of the code was written against, and
 * closes the gaps between the two that matter here:
 * - rows are plain objects of their columns (libsql adds a `_metadata` key to each row object, so
 *   every statement runs in raw mode and rows are built here);
 * - `pluck()` also applies to `get()`;
 * - a single `null` or Buffer parameter is positional, not a named-parameter object;
 * - `transaction()` nests through savepoints and refuses an async function;
 * - `readonly` opens the file read-only (a `mode=ro` URI), `fileMustExist` refuses a missing file,
 *   and the busy timeout defaults to 5 s.
 * The native module loads at the first `new Database`, so importing this costs nothing.
 */

/** libsql's own classes, as far as this driver uses them. */
interface NativeStatement {
  raw(on?: boolean): NativeStatement;
  readonly reader: boolean;
  run(params: unknown): { changes: number; lastInsertRowid: number | bigint };
  get(params: unknown): unknown[] | undefined;
  iterate(params: unknown): IterableIterator<unknown[]>;
  columns(): Array<{ name: string }>;
}
interface NativeDatabase {
  prepare(sql: string): NativeStatement;
  exec(sql: string): void;
  close(): void;
  readonly inTransaction: boolean;
}
type NativeConstructor = new (file: string, opts?: object) => NativeDatabase;

let native: NativeConstructor | undefined;

function loadNative(): NativeConstructor {
  if (native) return native;
  try {
    native = createRequire(import.meta.url)("libsql") as NativeConstructor;
    return native;
  } catch (err) {
    const msg = errorMessage(err);
    const missing = /Cannot find module '(@libsql\/[^']+)'/.exec(msg)?.[1];
    throw new NativeModuleError(
      missing
        ? `SQLite's compiled module for this platform (${process.platform}-${process.arch}) is not installed: ${missing} ` +
            `is missing. npm installs it as an optional dependency of libsql; reinstall without --omit=optional ` +
            `(or --no-optional), or check that libsql supports this platform`
        : `SQLite's compiled module cannot be loaded: ${msg.split("\n")[0]!.replace(/\.?$/, ".")} It must be the one for this ` +
            `platform (${process.platform}-${process.arch}, node ${process.versions.node}): reinstall the dependencies on this machine ` +
            `(\`npm ci\` or \`npm install\`) rather than copying node_modules from another`,
      { cause: err },
    );
  }
}

export interface DatabaseOptions {
  /** Open the file read-only: every write fails with SQLITE_READONLY. */
  readonly?: boolean;
  /** Refuse to create the file. Implied by `readonly`. */
  fileMustExist?: boolean;
  /** Busy timeout in milliseconds (default 5000). */
  timeout?: number;
}

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** An error raised by SQLite, with its extended result code name (`SQLITE_BUSY`, `SQLITE_NOTADB`, …). */
export class SqliteError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = "SqliteError";
  }
}

/** Parameters as libsql takes them: one plain object for named ones, else one flat array. */
function bindable(params: unknown[]): unknown {
  if (params.length === 1) {
    const only = params[0];
    if (only !== null && typeof only === "object" && !Array.isArray(only) && !ArrayBuffer.isView(only)) return only;
  }
  return params.flat();
}

/** libsql's errors as this driver's SqliteError (same message and code); anything else as is. */
function convert(err: unknown): unknown {
  if (err instanceof SqliteError || !(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return err;
  const out = new SqliteError(err.message, code);
  out.cause = err;
  return out;
}

export class Statement<P extends unknown[] = unknown[], R = unknown> {
  private plucking = false;
  private rawRows = false;
  private names: string[] | undefined;

  constructor(
    private readonly stmt: NativeStatement,
    readonly source: string,
  ) {}

  /** True when the statement returns rows. */
  get reader(): boolean {
    return this.stmt.reader;
  }

  /** Rows become their first column's value. */
  pluck(on = true): this {
    this.plucking = on;
    if (on) this.rawRows = false;
    return this;
  }

  /** Rows become arrays of their column values. */
  raw(on = true): this {
    this.rawRows = on;
    if (on) this.plucking = false;
    return this;
  }

  run(...params: P): RunResult {
    try {
      const { changes, lastInsertRowid } = this.stmt.run(bindable(params));
      return { changes, lastInsertRowid };
    } catch (err) {
      throw convert(err);
    }
  }

  get(...params: P): R | undefined {
    let row: unknown[] | undefined;
    try {
      row = this.stmt.get(bindable(params));
    } catch (err) {
      throw convert(err);
    }
    return row === undefined ? undefined : this.shape(row);
  }

  all(...params: P): R[] {
    const out: R[] = [];
    for (const row of this.iterate(...params)) out.push(row);
    return out;
  }

  *iterate(...params: P): IterableIterator<R> {
    let rows: IterableIterator<unknown[]>;
    try {
      rows = this.stmt.iterate(bindable(params));
    } catch (err) {
      throw convert(err);
    }
    for (;;) {
      let next: IteratorResult<unknown[]>;
      try {
        next = rows.next();
      } catch (err) {
        throw convert(err);
      }
      if (next.done) return;
      yield this.shape(next.value);
    }
  }

  private shape(row: unknown[]): R {
    if (this.plucking) return row[0] as R;
    if (this.rawRows) return row as R;
    const names = (this.names ??= this.stmt.columns().map((c) => c.name));
    const out: Record<string, unknown> = {};
    for (let i = 0; i < names.length; i++) out[names[i]!] = row[i];
    return out as R;
  }
}

/** A function that runs `fn` in a transaction, with `deferred`/`immediate`/`exclusive` variants. */
export type Transaction<F extends (...args: never[]) => unknown> = F & {
  deferred: F;
  immediate: F;
  exclusive: F;
};

let savepoints = 0;

export class Database {
  readonly name: string;
  readonly memory: boolean;
  readonly readonly: boolean;
  private readonly db: NativeDatabase;
  private closed = false;

  constructor(file: string, opts: DatabaseOptions = {}) {
    const Native = loadNative();
    this.name = file;
    this.memory = file === ":memory:" || file === "";
    this.readonly = opts.readonly ?? false;
    const mustExist = this.readonly || (opts.fileMustExist ?? false);
    if (!this.memory && mustExist && !fs.existsSync(file)) {
      throw new SqliteError(`unable to open database file: ${file} does not exist`, "SQLITE_CANTOPEN");
    }
    if (!this.memory) {
      const dir = path.dirname(path.resolve(file));
      if (!fs.existsSync(dir)) throw new SqliteError(`unable to open database file: directory ${dir} does not exist`, "SQLITE_CANTOPEN");
    }
    const target = this.readonly && !this.memory ? readonlyUri(file) : file;
    try {
      this.db = new Native(target);
    } catch (err) {
      const converted = convert(err);
      throw converted instanceof SqliteError
        ? converted
        : Object.assign(new SqliteError(`unable to open database file ${file}: ${errorMessage(err)}`, "SQLITE_CANTOPEN"), { cause: err });
    }
    this.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.trunc(opts.timeout ?? 5000))}`);
  }

  get open(): boolean {
    return !this.closed;
  }

  get inTransaction(): boolean {
    return !this.closed && this.db.inTransaction;
  }

  prepare<P extends unknown[] | object = unknown[], R = unknown>(sql: string): Statement<P extends unknown[] ? P : [P], R> {
    this.assertOpen();
    try {
      const stmt = this.db.prepare(sql);
      // libsql refuses raw mode for a statement without result columns; such a one returns no row.
      if (stmt.reader) stmt.raw(true);
      return new Statement(stmt, sql);
    } catch (err) {
      throw convert(err);
    }
  }

  exec(sql: string): this {
    this.assertOpen();
    try {
      this.db.exec(sql);
    } catch (err) {
      throw convert(err);
    }
    return this;
  }

  /** Runs `PRAGMA source`: every row, or with `simple` the first row's first value. */
  pragma(source: string, opts: { simple?: boolean } = {}): unknown {
    const stmt = this.prepare(`PRAGMA ${source}`);
    return opts.simple ? stmt.pluck().get() : stmt.all();
  }

  /**
   * Wraps `fn` so that each call runs in one transaction, committed when it returns and rolled back
   * when it throws. Called inside another transaction it runs in a savepoint of that one.
   */
  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F> {
    if (typeof fn !== "function") throw new TypeError("transaction() expects a function");
    const wrap = (begin: string): F =>
      ((...args: Parameters<F>) => {
        if (this.inTransaction) return this.inSavepoint(fn, args);
        this.exec(begin);
        let result: unknown;
        try {
          result = fn(...args);
          if (result instanceof Promise) throw new TypeError("a transaction function cannot be async: it would commit before it ends");
          this.exec("COMMIT");
        } catch (err) {
          if (this.inTransaction) this.exec("ROLLBACK");
          throw err;
        }
        return result;
      }) as F;
    const tx = wrap("BEGIN") as Transaction<F>;
    tx.deferred = wrap("BEGIN DEFERRED");
    tx.immediate = wrap("BEGIN IMMEDIATE");
    tx.exclusive = wrap("BEGIN EXCLUSIVE");
    return tx;
  }

  private inSavepoint<F extends (...args: never[]) => unknown>(fn: F, args: Parameters<F>): unknown {
    const name = `ll_sp_${++savepoints}`;
    this.exec(`SAVEPOINT ${name}`);
    try {
      const result = fn(...args);
      if (result instanceof Promise) throw new TypeError("a transaction function cannot be async: it would commit before it ends");
      this.exec(`RELEASE ${name}`);
      return result;
    } catch (err) {
      if (this.inTransaction) this.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
      throw err;
    }
  }

  /** Closes the connection; closing twice is harmless. */
  close(): this {
    if (!this.closed) {
      this.closed = true;
      this.db.close();
    }
    return this;
  }

  private assertOpen(): void {
    if (this.closed) throw new TypeError(`the database connection to ${this.name} is closed`);
  }
}

/** A `file:` URI that opens `file` read-only (SQLite's URI syntax: `?` and `#` must be escaped). */
function readonlyUri(file: string): string {
  const abs = path.resolve(file);
  return `file:${encodeURI(abs).replace(/[?#]/g, encodeURIComponent)}?mode=ro`;
}

export default Database;
