import type { LedgerEvent } from "../events.js";

// What a run's shell commands used, added up from their feedback events: the counterpart of
// spend.ts for the sandbox's side (CPU time and memory from each command's cgroups).

/** The shell commands of a branch, added up from their feedback events (`usage` from their cgroups). */
export interface CommandTotals {
  count: number;
  /** Commands whose CPU time was measured, and their CPU time added up. */
  measured: number;
  cpuMs: number;
  mostCpu: { step: number; command: string; cpuMs: number } | null;
  highestPeak: { step: number; command: string; bytes: number } | null;
}

/** Adds up the feedback of the commands that ran (one the policy refused never did); `stepOf` numbers their steps. */
export function commandTotals(feedback: LedgerEvent<"environment_feedback">[], stepOf: (f: LedgerEvent<"environment_feedback">) => number): CommandTotals {
  const t: CommandTotals = { count: 0, measured: 0, cpuMs: 0, mostCpu: null, highestPeak: null };
  for (const f of feedback) {
    const p = f.payload;
    if (p.command === undefined || p.exitCode === undefined || p.errorClass === "policy_denied") continue;
    t.count++;
    const cpu = p.usage?.cpuMs ?? null;
    const peak = p.usage?.memoryPeakBytes ?? null;
    if (cpu !== null) {
      t.measured++;
      t.cpuMs += cpu;
      if (!t.mostCpu || cpu > t.mostCpu.cpuMs) t.mostCpu = { step: stepOf(f), command: p.command, cpuMs: cpu };
    }
    if (peak !== null && (!t.highestPeak || peak > t.highestPeak.bytes)) t.highestPeak = { step: stepOf(f), command: p.command, bytes: peak };
  }
  return t;
}
