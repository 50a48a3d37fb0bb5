import type { LedgerEvent } from "../state.js";
import type { Ledger } from "./port.js";

/** Replaces every string that is a known id by its mapped id, deep. */
export function remapIds<T>(value: T, ids: Map<string, string>): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return ids.get(v) ?? v;
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/**
 * Copies the history of one branch (root → head) into another thread, possibly in another ledger:
 * a forked run owns its full history, so its queries never reach into the thread it came from.
 * Ids are new; parent, cause and every id mentioned in a payload are mapped to the copies.
 * Returns the map old id → new id (the caller maps ids held in graph state the same way).
 */
export async function copyBranch(from: Ledger, head: string | null, to: Ledger, threadId: string): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  if (!head) return ids;
  const events = await from.branch(head);
  // Payloads may point forward within the branch only rarely; ids are mapped as copies are made.
  let parent: string | null = null;
  for (const e of events as LedgerEvent[]) {
    // Prompts live in the blob store of the ledger they were written to.
    if (from !== to && e.type === "context_built") {
      const blob = await from.getBlob(e.payload.promptRef);
      if (blob !== null) await to.putBlob(blob);
    }
    const copy: LedgerEvent = await to.append({
      threadId,
      parentId: parent,
      type: e.type,
      payload: remapIds(e.payload, ids) as never,
      causedBy: e.causedBy ? (ids.get(e.causedBy) ?? null) : null,
      checkpointId: e.checkpointId,
      idempotencyKey: e.idempotencyKey,
    });
    ids.set(e.id, copy.id);
    parent = copy.id;
  }
  return ids;
}
