import type PgBoss from "pg-boss";
import type { PgState } from "../ledger/pg-db.js";

// The run queue lives only in a PostgreSQL state: `submit`, `cancel` and `requeue` open the state
// (migrated, so the queue's tables exist) and start pg-boss for one call, then stop both. They did
// this each on their own; here it is written once, with the order that matters (the queue stops
// before the pool closes, and a failed start still closes the pool).

/** An open PostgreSQL state with its queue started, for the length of one command. */
export interface QueueState {
  readonly state: PgState;
  readonly boss: PgBoss;
}

/** Opens the PostgreSQL state at `url` and its queue, runs `fn` on them, and closes both whatever happens. */
export async function withQueueState<T>(url: string, fn: (q: QueueState) => Promise<T>): Promise<T> {
  const [{ openPgState }, { startQueue }] = await Promise.all([import("../ledger/pg-db.js"), import("./run-queue.js")]);
  const state = await openPgState(url);
  try {
    const boss = await startQueue(url);
    try {
      return await fn({ state, boss });
    } finally {
      await boss.stop({ graceful: false, wait: true }).catch(() => {});
    }
  } finally {
    await state.close();
  }
}
