import { createHash } from "node:crypto";
import { LedgerError } from "../errors.js";
import type { EventRow } from "./event-rows.js";
import type { ActionStart } from "./port.js";

// Moving a thread's ledger rows between backends (ledgerloop migrate), what both adapters share:
// the export's shape, the identity check that keeps an import append-only, the forks an import must
// record, and the content hash both sides of a migration compare.

/** A thread's ledger as stored: its events in seq order (ids, parents, keys and payload text as written) and its action starts. */
export interface ThreadExport {
  events: EventRow[];
  actionStarts: ActionStart[];
  /** The config fingerprint the thread runs under (null before its first action). */
  configSha: string | null;
}

/** Implemented by both ledgers: read a thread's rows as they are, and write them elsewhere unchanged. */
export interface LedgerTransfer {
  exportThread(threadId: string): Promise<ThreadExport>;
  /**
   * Writes the rows of another ledger's thread with their ids, seq, timestamps and keys. A thread
   * that already has events is never added to: identical rows make it a no-op ("identical"),
   * anything else is LEDGER_IMPORT_CONFLICT.
   */
  importThread(threadId: string, data: ThreadExport): Promise<"imported" | "identical">;
}

const FIELDS: Array<keyof EventRow> = [
  "id",
  "thread_id",
  "parent_id",
  "seq",
  "type",
  "ts",
  "checkpoint_id",
  "caused_by",
  "idempotency_key",
  "schema_version",
  "payload",
];

/** A row with PostgreSQL's bigint-as-string columns as numbers, so rows of both backends compare equal. */
export function normalRow(r: EventRow): EventRow {
  return { ...r, seq: Number(r.seq), schema_version: Number(r.schema_version) };
}

/** Whether two threads' rows are the same, field by field. */
export function sameRows(a: EventRow[], b: EventRow[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((r, i) => FIELDS.every((f) => normalRow(r)[f] === normalRow(b[i]!)[f]));
}

/**
 * Checks rows about to be imported into `threadId` (every row of that thread, each parent an earlier
 * row of it, seq strictly growing) and returns the forks they make: events with more than one
 * child, '' for a thread with more than one root (what append records in ll_forks).
 */
export function checkImport(threadId: string, rows: EventRow[]): string[] {
  const seen = new Set<string>();
  const parents = new Set<string>();
  const forks = new Set<string>();
  let last = 0;
  for (const r of rows) {
    if (r.thread_id !== threadId) throw new LedgerError("LEDGER_IMPORT_CONFLICT", `event ${r.id} belongs to thread ${r.thread_id}, not ${threadId}`);
    if (Number(r.seq) <= last) throw new LedgerError("LEDGER_IMPORT_CONFLICT", `events of thread ${threadId} are not in seq order at ${r.id}`);
    last = Number(r.seq);
    if (r.parent_id !== null && !seen.has(r.parent_id)) {
      throw new LedgerError("LEDGER_UNKNOWN_PARENT", `parent event ${r.parent_id} of ${r.id} is not an earlier event of thread ${threadId}`);
    }
    const parent = r.parent_id ?? "";
    if (parents.has(parent)) forks.add(parent);
    parents.add(parent);
    seen.add(r.id);
  }
  return [...forks];
}

/** The refusal of an import into a thread that already has other events. */
export function importConflict(threadId: string, have: number, given: number): LedgerError {
  return new LedgerError(
    "LEDGER_IMPORT_CONFLICT",
    `thread ${threadId} already has ${have} ledger events that are not the ${given} being imported; the ledger is append-only, so nothing was imported`,
  );
}

/** sha256 over a thread's events in seq order, every stored field included. */
export function ledgerHash(rows: EventRow[]): string {
  const h = createHash("sha256");
  for (const r of rows) h.update(JSON.stringify(FIELDS.map((f) => normalRow(r)[f])) + "\n");
  return h.digest("hex");
}

/** Whether an action start belongs to one of these agent_action events (its key ends in `/start/<event id>`, see agent/nodes/act.ts). */
export function startOfActions(actionIds: Set<string>): (s: Pick<ActionStart, "actionId">) => boolean {
  return (s) => {
    const i = s.actionId.lastIndexOf("/start/");
    return i >= 0 && actionIds.has(s.actionId.slice(i + "/start/".length));
  };
}
