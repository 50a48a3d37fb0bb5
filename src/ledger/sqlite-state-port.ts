import type { Database } from "../sqlite/driver.js";
import { SqliteStore } from "../memory/sqlite-store.js";
import type { Redactor } from "../secrets.js";
import { sqliteRunRegistry } from "./runs.js";
import { RedactingSqliteSaver } from "./sqlite-checkpoints.js";
import { SqliteLedger } from "./sqlite-ledger.js";
import type { StatePort } from "./state-port.js";

/**
 * The state in the workspace's own SQLite database. The database is the caller's (the runtime keeps
 * its lease, identity and revisions there whatever the backend), so close() leaves it open.
 */
export function sqliteStatePort(db: Database, redactor: Redactor, location: string): StatePort {
  return {
    backend: "sqlite",
    location,
    ledger: new SqliteLedger(db, { redactor }),
    runs: sqliteRunRegistry(db),
    checkpointer: new RedactingSqliteSaver(db, redactor),
    store: new SqliteStore(db, redactor),
    reconnects: false,
    answersAgain: async () => false,
    refuseIfQueued: async () => {},
    close: async () => {},
  };
}
