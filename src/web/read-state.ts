import { LedgerloopError } from "../errors.js";
import type { ReadOnlyState } from "../ledger/viewer-state.js";
import type { EventType, LedgerEvent } from "../state.js";

// What the views (data.ts, steps.ts) share on top of the viewer's read port, which lives with its
// two adapters in src/ledger/ (viewer-state.ts): the views never know which database holds the runs.

export type { ReadOnlyState, RunInfo, StateSource, ViewerSource } from "../ledger/viewer-state.js";

/** An error the viewer answers with its status code and message (never a stack). */
export class HttpError extends LedgerloopError {
  readonly status: number;
  constructor(status: number, message: string) {
    super(status === 404 ? "NOT_FOUND" : status === 400 ? "BAD_REQUEST" : "HTTP_ERROR", message);
    this.status = status;
  }
}

/**
 * The events of the thread's current branch: the one its newest event is on. That is where a
 * running step writes (ahead of its checkpoint), and where a rewind continues (its time_travel event).
 */
export async function currentBranch(st: ReadOnlyState, thread: string, types?: EventType[]): Promise<LedgerEvent[]> {
  if (!st.ledger) return [];
  const head = await st.headEvent(thread);
  if (!head) return [];
  return st.ledger.branch(head, types ? { types } : {});
}

/** The events of one type, typed. */
export const of = <T extends EventType>(events: LedgerEvent[], type: T) => events.filter((e): e is LedgerEvent<T> => e.type === type);
