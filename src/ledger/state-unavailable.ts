/**
 * Telling "the state database went away" from every other failure, wherever the error surfaced
 * (the ledger, LangGraph's PostgresSaver, the lessons store, the run registry) and however it was
 * wrapped. A run that loses its database mid-way must stop as `state_unavailable` (resumable:
 * nothing recorded is lost, the last checkpoint and the ledger stay as they were), not as `failed`.
 * No pg import here: the CLI's driver classifies errors of SQLite runs too and must stay light.
 */

/**
 * PostgreSQL error codes of a server or connection that is gone or not there yet: admin shutdown,
 * crash shutdown, cannot connect now (starting up / shutting down), and class 08 (connection
 * exception, connection does not exist, connection failure, cannot establish), and 53300 (too many
 * connections): a full server is a server to wait for, not a reason to fail the run.
 */
const PG_CODES = new Set(["57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004", "53300"]);

/** Socket-level codes of a server that is unreachable or dropped the connection. */
const NET_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/**
 * Messages of node-postgres for a lost connection (it raises plain Errors without a code for them),
 * and PostgreSQL's own sentence for a database closed to connections (55000 is too broad a code).
 */
const MESSAGES = [
  /Connection terminated/i,
  /terminating connection due to/i,
  /Client has encountered a connection error and is not queryable/i,
  /Client was closed and is not queryable/i,
  /timeout exceeded when trying to connect/i,
  /is not currently accepting connections/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
  /too many clients already|remaining connection slots are reserved/i,
];

/** The error and everything it wraps: `cause` chains and AggregateError's members. */
function* chain(err: unknown, depth = 0): Generator<unknown> {
  if (err === null || err === undefined || depth > 8) return;
  yield err;
  if (typeof err !== "object") return;
  const e = err as { cause?: unknown; errors?: unknown };
  if (Array.isArray(e.errors)) for (const x of e.errors) yield* chain(x, depth + 1);
  if (e.cause !== undefined && e.cause !== err) yield* chain(e.cause, depth + 1);
}

/** True when the error, or anything it wraps, says the state database is gone or unreachable. */
export function isStateUnavailable(err: unknown): boolean {
  for (const e of chain(err)) {
    const code = (e as { code?: unknown })?.code;
    if (typeof code === "string" && (PG_CODES.has(code) || NET_CODES.has(code) || code === "STATE_DB_UNREACHABLE")) return true;
    const message = e instanceof Error ? e.message : typeof e === "string" ? e : "";
    if (MESSAGES.some((re) => re.test(message))) return true;
  }
  return false;
}

/** The first line of what the database (or the socket) said, for the one-line pause message. */
export function unavailableReason(err: unknown): string {
  for (const e of chain(err)) {
    const code = (e as { code?: unknown })?.code;
    const message = e instanceof Error ? e.message.split("\n")[0]! : "";
    if (typeof code === "string" && (PG_CODES.has(code) || NET_CODES.has(code))) return message ? `${code}: ${message}` : code;
    if (MESSAGES.some((re) => re.test(message))) return message;
  }
  return err instanceof Error ? err.message.split("\n")[0]! : String(err);
}
