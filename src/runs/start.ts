import { randomBytes } from "node:crypto";
import { CliError, threadDeleted } from "../errors.js";
import { RunRegistry } from "../ledger/runs.js";
import type { Runtime } from "../runtime.js";

// Starting a run: its id, and the checks that it is new. The CLI's `run`, openAgent and `submit`
// all start runs through here.

/** A new run id: the time it started and a random suffix. */
export function newThreadId(now = new Date()): string {
  const ts = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `run-${ts}-${randomBytes(3).toString("hex")}`;
}

/**
 * Registers a new run (the CLI's and the package API's); fails when the thread id is taken. On
 * SQLite the check is synchronous; a PostgreSQL registry is asked by assertNewThread, which every
 * path that starts a run awaits.
 */
export function startThread(rt: Runtime, task: string, thread: string = newThreadId()): string {
  if (rt.backend === "sqlite") {
    const runs = new RunRegistry(rt.db);
    if (runs.hasCheckpoints(thread) || runs.get(thread)) throw threadExists(thread);
    // The runtime's ledger created ll_deleted_runs when it opened the database for writing.
    if (rt.db.prepare("SELECT 1 FROM ll_deleted_runs WHERE thread_id = ?").get(thread)) throw threadDeleted(thread);
  }
  // The graph's plan node registers the run (with its origin), whatever started it.
  return thread;
}

/** Fails when the thread id is taken in the runtime's registry (either backend). */
export async function assertNewThread(rt: Runtime, thread: string): Promise<void> {
  if ((await rt.runs.hasCheckpoints(thread)) || (await rt.runs.get(thread))) throw threadExists(thread);
  if ((await rt.ledger.deletedThreads()).includes(thread)) throw threadDeleted(thread);
}

function threadExists(thread: string): CliError {
  return new CliError(`thread "${thread}" already exists; continue it with \`ledgerloop resume ${thread}\``, 1, "THREAD_EXISTS");
}
