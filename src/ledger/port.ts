import type { EventType, LedgerEvent, PayloadOf } from "../state.js";

/** An event to append. `parentId` is the previous event on the same branch (null for a root). */
export interface AppendEvent<T extends EventType = EventType> {
  threadId: string;
  parentId: string | null;
  type: T;
  payload: PayloadOf<T>;
  /** The event that caused this one (feedback → its action). */
  causedBy?: string | null;
  /** The checkpoint that was current when the event was written. */
  checkpointId?: string | null;
  /**
   * Unique per thread. Appending again with a key already used returns the stored event instead of
   * a new one: this is how a node re-run after a crash finds what it already wrote.
   */
  idempotencyKey?: string | null;
}

export interface ListQuery {
  types?: EventType[];
  /** Only events with a larger seq. */
  afterSeq?: number;
  /** Return only the newest N matching events (still oldest → newest). */
  last?: number;
  /** Return only the oldest N matching events (pagination with afterSeq). */
  limit?: number;
}

export interface ThreadInfo {
  threadId: string;
  events: number;
  firstTs: string;
  lastTs: string;
  goal: string | null;
  status: string | null;
}

/** What a runner recorded when it started an action, so a later run can tell "started" from "never ran". */
export interface ActionStart {
  /** The attempt's key: an action id, qualified by the task that runs it. */
  actionId: string;
  startedAt: string;
  pid: number | null;
  /** Process group of the command, to kill an orphan left by a crashed runner. */
  pgid: number | null;
  /** Start time of that process (from /proc), so a recycled pid is never killed by mistake. */
  procStart: string | null;
  /** Tool-specific guard taken before the first attempt (e.g. content hashes for edit_file). */
  guard: string | null;
}

/**
 * The append-only event store. Events form a tree per thread: following `parentId` from any event
 * (a branch head) gives exactly the history of that branch, so forks never see each other's events.
 */
export interface Ledger {
  /** Validates, redacts and appends an event; idempotent on (threadId, idempotencyKey). */
  append<T extends EventType>(event: AppendEvent<T>): Promise<LedgerEvent<T>>;
  get(id: string): Promise<LedgerEvent | null>;
  findByKey(threadId: string, idempotencyKey: string): Promise<LedgerEvent | null>;
  /** All events of a thread (every branch), in append order. */
  list(threadId: string, query?: ListQuery): Promise<LedgerEvent[]>;
  /** The history of one branch: from the root to `headId`, oldest first. */
  branch(headId: string | null, query?: ListQuery): Promise<LedgerEvent[]>;
  /** Which of `ids` lie on the branch ending at `headId` (cheap: no event is read whole). */
  onBranch(headId: string, ids: string[]): Promise<Set<string>>;
  /** Events of a thread that touched a workspace path (as tool argument or changed file). */
  byFile(threadId: string, path: string): Promise<LedgerEvent[]>;
  /** An event with its causes (upwards) and its consequences (downwards), in seq order. */
  causalChain(eventId: string): Promise<LedgerEvent[]>;
  /** Events caused by any of the given events. */
  causedBy(eventIds: string[]): Promise<LedgerEvent[]>;
  threads(): Promise<ThreadInfo[]>;
  /** Threads deleted whole (`ledgerloop delete`): every machine's search index forgets their events; their ids are not reused. */
  deletedThreads(): Promise<string[]>;
  /** Stores a large text once (redacted, JSON with its structure kept; compressed) and returns its content hash. */
  putBlob(content: string): Promise<string>;
  getBlob(ref: string): Promise<string | null>;
  /** What the thread's model calls cost so far (every branch: what was spent is spent). */
  spend(threadId: string): Promise<{ cost: number; tokens: number }>;
  markActionStarted(start: Omit<ActionStart, "startedAt">): Promise<void>;
  actionStart(actionId: string): Promise<ActionStart | null>;
  /**
   * The fingerprint of the config the thread runs under (ledger/governing.ts): the first call for a
   * thread records `sha`; every call returns what is recorded. Kept with the ledger, so every
   * machine that continues the run compares against the same record.
   */
  governingConfig(threadId: string, sha: string): Promise<string>;
  /** Makes `sha` the thread's governing config (a person accepted the file as it is now). */
  acceptGoverningConfig(threadId: string, sha: string): Promise<void>;
  close(): Promise<void>;
}
