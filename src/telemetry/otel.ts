import { randomBytes } from "node:crypto";
import type * as Api from "@opentelemetry/api";
import type { RunTrace } from "../ledger/runs.js";
import { importOptional, type OptionalPackage } from "../optional-packages.js";

/**
 * OpenTelemetry, loaded only when an OTLP endpoint is configured: without
 * OTEL_EXPORTER_OTLP_ENDPOINT (or its traces variant) not one OTel module is imported, no exporter
 * or timer starts, and every hook is a plain function call.
 */
export function otelEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  if (/^true$/i.test(env.OTEL_SDK_DISABLED ?? "")) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** The instruments runs record into (the OTel metrics API). */
export interface RunMetrics {
  modelCalls: Api.Counter;
  tokens: Api.Counter;
  costUsd: Api.Counter;
  modelRetries: Api.Counter;
  toolCalls: Api.Counter;
  toolFailures: Api.Counter;
  nodeDuration: Api.Histogram;
}

export interface Otel {
  api: typeof Api;
  tracer: Api.Tracer;
  metrics: RunMetrics;
  /** The process's meter, for instruments of other parts (the queue worker's, queue-metrics.ts). */
  meter: Api.Meter;
  /** Makes the next root span carry these ids: the run's first process exports the root span the registry names. */
  presetRoot(trace: RunTrace): void;
  /** Exports what is pending (spans ended so far, metrics). */
  flush(): Promise<void>;
}

let started: Promise<Otel> | undefined;

/** The SDK's packages, optional: installed by those who export telemetry. */
const OTEL_SDK: OptionalPackage[] = [
  "@opentelemetry/sdk-trace",
  "@opentelemetry/sdk-metrics",
  "@opentelemetry/resources",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/exporter-metrics-otlp-http",
];

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

/** The process's tracer and meter providers, exporting OTLP over HTTP (JSON) to the configured endpoint; built once. */
export function startOtel(): Promise<Otel> {
  started ??= (async () => {
    const [
      api,
      { TracerProvider, BatchSpanProcessor },
      { MeterProvider, PeriodicExportingMetricReader },
      { resourceFromAttributes },
      { OTLPTraceExporter },
      { OTLPMetricExporter },
    ] = await importOptional(OTEL_SDK, "OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT is set)", () =>
      Promise.all([
        import("@opentelemetry/api"),
        import("@opentelemetry/sdk-trace"),
        import("@opentelemetry/sdk-metrics"),
        import("@opentelemetry/resources"),
        import("@opentelemetry/exporter-trace-otlp-http"),
        import("@opentelemetry/exporter-metrics-otlp-http"),
      ]),
    );
    const resource = resourceFromAttributes({ "service.name": process.env.OTEL_SERVICE_NAME?.trim() || "ledgerloop", "process.pid": process.pid });
    // Each preset id is used once, whichever of the two the SDK asks for first.
    let presetTrace: string | undefined;
    let presetSpan: string | undefined;
    const idGenerator = {
      generateTraceId: () => {
        const id = presetTrace ?? hex(16);
        presetTrace = undefined;
        return id;
      },
      generateSpanId: () => {
        const id = presetSpan ?? hex(8);
        presetSpan = undefined;
        return id;
      },
    };
    const tracerProvider = new TracerProvider({
      resource,
      idGenerator,
      spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: 2000 })],
    });
    // The metrics endpoint comes from the same variables; without a metrics-specific one, the common one.
    // The interval is the SDK's standard variable (a long-running worker's gauges are only seen at each export).
    const asked = Number(process.env.OTEL_METRIC_EXPORT_INTERVAL);
    const interval = Number.isFinite(asked) && asked >= 100 ? asked : 15_000;
    const meterProvider = new MeterProvider({
      resource,
      // The SDK refuses a timeout longer than the interval.
      readers: [
        new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter(),
          exportIntervalMillis: interval,
          exportTimeoutMillis: Math.min(interval, 30_000),
        }),
      ],
    });
    const meter = meterProvider.getMeter("ledgerloop");
    const metrics: RunMetrics = {
      modelCalls: meter.createCounter("ledgerloop.model.calls", { description: "model calls" }),
      tokens: meter.createCounter("ledgerloop.model.tokens", { description: "tokens by kind (input, cached_input, output)" }),
      costUsd: meter.createCounter("ledgerloop.model.cost", { description: "model cost at the run's price table", unit: "USD" }),
      modelRetries: meter.createCounter("ledgerloop.model.retries", { description: "retries of rate-limited or failed model calls" }),
      toolCalls: meter.createCounter("ledgerloop.tool.calls", { description: "tool runs by tool and status" }),
      toolFailures: meter.createCounter("ledgerloop.tool.failures", { description: "tool runs that did not succeed, by error class" }),
      nodeDuration: meter.createHistogram("ledgerloop.node.duration", { description: "duration of a graph node (superstep)", unit: "ms" }),
    };
    return {
      api,
      tracer: tracerProvider.getTracer("ledgerloop", "0.1.0"),
      metrics,
      meter,
      presetRoot(trace) {
        presetTrace = trace.traceId;
        presetSpan = trace.spanId;
      },
      async flush() {
        await Promise.allSettled([tracerProvider.forceFlush(), meterProvider.forceFlush()]);
      },
    };
  })();
  return started;
}

/** Exports whatever the process recorded, when telemetry was started at all. */
export async function flushOtel(): Promise<void> {
  if (started) await (await started).flush();
}
