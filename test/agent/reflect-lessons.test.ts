import { describe, expect, it } from "vitest";
import { deterministicLessons } from "../../src/agent/nodes/reflect.js";
import type { LedgerEvent, PayloadOf } from "../../src/state.js";

// The lessons the reflect node derives from the ledger alone (no model), from hand-made events.

let seq = 0;
function event<T extends "agent_action" | "environment_feedback">(type: T, payload: PayloadOf<T>, causedBy: string | null = null): LedgerEvent {
  seq++;
  return {
    id: `e${seq}`,
    threadId: "t",
    parentId: seq > 1 ? `e${seq - 1}` : null,
    seq,
    ts: new Date(seq * 1000).toISOString(),
    checkpointId: null,
    causedBy,
    idempotencyKey: null,
    schemaVersion: 1,
    type,
    payload,
  } as LedgerEvent;
}

/** An action and its feedback: a shell command that failed as `fb` says. */
function failedCommand(command: string, fb: Partial<PayloadOf<"environment_feedback">>): LedgerEvent[] {
  const action = event("agent_action", { tool: "run_command", args: { command }, step: seq + 1, callId: `c${seq}` } as PayloadOf<"agent_action">);
  return [
    action,
    event("environment_feedback", { tool: "run_command", status: "error", output: `$ ${command}\nexit code 137`, durationMs: 900, command, ...fb }, action.id),
  ];
}

describe("lessons from the ledger", () => {
  it("name the limit that stopped a failed command, with the memory it had reached or the CPU it had used", () => {
    const events = [
      ...failedCommand("node build.js", {
        errorClass: "resource_limit",
        stoppedBy: "limit",
        limit: "memory",
        usage: { cpuMs: 2100, memoryPeakBytes: 2048 * 1024 * 1024 },
      }),
      ...failedCommand("python solve.py", {
        errorClass: "resource_limit",
        stoppedBy: "limit",
        limit: "cpu",
        usage: { cpuMs: 120_400, memoryPeakBytes: 50 * 1024 * 1024 },
      }),
      ...failedCommand("sleep 99", { errorClass: "timeout", stoppedBy: "limit", limit: "timeout", usage: { cpuMs: 3, memoryPeakBytes: 1 << 20 } }),
    ];
    const { lessons, from } = deterministicLessons(events);
    expect(lessons).toEqual([
      "run_command failed (resource_limit: the memory limit, at 2048 MiB): $ node build.js",
      "run_command failed (resource_limit: the cpu limit, after 120.4 s of CPU): $ python solve.py",
      // A timeout's class says it all.
      "run_command failed (timeout): $ sleep 99",
    ]);
    expect(from).toEqual([events[1]!.id, events[3]!.id, events[5]!.id]);
  });

  it("learn nothing from a command killed from outside the sandbox, and keep a feedback without the new fields as before", () => {
    const events = [
      ...failedCommand("make all", { errorClass: "unknown", stoppedBy: "outside", limit: null, usage: { cpuMs: 40, memoryPeakBytes: 1 << 20 } }),
      // Recorded before feedback carried stoppedBy, limit and usage.
      ...failedCommand("make test", { errorClass: "resource_limit" }),
    ];
    const { lessons, from } = deterministicLessons(events);
    expect(lessons).toEqual(["run_command failed (resource_limit): $ make test"]);
    expect(from).toEqual([events[3]!.id]);
  });
});
