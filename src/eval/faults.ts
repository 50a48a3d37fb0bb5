import type { LedgerEvent } from "../events.js";
import type { Ledger } from "../ledger/port.js";

// The steps of a run that did not do what they asked for: refused by the command policy, rejected
// as invalid, failed as a tool, stopped by a limit. A test run that ran and failed is not one: that
// is how a bug is found (every "bug" task's oracle starts with one). For a real model such steps are
// part of its behaviour; for the oracle they mean the trajectory is broken (it would "solve" the task
// only because a later step redid what the refused one should have shown), so an oracle run with a
// fault is not counted as solved.

/** What a fault check reads of one tool call's result (a ToolResult or a feedback event's payload). */
export interface StepResult {
  tool: string;
  status: string;
  output: string;
  errorClass?: string | null;
  exitCode?: number | null;
  stoppedBy?: string | null;
}

/** How many faults a result keeps (a looping model can make hundreds). */
const MAX_FAULTS = 20;

/** The fault of one step, or null when it did what it asked for (or was a failing test run). */
export function stepFault(step: number, r: StepResult): string | null {
  if (r.status === "ok") return null;
  const failingTests = r.tool === "run_tests" && r.status === "error" && typeof r.exitCode === "number" && r.exitCode !== 0 && !r.stoppedBy && r.errorClass !== "policy_denied";
  if (failingTests) return null;
  const first = r.output.split("\n")[0]!.slice(0, 240);
  return `step ${step} ${r.tool} (${r.status}${r.errorClass ? `, ${r.errorClass}` : ""}): ${first}`;
}

/** Adds a fault to a list, keeping the first MAX_FAULTS and counting the rest. */
export function pushFault(faults: string[], fault: string | null, total: { n: number }): void {
  if (!fault) return;
  total.n++;
  if (faults.length < MAX_FAULTS) faults.push(fault);
  else faults[MAX_FAULTS - 1] = `… and ${total.n - MAX_FAULTS + 1} more`;
}

/**
 * The faults of a ledgerloop run, read from its ledger (an invalid call has "rejected" feedback too).
 * `interrupted` steps are left out when asked: after a kill they are the kill's, not the trajectory's.
 */
export async function ledgerFaults(ledger: Ledger, thread: string, opts: { skipInterrupted?: boolean } = {}): Promise<string[]> {
  const events = await ledger.list(thread, { types: ["agent_action", "environment_feedback"] });
  const faults: string[] = [];
  const total = { n: 0 };
  let step = 0;
  for (const e of events) {
    if (e.type === "agent_action") step = (e as LedgerEvent<"agent_action">).payload.step;
    else {
      const f = (e as LedgerEvent<"environment_feedback">).payload;
      if (opts.skipInterrupted && f.status === "interrupted") continue;
      pushFault(faults, stepFault(step, f), total);
    }
  }
  return faults;
}
