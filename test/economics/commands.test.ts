import { describe, expect, it } from "vitest";
import { commandTotals } from "../../src/economics/commands.js";
import type { LedgerEvent, PayloadOf } from "../../src/events.js";

let seq = 0;
function feedback(step: number, payload: Partial<PayloadOf<"environment_feedback">>): LedgerEvent<"environment_feedback"> {
  seq++;
  return {
    id: `f${seq}`,
    threadId: "t",
    parentId: null,
    seq,
    ts: new Date(seq * 1000).toISOString(),
    checkpointId: null,
    causedBy: `step-${step}`,
    idempotencyKey: null,
    schemaVersion: 1,
    type: "environment_feedback",
    payload: { tool: "run_command", status: "ok", output: "", durationMs: 10, ...payload },
  };
}
const stepOf = (f: LedgerEvent<"environment_feedback">) => Number(f.causedBy!.slice(5));

describe("what a run's commands used", () => {
  it("adds up the measured CPU, names the command with the most and the highest memory peak, and counts the unmeasured apart", () => {
    const t = commandTotals(
      [
        feedback(1, { command: "npm test", exitCode: 0, usage: { cpuMs: 1500, memoryPeakBytes: 90 << 20 } }),
        feedback(2, { command: "make", exitCode: 2, usage: { cpuMs: 4000, memoryPeakBytes: 30 << 20 } }),
        // Recorded before feedback carried usage, or where no cgroup measured it.
        feedback(3, { command: "ls", exitCode: 0 }),
        feedback(4, { command: "du -s", exitCode: 0, usage: { cpuMs: null, memoryPeakBytes: null } }),
        // Not shell commands: a file tool, and a command the policy refused (it never ran).
        feedback(5, { tool: "read_file" }),
        feedback(6, { command: "sudo rm -rf /", exitCode: 126, status: "error", errorClass: "policy_denied" }),
      ],
      stepOf,
    );
    expect(t).toEqual({
      count: 4,
      measured: 2,
      cpuMs: 5500,
      mostCpu: { step: 2, command: "make", cpuMs: 4000 },
      highestPeak: { step: 1, command: "npm test", bytes: 90 << 20 },
    });
  });

  it("has nothing to name for a run whose commands were never measured", () => {
    expect(commandTotals([feedback(1, { command: "true", exitCode: 0 })], stepOf)).toEqual({
      count: 1,
      measured: 0,
      cpuMs: 0,
      mostCpu: null,
      highestPeak: null,
    });
    expect(commandTotals([], stepOf)).toEqual({ count: 0, measured: 0, cpuMs: 0, mostCpu: null, highestPeak: null });
  });
});
