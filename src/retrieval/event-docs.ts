import type { LedgerEvent } from "../state.js";
import type { EventDoc } from "./ngram-index.js";

/** Event types worth finding again: what was done, what it answered, what was decided and learnt. */
export const SEARCHABLE_EVENT_TYPES = new Set(["task_spec", "plan_update", "agent_action", "environment_feedback", "decision", "reflection", "summary"]);

const MAX_TEXT = 8_000;

/** The searchable text of a ledger event, or null for event types that are not indexed. */
export function eventDoc(e: LedgerEvent): EventDoc | null {
  if (!SEARCHABLE_EVENT_TYPES.has(e.type)) return null;
  let kind: string = e.type;
  const parts: string[] = [];
  switch (e.type) {
    case "task_spec":
      parts.push(`goal: ${e.payload.goal}`, ...e.payload.subtasks.map((s) => `subtask ${s.id}: ${s.description}`));
      break;
    case "plan_update":
      parts.push(`plan update: ${e.payload.reason}`, ...e.payload.subtasks.map((s) => `subtask ${s.id} [${s.status}]: ${s.description}`));
      break;
    case "agent_action": {
      const p = e.payload;
      kind = `${e.type} ${p.tool}`;
      parts.push(`${p.tool} ${p.args !== undefined ? stringify(p.args) : (p.argsText ?? "")}`);
      if (p.invalid) parts.push(`invalid: ${p.invalid}`);
      break;
    }
    case "environment_feedback": {
      const p = e.payload;
      kind = [e.type, p.tool, p.status, p.errorClass ?? ""].join(" ");
      parts.push(`${p.tool} → ${p.status}${p.exitCode !== undefined && p.exitCode !== null ? ` (exit ${p.exitCode})` : ""}`);
      if (p.command) parts.push(`command: ${p.command}`);
      if (p.errorClass) parts.push(`error: ${p.errorClass}`);
      if (p.tests) {
        parts.push(`tests: ${p.tests.passed} passed, ${p.tests.failed} failed`);
        if (p.tests.failedTests.length) parts.push(`failed tests: ${p.tests.failedTests.join(", ")}`);
      }
      if (p.filesChanged) {
        const changed = [...p.filesChanged.created, ...p.filesChanged.modified, ...p.filesChanged.deleted];
        if (changed.length) parts.push(`files changed: ${changed.join(" ")}`);
      }
      // Errors sit at the start (the command) and at the end (the failure) of long outputs.
      parts.push(headTail(p.output, 3_000));
      if (p.stderr && p.stderr !== p.output) parts.push(headTail(p.stderr, 2_000));
      break;
    }
    case "decision":
      parts.push(`decision: ${e.payload.text}`);
      break;
    case "reflection":
      parts.push(`reflection (${e.payload.trigger}):`, ...e.payload.lessons);
      break;
    case "summary":
      parts.push(`summary of events ${e.payload.fromSeq}-${e.payload.toSeq}: ${e.payload.text}`);
      break;
    default:
      return null;
  }
  const text = parts.filter(Boolean).join("\n").slice(0, MAX_TEXT);
  return { eventId: e.id, threadId: e.threadId, seq: e.seq, type: e.type, ts: e.ts, text, kind };
}

function stringify(v: unknown): string {
  try {
    return typeof v === "string" ? v : JSON.stringify(v);
  } catch {
    return String(v);
  }
}

function headTail(s: string, max: number): string {
  if (s.length <= max) return s;
  const half = Math.floor(max / 2);
  return `${s.slice(0, half)}\n…\n${s.slice(-half)}`;
}
