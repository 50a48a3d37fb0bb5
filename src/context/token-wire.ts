/**
 * The shared memory between a token counter and its worker thread (token-worker.ts): a small
 * control array, and a text buffer that holds any text the tokenizer counts as UTF-16 code units.
 * UTF-16 and not UTF-8: lone surrogates must reach the tokenizer as they are, as on one thread.
 */

import { MAX_COUNTED_CHARS } from "./tokens.js";

/** Slots of the control array (Int32). */
export const SLOT = {
  /** Whether the worker has loaded its tokenizer: one of {@link LOAD}. */
  load: 0,
  /** The request in flight: one of {@link REQ}. */
  req: 1,
  /** Code units in the text buffer: the text to count, or the worker's error message. */
  length: 2,
  /** The count, when `req` is ANSWER. */
  result: 3,
} as const;
export const CONTROL_SLOTS = 4;

export const LOAD = { loading: 0, loaded: 1, failed: 2 } as const;
/** ASK: written by the counter; ANSWER or ERROR: by the worker; STOP: the counter closes it. */
export const REQ = { idle: 0, ask: 1, answer: 2, error: 3, stop: 4 } as const;

/** Bytes of the text buffer: every text the tokenizer counts fits (longer ones are never sent). */
export const TEXT_BYTES = MAX_COUNTED_CHARS * 2;

/** What the worker is started with. */
export interface TokenWorkerData {
  encoding: string;
  fallback: boolean;
  control: SharedArrayBuffer;
  text: SharedArrayBuffer;
}

/** Writes `text` (at most TEXT_BYTES / 2 code units, cut beyond) into the buffer; returns its code units. */
export function writeText(buf: Buffer, text: string): number {
  const cut = text.length > TEXT_BYTES / 2 ? text.slice(0, TEXT_BYTES / 2) : text;
  return buf.write(cut, 0, "utf16le") / 2;
}

/** The text of `units` code units at the start of the buffer. */
export function readText(buf: Buffer, units: number): string {
  return buf.toString("utf16le", 0, units * 2);
}
