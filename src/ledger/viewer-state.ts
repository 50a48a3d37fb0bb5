import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { Ledger } from "./port.js";
import type { RunSummary } from "./run-status.js";

// The viewer's read port: what every view of `ledgerloop web` reads beyond the ledger and
// checkpoint ports, with one adapter per backend (sqlite-viewer-state.ts, pg-viewer-state.ts;
// open-viewer-state.ts picks one). The views read only through it, so the pages are the same
// whichever database holds the runs.

/** Where the viewer reads from: a workspace's SQLite state, or a PostgreSQL state database (`state`). */
export interface ViewerSource {
  workspace: string;
  stateDir?: string;
  /** PostgreSQL URL; when set, workspace and stateDir are not read. */
  state?: string;
}

/** What the registry (or, for a run no worker has started, its submission) says a run was started with. */
export interface RunInfo {
  goal: string;
  createdAt: string;
  settings: Record<string, unknown>;
}

/** One request's read-only view of a state. The viewer never writes, and never waits long for a lock. */
export interface ReadOnlyState {
  /** What a 404 names: "this workspace", or the database's URL without its password. */
  where: string;
  ledger: Ledger | null;
  /** LangGraph's checkpointer (SqliteSaver or PostgresSaver); null while the state has no checkpoint tables. */
  checkpointer: BaseCheckpointSaver | null;
  /**
   * Every run, newest first, with the status `ledgerloop threads` shows (and the queue's holder on
   * PostgreSQL); with `thread`, only that one's row (or none).
   */
  listRuns(thread?: string): Promise<RunSummary[]>;
  /** The state has recorded something for the thread (registry, ledger, checkpoints or queue). */
  hasThread(thread: string): Promise<boolean>;
  runInfo(thread: string): Promise<RunInfo | null>;
  /** The thread's highest ledger seq and its number of events (every branch). */
  seqStats(thread: string): Promise<{ maxSeq: number; count: number }>;
  /** The thread's newest ledger event, by seq. */
  headEvent(thread: string): Promise<string | null>;
  /** The thread's ledger has more than one branch (a rewind or fork continued it). */
  forked(thread: string): Promise<boolean>;
  close(): void;
}

/** A state the viewer holds while it runs; each request opens a ReadOnlyState from it. */
export interface StateSource {
  kind: "sqlite" | "postgres";
  /** Shown on the page: the workspace directory, or the database's URL without its password. */
  label: string;
  /** A state for one request, or null when nothing was recorded yet (a workspace without a state database). */
  open(): Promise<ReadOnlyState | null>;
  /** The backend's own errors as one-line LedgerloopErrors naming the state; others unchanged. */
  named(err: unknown): unknown;
  close(): Promise<void>;
}

/** A registry row's settings, parsed; {} when absent or not JSON. */
export function parseSettings(raw: string | null | undefined): Record<string, unknown> {
  if (!raw) return {};
  try {
    const v = JSON.parse(raw) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
