import type { EventType, LedgerEvent, PayloadOf } from "../state.js";
import type { Ledger } from "./port.js";

/**
 * Appends one node's events to a branch. Keys are scoped by the LangGraph task id, which is the
 * same when a task is re-run after a crash and new after a fork: a re-run finds what its first
 * attempt already wrote, a fork writes its own history.
 */
export class BranchWriter {
  head: string | null;

  constructor(
    readonly ledger: Ledger,
    readonly threadId: string,
    head: string | null,
    readonly scope: string,
    readonly checkpointId: string | null = null,
  ) {
    this.head = head;
  }

  /** The idempotency key of a named write of this node run. */
  key(name: string): string {
    return `${this.scope}/${name}`;
  }

  /** The event a previous attempt of this node run wrote under `name`, if any. */
  async find<T extends EventType>(name: string): Promise<LedgerEvent<T> | null> {
    return (await this.ledger.findByKey(this.threadId, this.key(name))) as LedgerEvent<T> | null;
  }

  async append<T extends EventType>(name: string, type: T, payload: PayloadOf<T>, causedBy?: string | null): Promise<LedgerEvent<T>> {
    const e = await this.ledger.append({
      threadId: this.threadId,
      parentId: this.head,
      type,
      payload,
      causedBy: causedBy ?? null,
      checkpointId: this.checkpointId,
      idempotencyKey: this.key(name),
    });
    this.head = e.id;
    return e;
  }

  /** Returns the event written under `name` before, or produces and appends it now. */
  async once<T extends EventType>(
    name: string,
    type: T,
    produce: () => Promise<PayloadOf<T>>,
    causedBy?: string | null,
  ): Promise<{ event: LedgerEvent<T>; reused: boolean }> {
    const existing = await this.find<T>(name);
    if (existing) {
      this.head = existing.id;
      return { event: existing, reused: true };
    }
    return { event: await this.append(name, type, await produce(), causedBy), reused: false };
  }
}
