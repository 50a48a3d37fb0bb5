import type * as Api from "@opentelemetry/api";
import type pg from "pg";
import { otelEnabled, startOtel } from "./otel.js";

// The queue worker's OpenTelemetry metrics, beside the runs' own (otel.ts): what an operator watches
// a fleet by. Gauges are read when the SDK collects (each export): the queue's rows by state from
// the database, this worker's pool and slots from memory. Counters are this worker's events.
//
//   ledgerloop.queue.depth            runs waiting for a worker (queued)
//   ledgerloop.queue.runs             submitted runs by state (queued, held, paused, done, failed, cancelled)
//   ledgerloop.worker.takeovers       runs this worker took over from a holder whose lease expired
//   ledgerloop.worker.lease_losses    runs this worker lost to another (it stalled past its lease)
//   ledgerloop.worker.jobs            jobs this worker handled, by outcome
//   ledgerloop.worker.active_runs     runs this worker is driving
//   ledgerloop.worker.pool.connections  this worker's state connections by state (in_use, idle, waiting)

/** What the worker tells its metrics; the gauges ask it the rest. */
export interface QueueMetrics {
  /** Runs taken over (by the reaper's hand-over or by taking an expired lease directly). */
  takeovers(n: number): void;
  /** A job's outcome (`lost`: the run's lease was lost to another worker). */
  outcome(o: { outcome: string }): void;
  /** Stops observing and exports what is pending; call before the pool closes. */
  stop(): Promise<void>;
}

export interface QueueMetricsSource {
  /** The worker's state pool (read at each collection: the worker may replace it). */
  pool: () => pg.Pool | undefined;
  /** How many runs the worker drives now. */
  activeRuns: () => number;
  worker: string;
}

/** A query that does not answer by then is left out of this collection (the database is away). */
const COLLECT_TIMEOUT_MS = 5_000;

/** Starts the worker's queue metrics; null (and nothing loaded) when no OTLP endpoint is configured. */
export async function startQueueMetrics(src: QueueMetricsSource): Promise<QueueMetrics | null> {
  if (!otelEnabled()) return null;
  const otel = await startOtel();
  const meter = otel.meter;
  const attrs = { "ledgerloop.worker": src.worker };
  const depth = meter.createObservableGauge("ledgerloop.queue.depth", { description: "submitted runs waiting for a worker" });
  const runs = meter.createObservableGauge("ledgerloop.queue.runs", { description: "submitted runs by state" });
  const active = meter.createObservableGauge("ledgerloop.worker.active_runs", { description: "runs this worker drives" });
  const conns = meter.createObservableGauge("ledgerloop.worker.pool.connections", { description: "this worker's state database connections by state" });
  const takeovers = meter.createCounter("ledgerloop.worker.takeovers", { description: "runs taken over from a holder whose lease expired" });
  const losses = meter.createCounter("ledgerloop.worker.lease_losses", { description: "runs lost to another worker after this one stalled past its lease" });
  const jobs = meter.createCounter("ledgerloop.worker.jobs", { description: "jobs handled, by outcome" });

  const collect = async (o: Api.BatchObservableResult): Promise<void> => {
    const pool = src.pool();
    o.observe(active, src.activeRuns(), attrs);
    if (!pool) return;
    o.observe(conns, pool.totalCount - pool.idleCount, { ...attrs, state: "in_use" });
    o.observe(conns, pool.idleCount, { ...attrs, state: "idle" });
    o.observe(conns, pool.waitingCount, { ...attrs, state: "waiting" });
    let t: NodeJS.Timeout | undefined;
    const rows = await Promise.race([
      pool.query<{ state: string; n: string }>("SELECT state, COUNT(*) AS n FROM ll_run_leases GROUP BY state").then((r) => r.rows),
      new Promise<null>((r) => (t = setTimeout(() => r(null), COLLECT_TIMEOUT_MS))),
    ])
      // Unreachable for now: the queue's gauges skip this export rather than report zeros.
      .catch(() => null)
      .finally(() => clearTimeout(t));
    if (!rows) return;
    const by = new Map(rows.map((r) => [r.state, Number(r.n)]));
    o.observe(depth, by.get("queued") ?? 0);
    for (const state of ["queued", "held", "paused", "done", "failed", "cancelled"]) o.observe(runs, by.get(state) ?? 0, { state });
  };
  meter.addBatchObservableCallback(collect, [depth, runs, active, conns]);
  return {
    takeovers(n) {
      if (n > 0) takeovers.add(n, attrs);
    },
    outcome(o) {
      jobs.add(1, { ...attrs, outcome: o.outcome });
      if (o.outcome === "lost") losses.add(1, attrs);
    },
    async stop() {
      // One last export with the pool still open, then no more reads of it.
      await otel.flush();
      meter.removeBatchObservableCallback(collect, [depth, runs, active, conns]);
    },
  };
}
