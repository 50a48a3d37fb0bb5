import type { RunStatus } from "../events.js";

// Which run statuses are ends, in one place (the queue's lease states and the run lists agree on
// it). Its own small module: the CLI loads it at start, and events.ts would bring zod along.

const ENDED: ReadonlySet<string> = new Set<RunStatus>(["finished", "failed", "max_steps", "script_exhausted"]);

/** Whether a run in this status has ended: nothing resumes it (the other statuses are pauses or stops). */
export function runEnded(status: string): boolean {
  return ENDED.has(status);
}
