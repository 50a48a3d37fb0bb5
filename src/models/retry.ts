/**
 * Model faults, classified, and the retry loop around a model call. LangChain's own retries are off
 * (ChatOpenAI maxRetries 0): its backoff ignores Retry-After on 503 and gives up at once on a 429
 * without the header, and a pause must outlast what a single HTTP client would wait.
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** What went wrong with a model call, as far as what to do next is concerned. */
export type FaultKind =
  /** 429: wait and retry; when retries run out the run stops as `rate_limited`. */
  | "rate_limited"
  /** 5xx, dropped connection, timeout, unreachable: retry; then the run stops as `model_unavailable`. */
  | "unavailable"
  /** 401/403: the key is missing, wrong or not allowed this model. Not retried. */
  | "auth"
  /** The prompt is longer than the model's context window: compact and retry once. */
  | "context_length"
  /** Any other 4xx: the request is wrong; retrying would send the same thing. */
  | "bad_request"
  /** The caller stopped the run. */
  | "aborted";

export interface Fault {
  kind: FaultKind;
  status?: number;
  /** From Retry-After (seconds or an HTTP date), or a "retry after N s" message. */
  retryAfterMs?: number;
  unreachable?: boolean;
  timeout?: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null;

/** The error and the errors it wraps (LangChain wraps the SDK's, which wraps fetch's). */
function chain(err: unknown): Obj[] {
  const out: Obj[] = [];
  let e: unknown = err;
  for (let i = 0; i < 6 && isObj(e) && !out.includes(e); i++) {
    out.push(e);
    e = e.cause;
  }
  return out;
}

function header(e: Obj, name: string): string | undefined {
  const h = e.headers ?? (isObj(e.response) ? e.response.headers : undefined);
  if (!isObj(h)) return undefined;
  if (typeof (h as { get?: unknown }).get === "function") return (h as unknown as Headers).get(name) ?? undefined;
  const v = h[name] ?? h[name.toLowerCase()];
  return typeof v === "string" ? v : undefined;
}

/** Milliseconds to wait for a Retry-After value: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value?.trim()) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const CONTEXT_LENGTH = /context_length_exceeded|maximum context length|exceeds the context window|context window|too many tokens|prompt is too long/i;
const UNREACHABLE = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|EPIPE|socket hang up|fetch failed|Connection error|other side closed|terminated/i;

/** Classifies any error a model call threw. */
export function classifyFault(err: unknown, signal?: AbortSignal): Fault {
  if (signal?.aborted) return { kind: "aborted" };
  const links = chain(err);
  const text = links.map((e) => `${String(e.name ?? "")} ${String(e.message ?? "")} ${String(e.code ?? "")}`).join(" ");
  let status: number | undefined;
  let retryAfter: string | undefined;
  for (const e of links) {
    const s = e.status ?? e.statusCode ?? (isObj(e.response) ? e.response.status : undefined);
    if (status === undefined && typeof s === "number") status = s;
    retryAfter ??= header(e, "retry-after");
  }
  const retryAfterMs = parseRetryAfter(retryAfter);
  if (/AbortError|APIUserAbortError|Request was aborted/.test(text) && !/timed? ?out/i.test(text)) return { kind: "aborted", status };
  if (/ContextOverflowError/.test(text) || ((status === 400 || status === 413 || status === undefined) && CONTEXT_LENGTH.test(text))) {
    return { kind: "context_length", status };
  }
  if (status === 429) return { kind: "rate_limited", status, retryAfterMs };
  if (status === 401 || status === 403) return { kind: "auth", status };
  if (status !== undefined && (status >= 500 || status === 408 || status === 409)) return { kind: "unavailable", status, retryAfterMs };
  if (status !== undefined && status >= 400) return { kind: "bad_request", status };
  if (/TimeoutError|timed? ?out|ETIMEDOUT/i.test(text)) return { kind: "unavailable", timeout: true };
  if (UNREACHABLE.test(text)) return { kind: "unavailable", unreachable: true };
  // No status and nothing recognisable: a malformed answer, not worth asking again.
  return { kind: "bad_request", status };
}

export interface RetryPolicy {
  /** Retries after the first attempt (LEDGERLOOP_MODEL_RETRIES). */
  retries: number;
  /** First backoff; doubles each retry (LEDGERLOOP_MODEL_RETRY_BASE_MS). */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited out: the run stops and is resumed later. */
  maxRetryAfterMs: number;
  random?: () => number;
  /** Told before each wait (progress lines). */
  onRetry?: (info: { attempt: number; delayMs: number; fault: Fault }) => void;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 4, baseDelayMs: 1000, maxDelayMs: 60_000, maxRetryAfterMs: 120_000 };

/** The wait before retry number `attempt` (1-based): Retry-After when the server gave one, else exponential backoff with jitter. */
export function retryDelay(attempt: number, fault: Fault, policy: RetryPolicy): number {
  if (fault.retryAfterMs !== undefined) return fault.retryAfterMs;
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  // Jitter between half and all of the step: clients that failed together do not retry together.
  return Math.round(exp * (0.5 + (policy.random ?? Math.random)() * 0.5));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason ?? new Error("aborted"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The last fault and how many attempts were made, for the error message. */
export class RetriesExhausted extends Error {
  constructor(
    readonly fault: Fault,
    readonly attempts: number,
    readonly last: unknown,
  ) {
    super(`gave up after ${attempts} attempt(s)`);
  }
}

/**
 * Told of every retry made inside `retryWatch.run(listener, …)`: the run's logs and model-call
 * spans count retries without every model adapter passing a callback through.
 */
export const retryWatch = new AsyncLocalStorage<(info: { attempt: number; delayMs: number; fault: Fault }) => void>();

/**
 * Calls `fn` until it succeeds, retrying rate limits and server faults; anything else is thrown at
 * once as it came. When retries run out (or a Retry-After is too long to wait) a RetriesExhausted
 * carries the last fault.
 */
export async function withRetries<T>(fn: () => Promise<T>, policy: RetryPolicy, signal?: AbortSignal): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const fault = classifyFault(err, signal);
      if (fault.kind !== "rate_limited" && fault.kind !== "unavailable") throw err;
      const tooLong = fault.retryAfterMs !== undefined && fault.retryAfterMs > policy.maxRetryAfterMs;
      if (attempt > policy.retries || tooLong) throw new RetriesExhausted(fault, attempt, err);
      const delayMs = retryDelay(attempt, fault, policy);
      policy.onRetry?.({ attempt, delayMs, fault });
      retryWatch.getStore()?.({ attempt, delayMs, fault });
      await sleep(delayMs, signal);
    }
  }
}
