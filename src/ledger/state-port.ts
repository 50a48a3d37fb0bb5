import type { BaseCheckpointSaver, BaseStore } from "@langchain/langgraph-checkpoint";
import type { Database } from "../sqlite/driver.js";
import type { PgRevisionReplica } from "./pg-revisions.js";
import type { PgState } from "./pg-db.js";
import type { Ledger } from "./port.js";
import type { RunRegistryPort } from "./runs.js";

// The write side of a run's durable state, whichever backend holds it: the runtime opens one
// StatePort and never asks whether it is SQLite or PostgreSQL (the read side's twin is
// inspection.ts). The adapters (sqlite-state-port.ts, pg-state-port.ts) are the only places that know.

/** The durable state a run writes: its ledger, run registry, checkpoints, lessons and (PostgreSQL) revision replica. */
export interface StatePort {
  readonly backend: "sqlite" | "postgres";
  /** The state database file, or the PostgreSQL server (password hidden), for messages. */
  readonly location: string;
  readonly ledger: Ledger;
  readonly runs: RunRegistryPort;
  /** Redacts secrets from every checkpoint and pending write before they are stored. */
  readonly checkpointer: BaseCheckpointSaver;
  /** Long-term memory (lessons) shared by the runs of the state. */
  readonly store: BaseStore;
  /**
   * PostgreSQL only: the replica of the workspace revisions, so a worker on another machine can
   * pull any revision a checkpoint names (SQLite's revisions are all local already).
   */
  readonly revisionReplica?: PgRevisionReplica;
  /** PostgreSQL only: the open database the adapters share (its pool), for the few callers that query it directly. */
  readonly pg?: PgState;
  /** Whether a state that stops answering may come back, so a run waits for it (a server: yes; a file: no). */
  readonly reconnects: boolean;
  /**
   * Waits up to `ms` for a state that stopped answering to answer again (tried every second): true
   * once it does, false after `ms` or a stop; false at once when it does not reconnect.
   */
  answersAgain(ms: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Refuses (CliError) a `command` on a run a queue worker holds or the queue still has (PostgreSQL's
   * run queue); nothing to refuse on SQLite, which has no queue.
   */
  refuseIfQueued(thread: string, command: string): Promise<void>;
  /** Closes what the port opened itself; a database handed to it by its caller stays open. */
  close(): Promise<void>;
}

/** Where a run's durable state is, as the runtime was told. */
export interface StateTarget {
  /** A PostgreSQL URL: the port opens (and closes) its own pool on it. */
  url?: string;
  /** An open PostgreSQL state to build on instead (a queue worker's one pool); the port never closes it. */
  shared?: PgState;
  /** A queue worker's holding of the run (PgLedger's fence): the ledger refuses appends once it is lost. */
  fence?: { thread: string; token: string };
}

/**
 * A state whose backend is chosen and, for PostgreSQL, connected and migrated; the SQLite adapter
 * waits for the workspace's database, which the runtime opens only after its other checks.
 */
export interface OpenedState {
  readonly backend: StatePort["backend"];
  /** The port on the workspace's database (the SQLite adapter's home; the PostgreSQL adapter ignores it). */
  attach(db: Database, dbPath: string): StatePort;
  /** Gives up before attach (a later check failed): closes what was opened. */
  close(): Promise<void>;
}
