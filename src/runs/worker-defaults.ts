// The queue worker's defaults (worker.ts), in a module of their own: the CLI reads them without
// loading the worker.

/**
 * The default size of a worker's one pool: two connections a slot (a run's ledger append or checkpoint
 * beside its revision push or lease renewal) and two for the worker's own queue, leases and heartbeat.
 */
export function defaultPoolSize(concurrency: number): number {
  return concurrency * 2 + 2;
}

/**
 * The default wait before a run handed back for a passing cause is taken again: long enough for a
 * database restart or a lease holder's exit to be over, short enough that a run does not sit idle.
 * A run whose files could not be reached waits this times the attempt's number.
 */
export const DEFAULT_RETRY_DELAY_SECONDS = 5;

/** How long a stopping worker lets a run's current step go on before cutting it off. */
export const DEFAULT_STOP_GRACE_MS = 20_000;
