import os from "node:os";
import type pg from "pg";
import { errorMessage } from "../errors.js";
import { PG_SCHEMA_VERSION } from "../ledger/pg-db.js";
import { heartbeatFleetWorker, registerFleetWorker, stopFleetWorker } from "../queue/fleet.js";
import { packageVersion } from "../version.js";
import type { StateHealth } from "./state-health.js";
import { withTimeout } from "./timers.js";

// A worker's row in the fleet table (queue/fleet.ts), kept by the worker itself: registered at
// start, renewed every lease/3, marked stopped on a graceful exit. The heartbeat also reads the
// database's schema version: a newer ledgerloop that migrated the database while this one runs
// makes it retire (no new jobs, current runs finished), since its queries may no longer fit.

/** Keeps a worker's fleet row fresh and watches the schema version. */
export class WorkerPresence {
  private timer?: NodeJS.Timeout;
  private retiring: string | null = null;
  /** The heartbeat under way: stop() waits for it, or it could write its state after "stopped". */
  private beating: Promise<void> | null = null;

  constructor(
    private readonly pool: () => pg.Pool,
    private readonly o: {
      id: string;
      slots: number;
      ttlMs: number;
      health: StateHealth;
      say: (line: string) => void;
      /** Called once, when the database's schema turns out newer than this build's. */
      onNewerSchema: (reason: string) => void;
    },
  ) {}

  private identity() {
    return { id: this.o.id, host: os.hostname(), pid: process.pid, slots: this.o.slots, version: packageVersion, schemaVersion: PG_SCHEMA_VERSION };
  }

  /** Registers the worker and starts its heartbeat. */
  async start(): Promise<void> {
    await registerFleetWorker(this.pool(), this.identity(), this.o.ttlMs);
    this.timer = setInterval(
      () => {
        if (this.beating) return;
        this.beating = this.beat().finally(() => (this.beating = null));
      },
      Math.max(200, Math.floor(this.o.ttlMs / 3)),
    );
  }

  private async beat(): Promise<void> {
    try {
      const r = await heartbeatFleetWorker(this.pool(), this.o.id, this.o.ttlMs, this.retiring ? "retiring" : "running", this.retiring);
      // Pruned or removed by hand while we were cut off: a live worker is listed again.
      if (!r.registered) await registerFleetWorker(this.pool(), this.identity(), this.o.ttlMs);
      if (r.schemaVersion > PG_SCHEMA_VERSION && !this.retiring) {
        this.retiring =
          `the state database was migrated to schema version ${r.schemaVersion}, newer than this ledgerloop ${packageVersion} understands (${PG_SCHEMA_VERSION}); ` +
          "taking no new jobs, finishing the current ones; upgrade this worker";
        this.o.onNewerSchema(this.retiring);
      }
    } catch (err) {
      if (!this.o.health.noteFailure(err, "fleet heartbeat")) this.o.say(`fleet heartbeat: ${errorMessage(err)}`);
    }
  }

  /** Stops the heartbeat and marks the worker stopped (bounded: an unreachable database must not hold up the exit). */
  async stop(note: string): Promise<void> {
    clearInterval(this.timer);
    // A heartbeat in flight would otherwise land after the stop and list the worker as running (or retiring) again.
    if (this.beating) await withTimeout(this.beating, 3_000).catch(() => {});
    await withTimeout(stopFleetWorker(this.pool(), this.o.id, this.retiring ?? note), 3_000).catch((e) =>
      this.o.say(`stop: recording it in the fleet: ${errorMessage(e)}`),
    );
  }
}
