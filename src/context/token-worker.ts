/**
 * The worker thread of a deferred token counter (token-thread.ts): loads the tokenizer off the
 * main thread, then answers counts through shared memory until it is told to stop. Everything
 * that can fail is reported through the control array, so the waiting counter hears of it at once.
 */

import { parentPort, workerData } from "node:worker_threads";
import type { Encoding } from "./bpe-ranks.js";
import type { Measure } from "./tokens.js";
import { LOAD, readText, REQ, SLOT, writeText, type TokenWorkerData } from "./token-wire.js";

const data = workerData as TokenWorkerData;
const control = new Int32Array(data.control);
const text = Buffer.from(data.text);

/** Puts an error's message in the text buffer and `state` in `slot`, and wakes the counter. */
function report(slot: number, state: number, err: unknown): void {
  const e = err as Error;
  Atomics.store(control, SLOT.length, writeText(text, `${e?.name ?? "Error"}: ${e?.message ?? String(err)}`));
  Atomics.store(control, slot, state);
  Atomics.notify(control, slot);
}

let measure: Measure | undefined;
try {
  const { loadMeasure } = await import("./tokens.js");
  measure = await loadMeasure(data.encoding as Encoding, data.fallback);
  Atomics.store(control, SLOT.load, LOAD.loaded);
  Atomics.notify(control, SLOT.load);
  // For the counter's `ready` promise; a count waiting on this thread has already seen the slot.
  parentPort?.postMessage({ loaded: true });
} catch (err) {
  report(SLOT.load, LOAD.failed, err);
  parentPort?.postMessage({ error: String((err as Error)?.message ?? err) });
}

// Blocking here is the point: this thread does nothing else, and a count answers in microseconds.
// The counter's close() writes STOP (or terminates the thread, which ends the wait too).
if (measure) {
  let seen: number = REQ.idle;
  for (;;) {
    Atomics.wait(control, SLOT.req, seen);
    const req = Atomics.load(control, SLOT.req);
    if (req === REQ.stop) break;
    if (req !== REQ.ask) {
      seen = req;
      continue;
    }
    try {
      Atomics.store(control, SLOT.result, measure(readText(text, Atomics.load(control, SLOT.length))));
      seen = REQ.answer;
      Atomics.store(control, SLOT.req, seen);
      Atomics.notify(control, SLOT.req);
    } catch (err) {
      seen = REQ.error;
      report(SLOT.req, seen, err);
    }
  }
}
