import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import type * as Api from "@opentelemetry/api";
import type { Logger } from "pino";
import { errorMessage } from "../errors.js";
import type { PayloadOf, Subtask } from "../events.js";
import type { RunRegistryPort, RunTrace } from "../ledger/runs.js";
import { retryWatch } from "../models/retry.js";
import type { Redactor } from "../secrets.js";
import { otelEnabled, startOtel, type Otel } from "./otel.js";
import { openRunLog } from "./run-log.js";

/**
 * What happens inside a run, told in one place: the graph wraps every node (agent/run-keeping.ts),
 * the model port call (agent/nodes/deps.ts) and the tool execution (agent/nodes/act.ts) with the hooks below.
 * Every run gets a JSON log in its state directory; with an OTLP endpoint set, the same moments are
 * also spans (run → node → model/tool) and metrics. Observing never fails a run: a hook that cannot
 * log or export lets the work go on.
 */

// A tool's risk comes with the call, from the tool's definition (agent/nodes/act.ts): no table here.
import type { ToolRisk } from "../tool-catalogue.js";

interface NodeScope {
  run: RunObserver;
  node: string;
  step: number;
  subtask: string | null;
  span: Api.Span | null;
}

const scope = new AsyncLocalStorage<NodeScope>();

/** What the model-call hook reads of an answer. */
type ModelAnswer = { usage?: PayloadOf<"model_call">["usage"]; exhausted?: boolean };

/** The subset of the graph state a node wrapper reads. */
interface StateView {
  step: number;
  subtasks: Subtask[];
}

/** The parts of a run's runtime the observer reads (declared here so telemetry/ does not import the runtime above it). */
export interface ObservedRuntime {
  workspace: string;
  stateDir: string;
  dbPath: string;
  runs: RunRegistryPort;
  model: { name: string };
  redactor: Redactor;
  progress?: (e: { node: string; step: number; text: string }) => void;
}

/** One run's observer in this process: its log, and its spans when OTel is on. */
export class RunObserver {
  private readonly subtaskStarts = new Map<string, number>();
  private lastSubtaskEnd: number;
  private traceStored: boolean;
  private ended = false;

  constructor(
    readonly rt: ObservedRuntime,
    readonly thread: string,
    readonly trace: RunTrace,
    private readonly log: Logger,
    readonly logFile: string,
    private readonly otel: Otel | null,
    private readonly root: Api.Span | null,
    private readonly registry: RunRegistryPort,
    traceStored: boolean,
    earlier: Array<Record<string, unknown>>,
  ) {
    this.traceStored = traceStored;
    this.lastSubtaskEnd = Date.now();
    // A resumed run finds the subtask starts its earlier processes logged.
    for (const l of earlier) {
      if (l.event === "subtask_start" && typeof l.subtask === "string") this.subtaskStarts.set(l.subtask, Date.parse(String(l.time)) || Date.now());
      if (l.event === "subtask_end" && typeof l.subtask === "string") this.subtaskStarts.delete(l.subtask);
    }
  }

  /** Logs one line, redacted with the run's redactor. */
  info(event: string, fields: Record<string, unknown>, msg?: string): void {
    try {
      this.log.info(this.rt.redactor.redactDeep({ event, ...fields }), msg ? this.rt.redactor.redact(msg) : event);
    } catch {
      // a full disk must not stop the run
    }
  }

  warn(event: string, fields: Record<string, unknown>, msg?: string): void {
    try {
      this.log.warn(this.rt.redactor.redactDeep({ event, ...fields }), msg ? this.rt.redactor.redact(msg) : event);
    } catch {
      // as above
    }
  }

  private spanUnder(parent: Api.Span | null, name: string, attributes: Api.Attributes): Api.Span | null {
    if (!this.otel) return null;
    const { api } = this.otel;
    const ctx = parent ? api.trace.setSpan(api.ROOT_CONTEXT, parent) : api.ROOT_CONTEXT;
    return this.otel.tracer.startSpan(name, { attributes: { "ledgerloop.thread": this.thread, ...attributes } }, ctx);
  }

  /** Runs a graph node as a span, logging its start, end, duration and outcome and the subtasks it started or ended. */
  async node<T>(node: string, state: StateView, fn: () => Promise<T>): Promise<T> {
    const subtask = state.subtasks.find((s) => s.status === "in_progress")?.id ?? null;
    const span = this.spanUnder(this.root, `node ${node}`, {
      "ledgerloop.node": node,
      "ledgerloop.step": state.step,
      ...(subtask ? { "ledgerloop.subtask": subtask } : {}),
    });
    const started = performance.now();
    this.log.debug({ event: "node_start", node, step: state.step, subtask }, `${node} started`);
    let outcome: "ok" | "paused" | "error" = "ok";
    try {
      const update = await scope.run({ run: this, node, step: state.step, subtask, span }, fn);
      this.subtaskChanges(state, (update ?? {}) as Partial<StateView> & { status?: string });
      return update;
    } catch (err) {
      const name = (err as Error)?.name;
      const paused = name === "GraphInterrupt" || name === "NodeInterrupt" || name === "ParentCommand";
      const code = (err as { code?: string })?.code;
      const stop = code === "MODEL_RATE_LIMITED" || code === "MODEL_UNAVAILABLE" || code === "MODEL_UNREACHABLE" || code === "BUDGET_EXHAUSTED";
      outcome = paused || stop ? "paused" : "error";
      if (paused) this.info("pause", { node, step: state.step, reason: "approval" }, `${node}: paused for an approval`);
      else if (stop) this.warn("pause", { node, step: state.step, reason: code }, `${node}: ${errorMessage(err)}`);
      else this.warn("node_error", { node, step: state.step, errorClass: name ?? "Error" }, `${node}: ${errorMessage(err)}`);
      if (span && outcome === "error") {
        span.recordException(err as Error);
        span.setStatus({ code: 2, message: this.rt.redactor.redact(errorMessage(err)).slice(0, 500) });
      }
      throw err;
    } finally {
      const durationMs = Math.round(performance.now() - started);
      this.info("node_end", { node, step: state.step, subtask, durationMs, status: outcome }, `${node} ${outcome} in ${durationMs} ms`);
      span?.setAttribute("ledgerloop.status", outcome);
      span?.end();
      this.otel?.metrics.nodeDuration.record(durationMs, { node, status: outcome });
      await this.storeTrace();
    }
  }

  private subtaskChanges(before: StateView, update: Partial<StateView>): void {
    if (!update.subtasks) return;
    const now = Date.now();
    for (const s of update.subtasks) {
      const prev = before.subtasks.find((p) => p.id === s.id)?.status;
      if (prev === s.status) continue;
      if (s.status === "in_progress") {
        this.subtaskStarts.set(s.id, now);
        this.info("subtask_start", { subtask: s.id, description: s.description, status: s.status }, `subtask ${s.id} started`);
      } else if (s.status === "completed" || s.status === "blocked") {
        // A subtask closed without having been in progress started when the one before it ended.
        const from = this.subtaskStarts.get(s.id) ?? this.lastSubtaskEnd;
        this.subtaskStarts.delete(s.id);
        this.lastSubtaskEnd = now;
        this.info("subtask_end", { subtask: s.id, description: s.description, status: s.status, durationMs: now - from }, `subtask ${s.id} ${s.status}`);
      }
    }
  }

  /** The registry row exists once plan registered the run: the trace id is stored then (in the run's backend). */
  private async storeTrace(): Promise<void> {
    if (this.traceStored) return;
    try {
      this.traceStored = (await this.registry.recordTrace(this.thread, this.trace)) !== null;
    } catch {
      // a locked or unreachable database: tried again after the next node
    }
  }

  /** Logs the model call (tokens, cost, retries) and records it as a child span of the node. */
  async modelCall<R extends ModelAnswer>(
    s: NodeScope,
    info: { node: string; turn: number; model: string },
    fn: () => Promise<R>,
    cost: (r: R) => number | undefined,
  ): Promise<R> {
    const span = this.spanUnder(s.span, `model ${info.node}`, {
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": info.model,
      "ledgerloop.node": info.node,
      "ledgerloop.turn": info.turn,
      "ledgerloop.step": s.step,
      ...(s.subtask ? { "ledgerloop.subtask": s.subtask } : {}),
    });
    let retries = 0;
    const started = performance.now();
    const onRetry = (r: { attempt: number; delayMs: number; fault: { kind: string; status?: number } }) => {
      retries = r.attempt;
      this.warn(
        "model_retry",
        {
          node: info.node,
          turn: info.turn,
          model: info.model,
          attempt: r.attempt,
          delayMs: r.delayMs,
          fault: r.fault.kind,
          httpStatus: r.fault.status ?? null,
        },
        `model call retry ${r.attempt} in ${r.delayMs} ms (${r.fault.kind})`,
      );
      this.otel?.metrics.modelRetries.add(1, { model: info.model, fault: r.fault.kind });
    };
    try {
      const r = await retryWatch.run(onRetry, fn);
      if (r.exhausted) {
        // A scripted model with no turn left: no call was made (and none is recorded in the ledger).
        this.log.debug({ event: "model_exhausted", ...info, step: s.step }, `${info.node}: the script has no turn left`);
        span?.setAttribute("ledgerloop.exhausted", true);
        return r;
      }
      const u = r.usage ?? {};
      const costUsd = cost(r) ?? 0;
      const durationMs = Math.round(performance.now() - started);
      this.info(
        "model_call",
        {
          ...info,
          step: s.step,
          inputTokens: u.inputTokens ?? 0,
          cachedInputTokens: u.cachedInputTokens ?? 0,
          outputTokens: u.outputTokens ?? 0,
          costUsd,
          retries,
          durationMs,
        },
        `${info.node} model call: ${u.inputTokens ?? 0} in, ${u.outputTokens ?? 0} out`,
      );
      span?.setAttributes({
        "gen_ai.usage.input_tokens": u.inputTokens ?? 0,
        "gen_ai.usage.output_tokens": u.outputTokens ?? 0,
        "ledgerloop.usage.cached_input_tokens": u.cachedInputTokens ?? 0,
        "ledgerloop.cost_usd": costUsd,
        "ledgerloop.retries": retries,
      });
      const m = this.otel?.metrics;
      if (m) {
        const a = { model: info.model, node: info.node };
        m.modelCalls.add(1, a);
        m.tokens.add(u.inputTokens ?? 0, { ...a, kind: "input" });
        m.tokens.add(u.cachedInputTokens ?? 0, { ...a, kind: "cached_input" });
        m.tokens.add(u.outputTokens ?? 0, { ...a, kind: "output" });
        m.costUsd.add(costUsd, { model: info.model });
      }
      return r;
    } catch (err) {
      this.warn(
        "model_error",
        { ...info, step: s.step, retries, errorClass: (err as { code?: string })?.code ?? (err as Error)?.name ?? "Error" },
        errorMessage(err),
      );
      span?.setAttribute("ledgerloop.retries", retries);
      span?.recordException(err as Error);
      span?.setStatus({ code: 2, message: this.rt.redactor.redact(errorMessage(err)).slice(0, 500) });
      throw err;
    } finally {
      span?.end();
    }
  }

  /** Logs a tool run (exit code, duration, error class, risk) and records it as a child span of the node. */
  async toolCall(
    s: NodeScope,
    info: { tool: string; actionId: string; risk?: ToolRisk },
    fn: () => Promise<PayloadOf<"environment_feedback">>,
  ): Promise<PayloadOf<"environment_feedback">> {
    // A name no tool has (the model made it up) counts as exec, the most guarded local level.
    const risk = info.risk ?? "exec";
    const span = this.spanUnder(s.span, `tool ${info.tool}`, {
      "gen_ai.tool.name": info.tool,
      "ledgerloop.tool": info.tool,
      "ledgerloop.tool.risk": risk,
      "ledgerloop.action": info.actionId,
      "ledgerloop.step": s.step,
      ...(s.subtask ? { "ledgerloop.subtask": s.subtask } : {}),
    });
    try {
      const fb = await fn();
      const errorClass = fb.errorClass ?? null;
      // Shell commands also say what stopped them and what they used (their cgroups' figures).
      const command = {
        ...(fb.stoppedBy ? { stoppedBy: fb.stoppedBy, ...(fb.limit ? { limit: fb.limit } : {}) } : {}),
        ...(fb.usage?.cpuMs != null ? { cpuMs: fb.usage.cpuMs } : {}),
        ...(fb.usage?.memoryPeakBytes != null ? { memoryPeakBytes: fb.usage.memoryPeakBytes } : {}),
      };
      const fields = {
        tool: info.tool,
        actionId: info.actionId,
        step: s.step,
        subtask: s.subtask,
        risk,
        status: fb.status,
        exitCode: fb.exitCode ?? null,
        durationMs: fb.durationMs,
        errorClass,
        ...command,
      };
      if (fb.status === "ok") this.info("tool_run", fields, `${info.tool} ok`);
      else this.warn("tool_run", fields, `${info.tool} ${fb.status}${errorClass ? ` (${errorClass})` : ""}`);
      span?.setAttributes({
        "ledgerloop.tool.status": fb.status,
        "ledgerloop.tool.duration_ms": fb.durationMs,
        ...(fb.exitCode !== undefined && fb.exitCode !== null ? { "ledgerloop.tool.exit_code": fb.exitCode } : {}),
        ...(errorClass ? { "error.type": errorClass } : {}),
        ...(command.stoppedBy ? { "ledgerloop.command.stopped_by": command.stoppedBy } : {}),
        ...(command.limit ? { "ledgerloop.command.limit": command.limit } : {}),
        ...(command.cpuMs !== undefined ? { "ledgerloop.command.cpu_ms": command.cpuMs } : {}),
        ...(command.memoryPeakBytes !== undefined ? { "ledgerloop.command.memory_peak_bytes": command.memoryPeakBytes } : {}),
      });
      if (fb.status !== "ok") span?.setStatus({ code: 2, message: errorClass ?? fb.status });
      this.otel?.metrics.toolCalls.add(1, { tool: info.tool, status: fb.status, risk });
      if (fb.status !== "ok") this.otel?.metrics.toolFailures.add(1, { tool: info.tool, error_class: errorClass ?? fb.status });
      return fb;
    } catch (err) {
      span?.recordException(err as Error);
      throw err;
    } finally {
      span?.end();
    }
  }

  /** Ends this process's part of the run: logs the outcome, ends its root span, exports what is pending. */
  async end(status: string, steps: number): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.info("run_end", { status, steps }, `run ${status} after ${steps} step(s)`);
    this.root?.setAttributes({ "ledgerloop.status": status, "ledgerloop.steps": steps });
    this.root?.end();
    await this.otel?.flush();
  }
}

const observers = new Map<string, Promise<RunObserver | null>>();

async function createObserver(rt: ObservedRuntime, thread: string): Promise<RunObserver> {
  // The backend's registry: on PostgreSQL a run continued by another worker keeps its trace.
  const registry = rt.runs;
  const stored = (await registry.get(thread).catch(() => null))?.trace ?? null;
  const trace: RunTrace = stored ?? { traceId: randomBytes(16).toString("hex"), spanId: randomBytes(8).toString("hex") };
  const { logger, file, earlier } = await openRunLog(rt.stateDir, thread, { thread, traceId: trace.traceId });
  let otel: Otel | null = null;
  let root: Api.Span | null = null;
  if (otelEnabled()) {
    otel = await startOtel();
    const attributes = { "ledgerloop.thread": thread, "ledgerloop.model": rt.model.name, "ledgerloop.workspace": rt.workspace };
    if (!stored) {
      // The run's first process exports the root span under the ids the registry keeps.
      otel.presetRoot(trace);
      root = otel.tracer.startSpan("ledgerloop run", { root: true, attributes });
    } else {
      const parent = otel.api.trace.setSpanContext(otel.api.ROOT_CONTEXT, { traceId: trace.traceId, spanId: trace.spanId, traceFlags: 1, isRemote: true });
      root = otel.tracer.startSpan("ledgerloop resume", { attributes }, parent);
    }
  }
  const obs = new RunObserver(rt, thread, trace, logger, file, otel, root, registry, stored !== null, earlier);
  obs.info(
    "run_start",
    { model: rt.model.name, workspace: rt.workspace, pid: process.pid, resumed: stored !== null || earlier.length > 0, otel: otel !== null },
    `run ${thread} in process ${process.pid}`,
  );
  return obs;
}

/** The observer of a run in this process (created on first use; null when its log cannot be opened). */
export function observerFor(rt: ObservedRuntime, thread: string): Promise<RunObserver | null> {
  const key = `${rt.dbPath}\u0000${thread}`;
  let o = observers.get(key);
  if (!o) {
    o = createObserver(rt, thread).catch((err) => {
      rt.progress?.({ node: "log", step: 0, text: `warning: no run log: ${errorMessage(err)}` });
      return null;
    });
    observers.set(key, o);
  }
  return o;
}

/** Wraps a graph node (see RunObserver.node); without a thread id the node just runs. */
export async function observeNode<T>(rt: ObservedRuntime, thread: string | undefined, node: string, state: StateView, fn: () => Promise<T>): Promise<T> {
  const obs = thread ? await observerFor(rt, thread) : null;
  return obs ? obs.node(node, state, fn) : fn();
}

/** Wraps the model port call of the node running now (outside an observed node it just runs). */
export function observeModelCall<R extends ModelAnswer>(
  info: { node: string; turn: number; model: string },
  fn: () => Promise<R>,
  cost: (r: R) => number | undefined,
): Promise<R> {
  const s = scope.getStore();
  return s ? s.run.modelCall(s, info, fn, cost) : fn();
}

/** Wraps a tool's execution in the node running now. */
export function observeToolCall(
  info: { tool: string; actionId: string; risk?: ToolRisk },
  fn: () => Promise<PayloadOf<"environment_feedback">>,
): Promise<PayloadOf<"environment_feedback">> {
  const s = scope.getStore();
  return s ? s.run.toolCall(s, info, fn) : fn();
}

/** Ends the observation of a run in this process (after its last node), exporting pending telemetry. */
export async function endObservation(rt: ObservedRuntime, thread: string, status: string, steps: number): Promise<void> {
  const key = `${rt.dbPath}\u0000${thread}`;
  const o = observers.get(key);
  if (!o) return;
  observers.delete(key);
  await (await o)?.end(status, steps);
}
