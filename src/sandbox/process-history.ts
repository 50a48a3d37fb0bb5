import type { LedgerEvent } from "../state.js";

/** What the ledger says about one background process name on a branch. */
export interface ProcessRecord {
  name: string;
  command: string;
  readyPort?: number;
  readyPattern?: string;
  readyTimeoutMs?: number;
  /** running: started (or restarted) and neither stopped, exited nor failed since. */
  status: "running" | "stopped" | "exited" | "failed";
  /** Order of its last start on the branch. */
  order: number;
  starts: number;
  ports: number[];
  exitCode: number | null;
  signal: string | null;
  reason?: string;
  /** Id of the event that last started it. */
  startEvent: string;
}

/**
 * Folds a branch's `process` events (oldest first) into the state of each process name: the
 * processes a resume must restart are those still `running`, in `order`.
 */
export function processHistory(events: LedgerEvent[]): ProcessRecord[] {
  const out = new Map<string, ProcessRecord>();
  let order = 0;
  for (const e of events) {
    if (e.type !== "process") continue;
    const p = (e as LedgerEvent<"process">).payload;
    const cur = out.get(p.name);
    switch (p.kind) {
      case "start":
      case "restart":
        out.set(p.name, {
          name: p.name,
          command: p.command,
          readyPort: p.readyPort,
          readyPattern: p.readyPattern,
          readyTimeoutMs: p.readyTimeoutMs,
          status: "running",
          order: ++order,
          starts: (cur?.starts ?? 0) + 1,
          ports: p.ports ?? [],
          exitCode: null,
          signal: null,
          startEvent: e.id,
        });
        break;
      case "ready":
        if (cur) cur.ports = p.ports ?? cur.ports;
        break;
      case "stop":
      case "exit":
      case "failed":
        if (cur) {
          cur.status = p.kind === "stop" ? "stopped" : p.kind === "exit" ? "exited" : "failed";
          cur.exitCode = p.exitCode ?? null;
          cur.signal = p.signal ?? null;
          cur.reason = p.reason;
        }
        break;
    }
  }
  return [...out.values()].sort((a, b) => a.order - b.order);
}

/** The processes that were running at the end of these events, in start order. */
export function runningProcesses(events: LedgerEvent[]): ProcessRecord[] {
  return processHistory(events).filter((p) => p.status === "running");
}
