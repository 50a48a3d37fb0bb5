import type { BaseStore } from "@langchain/langgraph-checkpoint";
import { openExistingState, openPgInspection, stateUrlOf, type WorkspaceArgs } from "./open-state.js";

/**
 * Runs `fn` on the lessons store: PostgreSQL's with --state (or LEDGERLOOP_STATE_URL), where every
 * machine's runs keep theirs, else the workspace's SQLite state. Loaded on use only (the stores
 * extend LangGraph's BaseStore).
 */
export async function withLessonStore<T>(args: WorkspaceArgs, write: boolean, fn: (store: BaseStore) => Promise<T>): Promise<T> {
  const url = stateUrlOf(args);
  if (url) {
    const { PgStore } = await import("./pg-store.js");
    const pg = await openPgInspection(url);
    try {
      return await fn(new PgStore(pg.pool));
    } finally {
      await pg.close();
    }
  }
  const { SqliteStore } = await import("../memory/sqlite-store.js");
  const st = await openExistingState(args, { write });
  try {
    return await fn(new SqliteStore(st.db));
  } catch (err) {
    throw st.named(err);
  } finally {
    st.close();
  }
}
