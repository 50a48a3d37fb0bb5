/**
 * A token counter whose tokenizer lives on a worker thread (issue 30). Loading the BPE ranks and
 * building the encoder costs about 0.3 s of CPU; on the main thread it blocked the plan node, the
 * indexer and module loading before a run's first prompt, while the second core sat idle. Counting
 * stays synchronous (every caller in context/ is): the text goes through shared memory and this
 * thread waits on Atomics for the answer, tens of microseconds a round trip.
 *
 * No fallback to counting on this thread when the worker fails: the worker runs the same loader
 * (`loadMeasure`), so a tokenizer that cannot load there cannot load here either; the one
 * worker-only failure, a missing worker file, is a broken build that should be seen, not hidden
 * behind a slower start. Every failure is a LedgerloopError naming its cause, and no wait is unbounded.
 */

import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { LedgerloopError } from "../errors.js";
import { countBeyondCap, MAX_COUNTED_CHARS, memoCounter, type ModelProfile, type TokenCounter } from "./tokens.js";
import { CONTROL_SLOTS, LOAD, readText, REQ, SLOT, TEXT_BYTES, writeText, type TokenWorkerData } from "./token-wire.js";

/** A counter whose BPE ranks load on a worker thread; `count` waits for them when called first. */
export interface DeferredTokenCounter extends TokenCounter {
  /** Resolves once the tokenizer has loaded; rejects with the load's error. Awaiting it keeps the process alive. */
  readonly ready: Promise<void>;
  /** False once it failed or was closed: counting throws. */
  readonly usable: boolean;
  /** Stops the worker thread (a shared counter: releases this handle); counting afterwards throws. */
  close(): Promise<void>;
}

export interface DeferredTokenCounterOptions {
  /** The worker module (tests): by default token-worker beside this module. */
  worker?: URL;
  /** The longest wait for the tokenizer to load, and for one count. */
  timeoutMs?: number;
}

/**
 * Far above the slowest count (about a second for a {@link MAX_COUNTED_CHARS}-char adversarial text)
 * and a load on a busy machine: reaching it means the worker is stuck, not slow.
 */
export const COUNT_TIMEOUT_MS = 60_000;

/** The longest close() waits for the worker thread to exit (it is stopped either way). */
const CLOSE_WAIT_MS = 2_000;

/** token-worker beside this module: compiled JavaScript, or the TypeScript sources under tsx. */
function workerFile(): URL {
  const ext = path.extname(fileURLToPath(import.meta.url));
  return new URL(`./token-worker${ext === ".ts" ? ".ts" : ".js"}`, import.meta.url);
}

function startWorker(file: URL, workerData: TokenWorkerData): Worker {
  // Not the parent's execArgv: a host's loader hooks (the LangGraph dev server's) fail in a worker,
  // and this worker needs none.
  const options = { workerData, execArgv: [] };
  if (!file.pathname.endsWith(".ts")) return new Worker(file, options);
  // Sources (tests, tsx): tsx registers its loader on the main thread only, so the worker
  // registers it itself (through tsx's ES module API) before importing the sources.
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve("tsx/package.json");
  const pkg = JSON.parse(fs.readFileSync(pkgFile, "utf8")) as { exports: Record<string, { import: { default: string } }> };
  const api = pathToFileURL(path.join(path.dirname(pkgFile), pkg.exports["./esm/api"]!.import.default)).href;
  const boot = `import { register } from ${JSON.stringify(api)}; register(); await import(${JSON.stringify(file.href)});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`), options);
}

/**
 * A counter for a model's profile, returned before its tokenizer has loaded: the load runs on a
 * worker thread while the run starts. The counts are those of `loadTokenCounter`, through the
 * same memo cache as on one thread: nothing the model sees changes.
 */
export function deferredTokenCounter(profile: ModelProfile, opts: DeferredTokenCounterOptions = {}): DeferredTokenCounter {
  const timeoutMs = opts.timeoutMs ?? COUNT_TIMEOUT_MS;
  const what = `the ${profile.encoding} token counter`;
  const control = new Int32Array(new SharedArrayBuffer(CONTROL_SLOTS * Int32Array.BYTES_PER_ELEMENT));
  const shared = new SharedArrayBuffer(TEXT_BYTES);
  const text = Buffer.from(shared);
  let worker: Worker | undefined;
  let loaded = false;
  let settled = false;
  // Once set, every count throws it: the worker is gone or stuck.
  let broken: LedgerloopError | undefined;
  let settle: { resolve(): void; reject(e: Error): void } = { resolve() {}, reject() {} };
  const ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  // Whoever needs a count awaits `ready` or counts and sees the error; nobody else must crash on it.
  ready.catch(() => {});

  const finish = (err?: LedgerloopError): void => {
    if (!settled) {
      settled = true;
      if (err) settle.reject(err);
      else settle.resolve();
    }
    worker?.unref();
  };
  const fail = (err: LedgerloopError): LedgerloopError => {
    broken ??= err;
    finish(broken);
    void worker?.terminate();
    return broken;
  };
  const workerError = (): string => readText(text, Atomics.load(control, SLOT.length));

  /** Waits until `slot` is no longer `value`, at most `timeoutMs`; false on timeout. */
  const waitWhile = (slot: number, value: number): boolean => {
    const deadline = performance.now() + timeoutMs;
    while (Atomics.load(control, slot) === value) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      Atomics.wait(control, slot, value, left);
    }
    return true;
  };

  const awaitLoad = (): void => {
    if (!waitWhile(SLOT.load, LOAD.loading))
      throw fail(new LedgerloopError("TOKENIZER_TIMEOUT", `${what} did not load its ranks within ${timeoutMs} ms; its worker thread was stopped`));
    if (Atomics.load(control, SLOT.load) === LOAD.failed) throw fail(new LedgerloopError("TOKENIZER_FAILED", `${what} could not load: ${workerError()}`));
    loaded = true;
    finish();
  };

  const measure = (t: string): number => {
    if (broken) throw broken;
    // Never sent: its count needs no tokenizer (and would not fit the buffer).
    if (t.length > MAX_COUNTED_CHARS) return countBeyondCap(t, profile.fallback);
    if (!loaded) awaitLoad();
    Atomics.store(control, SLOT.length, writeText(text, t));
    Atomics.store(control, SLOT.req, REQ.ask);
    Atomics.notify(control, SLOT.req);
    if (!waitWhile(SLOT.req, REQ.ask))
      throw fail(
        new LedgerloopError("TOKENIZER_TIMEOUT", `${what} did not answer within ${timeoutMs} ms (a text of ${t.length} chars); its worker thread was stopped`),
      );
    if (Atomics.load(control, SLOT.req) === REQ.error)
      throw new LedgerloopError("TOKENIZER_FAILED", `${what} failed on a text of ${t.length} chars: ${workerError()}`);
    return Atomics.load(control, SLOT.result);
  };

  const file = opts.worker ?? workerFile();
  if (!fs.existsSync(fileURLToPath(file))) {
    fail(new LedgerloopError("TOKENIZER_FAILED", `${what} cannot start: its worker module ${fileURLToPath(file)} is missing (an incomplete build?)`));
  } else {
    try {
      const w = startWorker(file, { encoding: profile.encoding, fallback: profile.fallback, control: control.buffer as SharedArrayBuffer, text: shared });
      worker = w;
      w.unref();
      w.on("message", (m: { loaded?: boolean; error?: string }) => {
        if (m.loaded) finish();
        else fail(new LedgerloopError("TOKENIZER_FAILED", `${what} could not load: ${m.error ?? workerError()}`));
      });
      w.on("error", (err) => fail(new LedgerloopError("TOKENIZER_FAILED", `${what}'s worker thread failed: ${err.message}`, { cause: err })));
      w.on("exit", (code) => fail(broken ?? new LedgerloopError("TOKENIZER_FAILED", `${what}'s worker thread stopped (exit code ${code})`)));
    } catch (err) {
      fail(new LedgerloopError("TOKENIZER_FAILED", `${what} cannot start its worker thread: ${(err as Error).message}`, { cause: err }));
    }
  }

  const counter = memoCounter(profile.encoding, measure, { cacheShort: true });
  return {
    encoding: profile.encoding,
    count: (t) => counter.count(t),
    get usable() {
      return !broken;
    },
    get ready() {
      // Unreferenced, the worker lets the process end; whoever awaits the load keeps it alive until then.
      if (!settled) worker?.ref();
      return ready;
    },
    async close() {
      if (!worker) return;
      fail(new LedgerloopError("TOKENIZER_CLOSED", `${what} was closed`));
      Atomics.store(control, SLOT.req, REQ.stop);
      Atomics.notify(control, SLOT.req);
      // Waits for the thread's exit, at most CLOSE_WAIT_MS, on a timer that holds the process: the
      // worker is unreferenced, and on a busy machine its exit could come after the event loop had
      // nothing left to wait for, ending the process mid-close (exit code 13, an unsettled await).
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([worker.terminate(), new Promise((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
    },
  };
}

/** One worker thread per encoding and margin in a process, shared by every runtime counting with it. */
interface Shared {
  counter: DeferredTokenCounter;
  users: number;
  idle?: NodeJS.Timeout;
}
const shared = new Map<string, Shared>();
const keyOf = (p: ModelProfile): string => `${p.encoding}\u0000${p.fallback}`;

/**
 * How long a shared counter nobody uses keeps its thread for the next runtime (a queue worker's next
 * job, an eval's next task). It never holds the process: idle counters are also closed when the
 * event loop runs dry.
 */
export const SHARED_IDLE_MS = 60_000;

/** Takes the entry out of the pool and stops its thread. */
function drop(key: string, entry: Shared): void {
  shared.delete(key);
  clearTimeout(entry.idle);
  void entry.counter.close();
}

/** Drops the entry if it is still the pool's and nobody holds it. */
function retire(key: string, entry: Shared): void {
  if (shared.get(key) === entry && entry.users === 0) drop(key, entry);
}

let closingIdleAtExit = false;
function closeIdleAtExit(): void {
  if (closingIdleAtExit) return;
  closingIdleAtExit = true;
  // A process about to end closes the threads nobody uses (their stop is awaited, so the loop runs
  // once more and ends); process.exit() skips this and Node stops the threads itself.
  process.on("beforeExit", () => {
    for (const [key, entry] of [...shared]) retire(key, entry);
  });
}

/**
 * A counter for this profile on the process's shared worker thread, started now if there is none (or
 * the last one failed). Loading the tokenizer costs ~0.3 s of CPU and its tables tens of MB: a queue
 * worker running one job after another used to pay both per job. Counting is synchronous and this
 * thread is the only caller, so runtimes never interleave on it. close() releases this handle only;
 * the thread stops once no handle is left and it stays unused for {@link SHARED_IDLE_MS}.
 */
export function tokenCounterFor(profile: ModelProfile, opts: DeferredTokenCounterOptions = {}): DeferredTokenCounter {
  const key = keyOf(profile);
  let entry = shared.get(key);
  if (entry && !entry.counter.usable) {
    drop(key, entry);
    entry = undefined;
  }
  if (!entry) {
    // The options apply to a thread started here (tests); a running one is shared as it is.
    entry = { counter: deferredTokenCounter(profile, opts), users: 0 };
    shared.set(key, entry);
    closeIdleAtExit();
  }
  clearTimeout(entry.idle);
  entry.idle = undefined;
  entry.users++;
  const held = entry;
  let closed: LedgerloopError | undefined;
  return {
    encoding: held.counter.encoding,
    count(t) {
      if (closed) throw closed;
      return held.counter.count(t);
    },
    get ready() {
      return held.counter.ready;
    },
    get usable() {
      return !closed && held.counter.usable;
    },
    async close() {
      if (closed) return;
      closed = new LedgerloopError("TOKENIZER_CLOSED", `the ${profile.encoding} token counter was closed`);
      if (--held.users > 0) return;
      held.idle = setTimeout(() => retire(key, held), SHARED_IDLE_MS);
      held.idle.unref();
    },
  };
}

/**
 * Starts the tokenizer of a profile now, before the runtime that will count with it is built: the
 * CLI's `run` does this as soon as the model spec is checked, so the load runs on the other core
 * while this thread loads the graph's modules. The runtime then finds the thread running
 * ({@link tokenCounterFor}); `release` lets it go.
 */
export function prestartTokenCounter(profile: ModelProfile): { release(): Promise<void> } {
  const handle = tokenCounterFor(profile);
  return { release: () => handle.close() };
}
