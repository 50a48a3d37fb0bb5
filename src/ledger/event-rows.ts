import { randomUUID } from "node:crypto";
import { LedgerError } from "../errors.js";
import type { EventBody as EventBodySchema, EventType, LedgerEvent } from "../events.js";
import { SCHEMA_VERSION } from "../event-version.js";
import type { Redactor } from "../secrets.js";
import type { AppendEvent } from "./port.js";

// What both Ledger adapters (SQLite, PostgreSQL) do the same way around their own SQL: the row an
// event is stored as, and the checks an append makes before it writes.

/** An ll_events row, as both backends store it. */
export interface EventRow {
  id: string;
  thread_id: string;
  parent_id: string | null;
  seq: number;
  type: string;
  ts: string;
  checkpoint_id: string | null;
  caused_by: string | null;
  idempotency_key: string | null;
  schema_version: number;
  payload: string;
}

/** A stored row as an event (PostgreSQL returns bigint columns as strings, hence Number). */
export function toEvent(r: EventRow): LedgerEvent {
  return {
    id: r.id,
    threadId: r.thread_id,
    parentId: r.parent_id,
    seq: Number(r.seq),
    type: r.type,
    ts: r.ts,
    checkpointId: r.checkpoint_id,
    causedBy: r.caused_by,
    idempotencyKey: r.idempotency_key,
    schemaVersion: Number(r.schema_version),
    payload: JSON.parse(r.payload),
  } as LedgerEvent;
}

/** Workspace paths an event refers to, for the by-file query. */
export function pathsOf(type: EventType, payload: Record<string, unknown>): string[] {
  const out = new Set<string>();
  const add = (p: unknown) => {
    if (typeof p === "string" && p.length > 0 && p.length < 1024) out.add(p.replace(/\\/g, "/").replace(/^\.\//, ""));
  };
  if (type === "agent_action") {
    const args = payload.args as Record<string, unknown> | undefined;
    if (args && typeof args === "object") add(args.path);
  }
  const changes = payload.filesChanged ?? payload.changed;
  if (changes && typeof changes === "object") {
    for (const list of Object.values(changes as Record<string, unknown>)) {
      if (Array.isArray(list)) list.forEach(add);
    }
  }
  return [...out];
}

/** A retried append may reuse its idempotency key only for the same type under the same parent. */
export function assertSameKeyUse<T extends EventType>(existing: Pick<EventRow, "type" | "parent_id">, event: AppendEvent<T>): void {
  if (existing.type !== event.type || existing.parent_id !== (event.parentId ?? null)) {
    throw new LedgerError(
      "LEDGER_KEY_CONFLICT",
      `idempotency key ${event.idempotencyKey} already names a ${existing.type} event with parent ${existing.parent_id}; refusing a ${event.type} with parent ${event.parentId}`,
    );
  }
}

// The schemas load on the first append, not with the ledger: commands that only read it (threads,
// history, ledger) then never load zod.
let eventBody: typeof EventBodySchema | undefined;

/** Loads the event schemas appends are checked against (the ledgers' `append` does it first). */
export async function loadEventSchemas(): Promise<void> {
  eventBody ??= (await import("../events.js")).EventBody;
}

/** The event's payload, redacted and validated against its type's schema (LEDGER_INVALID_EVENT otherwise). */
export function checkedPayload<T extends EventType>(redactor: Redactor, event: AppendEvent<T>): Record<string, unknown> {
  if (!eventBody) {
    // A synchronous append before any asynchronous one: a programming error, never skipped validation.
    throw new LedgerError(
      "LEDGER_INVALID_EVENT",
      "the event schemas are not loaded: call `await loadEventSchemas()` (ledger/event-rows.ts) before appendSync, or use append",
    );
  }
  const parsed = eventBody.safeParse({ type: event.type, payload: redactor.redactDeep(event.payload) });
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.slice(1).join(".") || String(i.path[0] ?? "(root)")}: ${i.message}`)
      .join("; ");
    throw new LedgerError("LEDGER_INVALID_EVENT", `invalid ${String(event.type)} event: ${issues}`);
  }
  return parsed.data.payload as Record<string, unknown>;
}

/** A parent must be an event of the same thread. */
export function assertParentInThread<T extends EventType>(parentThread: string | undefined, event: AppendEvent<T>): void {
  if (parentThread !== event.threadId) {
    throw new LedgerError("LEDGER_UNKNOWN_PARENT", `parent event ${event.parentId} does not exist in thread ${event.threadId}`);
  }
}

/** The row a checked event is stored as. */
export function newEventRow<T extends EventType>(event: AppendEvent<T>, seq: number, ts: Date, payload: Record<string, unknown>): EventRow {
  return {
    id: randomUUID(),
    thread_id: event.threadId,
    parent_id: event.parentId ?? null,
    seq,
    type: event.type,
    ts: ts.toISOString(),
    checkpoint_id: event.checkpointId ?? null,
    caused_by: event.causedBy ?? null,
    idempotency_key: event.idempotencyKey ?? null,
    schema_version: SCHEMA_VERSION,
    payload: JSON.stringify(payload),
  };
}
