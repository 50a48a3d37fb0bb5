// Kept apart from run-status.ts (which loads the registry and zod): every CLI command imports it
// through ledger/open-state.ts, `--help` included.

/** Where a run's checkpoints are, in a sentence for commands that cannot show them from this database. */
export function checkpointsElsewhere(s: { thread: string; origin: string | null; checkpointsIn: string | null }): string | null {
  if (s.checkpointsIn === "state-db") return null;
  if (s.checkpointsIn === "external") {
    return s.origin === "server"
      ? `the checkpoints of ${s.thread} are kept by the LangGraph server that ran it (its own checkpointer): see them in Studio or with the SDK (client.threads.getHistory("${s.thread}")); shown here is the ledger's view`
      : `the checkpoints of ${s.thread} are kept by the checkpointer the script gave the graph; shown here is the ledger's view`;
  }
  return `${s.thread} has no checkpoints in this state database; shown here is the ledger's view`;
}
