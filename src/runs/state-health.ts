import { isStateUnavailable, unavailableReason } from "../ledger/state-unavailable.js";
import { sleep } from "./timers.js";

// Whether a worker's state database answers. A worker must outlive restarts, failovers and a full
// server (53300): any of its calls that fails that way marks the database down (one log line), the
// worker's slots stop taking jobs, one probe retries with backoff, and when it answers again (one
// more line) the slots resume. Writes that must land (a run's hand-back, its end, a job's
// completion) go through `retry`, which waits for the database instead of giving up.

/** Backoff between probes and retried writes: doubling from 1 s, capped so a restart is noticed soon. */
const BACKOFF_MS = [1_000, 2_000, 4_000, 8_000, 15_000];

export class StateHealth {
  private downSince: number | null = null;
  private probing?: Promise<void>;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly probe: () => Promise<unknown>,
    private readonly say: (line: string) => void,
    private readonly backoffMs: readonly number[] = BACKOFF_MS,
  ) {}

  /** True while the database is known to be unavailable. */
  get down(): boolean {
    return this.downSince !== null;
  }

  /**
   * Classifies a failure: a database fault marks it down (and starts the probe) and returns true;
   * any other error returns false, for the caller to handle as its own.
   */
  noteFailure(err: unknown, context: string): boolean {
    if (!isStateUnavailable(err)) return false;
    if (this.downSince === null) {
      this.downSince = Date.now();
      this.say(`the state database is unavailable (${context}: ${unavailableReason(err)}); pausing, retrying with backoff`);
    }
    this.probing ??= this.probeUntilUp().finally(() => (this.probing = undefined));
    return true;
  }

  /** Resolves once the database is up (at once when it is), or when `signal` aborts. */
  async ready(signal?: AbortSignal): Promise<void> {
    if (!this.down || signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        signal?.removeEventListener("abort", done);
        resolve();
      };
      this.waiters.push(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * Runs `fn` until it succeeds: a database fault waits for the database and tries again (the
   * write is retried until written); any other error is thrown. `fn` must be safe to repeat: a
   * write whose commit was lost with its connection runs again.
   */
  async retry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!this.noteFailure(err, what)) throw err;
      }
      await this.ready();
      // Up again, or the probe's answer was a fluke: a short pause keeps a flapping server from a busy loop.
      await sleep(this.backoffMs[Math.min(attempt, this.backoffMs.length - 1)]! / 4);
    }
  }

  private async probeUntilUp(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      await sleep(this.backoffMs[Math.min(attempt, this.backoffMs.length - 1)]!);
      try {
        await this.probe();
        break;
      } catch (err) {
        if (!isStateUnavailable(err)) {
          // Answering, but not as expected: not this class's business; the callers see it.
          break;
        }
      }
    }
    const since = this.downSince ?? Date.now();
    this.downSince = null;
    this.say(`the state database answers again after ${((Date.now() - since) / 1000).toFixed(1)} s; resuming`);
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }
}
