import fs from "node:fs";
import os from "node:os";
import { randomBytes } from "node:crypto";
import type { Database } from "../sqlite/driver.js";
import { LedgerloopError } from "../errors.js";
import { isRunning, readProcStart } from "../proc.js";

// One writer per workspace and per thread. A lease is a row in the state database naming its holder
// (host, boot id, pid, process start time, a random token). Acquisition is one IMMEDIATE transaction
// over all the scopes a command needs, so two processes can never both win. A holder on this machine
// is judged by its process (gone, or its pid reused by another process: taken over at once, so
// `resume` right after a kill -9 just works); a holder on another machine only by its heartbeat, so
// its lease is taken over once it has not been renewed for the expiry window.

/** Exit code of a command refused because another process holds the lease (EX_TEMPFAIL: try again later). */
export const LEASE_EXIT_CODE = 75;

const DEFAULT_HEARTBEAT_MS = 5_000;
const DEFAULT_TTL_MS = 30_000;

/** What a lease protects: the files of a workspace (by real path), or one thread's checkpoints and ledger. */
export type LeaseScope = { kind: "workspace"; path: string } | { kind: "thread"; id: string };

export const workspaceScope = (path: string): LeaseScope => ({ kind: "workspace", path });
export const threadScope = (id: string): LeaseScope => ({ kind: "thread", id });
const keyOf = (s: LeaseScope) => (s.kind === "workspace" ? `workspace:${s.path}` : `thread:${s.id}`);

/** A lease row as stored. Times are milliseconds since the epoch. */
export interface LeaseHolder {
  scope: string;
  token: string;
  host: string;
  bootId: string;
  pid: number;
  procStart: string | null;
  command: string;
  thread: string | null;
  acquiredAt: number;
  heartbeatAt: number;
  expiresAt: number;
}

/** Another live process holds a lease this command needs. */
export class LeaseHeldError extends LedgerloopError {
  readonly exitCode = LEASE_EXIT_CODE;
  constructor(
    message: string,
    readonly holder: LeaseHolder,
  ) {
    super("LEASE_HELD", message);
  }
}

export interface LeaseOptions {
  /** The command taking the lease, shown to the one refused ("run", "resume", "rewind", …). */
  command: string;
  thread?: string;
  /** How often the holder renews (default $LEDGERLOOP_LEASE_HEARTBEAT_MS or 5 s). */
  heartbeatMs?: number;
  /** How long a holder on another machine keeps the lease without renewing (default $LEDGERLOOP_LEASE_TTL_MS or 30 s). */
  ttlMs?: number;
  now?: () => number;
}

/** A held lease: renewed in the background until released. */
export interface Lease {
  token: string;
  scopes: string[];
  /** Aborted when the lease was lost (taken over after this process stopped renewing it). */
  signal: AbortSignal;
  /** Renews now; false when the lease is no longer ours. */
  heartbeat(): boolean;
  /** Gives the lease up (idempotent; a closed database is left alone, its rows then count as a dead holder's). */
  release(): void;
}

function envMs(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

let bootIdCache: string | undefined;
/** Identifies this boot of this machine: pids and start times are only comparable within one. */
function bootId(): string {
  if (bootIdCache === undefined) {
    try {
      bootIdCache = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    } catch {
      bootIdCache = "";
    }
  }
  return bootIdCache;
}

function ensureTable(db: Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ll_leases (
    scope TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    host TEXT NOT NULL,
    boot_id TEXT NOT NULL,
    pid INTEGER NOT NULL,
    proc_start TEXT,
    command TEXT NOT NULL,
    thread TEXT,
    acquired_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  )`);
}

type Row = {
  scope: string;
  token: string;
  host: string;
  boot_id: string;
  pid: number;
  proc_start: string | null;
  command: string;
  thread: string | null;
  acquired_at: number;
  heartbeat_at: number;
  expires_at: number;
};

const fromRow = (r: Row): LeaseHolder => ({
  scope: r.scope,
  token: r.token,
  host: r.host,
  bootId: r.boot_id,
  pid: r.pid,
  procStart: r.proc_start,
  command: r.command,
  thread: r.thread,
  acquiredAt: r.acquired_at,
  heartbeatAt: r.heartbeat_at,
  expiresAt: r.expires_at,
});

/** True when the holder runs on this machine, in this boot. */
export function isLocalHolder(h: LeaseHolder): boolean {
  return h.host === os.hostname() && h.bootId === bootId();
}

/** Whether a holder still counts: a local one while its process lives, a remote one until its lease expires. */
export function holderAlive(h: LeaseHolder, now = Date.now()): boolean {
  if (isLocalHolder(h)) return h.pid === process.pid || isRunning(h.pid, h.procStart);
  return now < h.expiresAt;
}

/** The one-line refusal naming the holder. */
export function describeConflict(h: LeaseHolder, now = Date.now()): string {
  const what = h.scope.startsWith("workspace:") ? `workspace ${h.scope.slice("workspace:".length)}` : `run ${h.scope.slice("thread:".length)}`;
  const by = `${h.command}${h.thread ? ` of ${h.thread}` : ""}`;
  const ago = Math.max(0, Math.round((now - h.heartbeatAt) / 1000));
  const where = `pid ${h.pid} on host ${h.host}, heartbeat ${ago} s ago`;
  const remote = isLocalHolder(h) ? "" : `, or until its lease expires in ${Math.max(0, Math.ceil((h.expiresAt - now) / 1000))} s`;
  return `${what} is in use by ${by} (${where}); wait for it${remote} or stop it`;
}

/** Current lease rows (for inspection and tests); none when no lease was ever taken. */
export function listLeases(db: Database): LeaseHolder[] {
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'll_leases'").get();
  return has ? (db.prepare("SELECT * FROM ll_leases ORDER BY scope").all() as Row[]).map(fromRow) : [];
}

/** Drops every lease row: for a copied state database, whose rows name the original's holders. */
export function clearLeases(db: Database): void {
  ensureTable(db);
  db.prepare("DELETE FROM ll_leases").run();
}

/**
 * Takes the leases of all `scopes` at once, or throws LeaseHeldError naming the first live holder.
 * Rows of dead or expired holders are taken over. The lease renews itself until `release()`.
 */
export function acquireLease(db: Database, scopes: LeaseScope[], opts: LeaseOptions): Lease {
  const now = opts.now ?? Date.now;
  const heartbeatMs = opts.heartbeatMs ?? envMs("LEDGERLOOP_LEASE_HEARTBEAT_MS", DEFAULT_HEARTBEAT_MS);
  const ttlMs = Math.max(opts.ttlMs ?? envMs("LEDGERLOOP_LEASE_TTL_MS", DEFAULT_TTL_MS), heartbeatMs * 2);
  const token = randomBytes(12).toString("hex");
  const keys = [...new Set(scopes.map(keyOf))];
  ensureTable(db);
  const take = db.transaction(() => {
    const t = now();
    for (const key of keys) {
      const row = db.prepare("SELECT * FROM ll_leases WHERE scope = ?").get(key) as Row | undefined;
      if (row && holderAlive(fromRow(row), t)) throw new LeaseHeldError(describeConflict(fromRow(row), t), fromRow(row));
    }
    const put = db.prepare(`INSERT OR REPLACE INTO ll_leases
      (scope, token, host, boot_id, pid, proc_start, command, thread, acquired_at, heartbeat_at, expires_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    for (const key of keys) {
      put.run(key, token, os.hostname(), bootId(), process.pid, readProcStart(process.pid), opts.command, opts.thread ?? null, t, t, t + ttlMs);
    }
  });
  // IMMEDIATE takes the write lock before the first read: check and insert cannot interleave with another acquirer.
  take.immediate();

  const lost = new AbortController();
  let released = false;
  const renew = db.prepare("UPDATE ll_leases SET heartbeat_at = ?, expires_at = ? WHERE token = ?");
  const heartbeat = (): boolean => {
    if (released || lost.signal.aborted || !db.open) return false;
    const t = now();
    let changed: number;
    try {
      changed = renew.run(t, t + ttlMs, token).changes;
    } catch {
      return true; // busy: the next beat tries again, well within the expiry window
    }
    if (changed < keys.length) {
      lost.abort(new Error("the lease was taken over by another process"));
      return false;
    }
    return true;
  };
  const timer = setInterval(heartbeat, heartbeatMs);
  timer.unref();
  const release = () => {
    if (released) return;
    released = true;
    clearInterval(timer);
    process.off("exit", release);
    if (!db.open) return;
    try {
      db.prepare("DELETE FROM ll_leases WHERE token = ?").run(token);
    } catch {
      // Busy or read-only now: the row names a process that is about to be gone, which counts as released.
    }
  };
  // A last resort for exits that skip the finally blocks (process.exit): the database is synchronous.
  process.on("exit", release);
  return { token, scopes: keys, signal: lost.signal, heartbeat, release };
}
