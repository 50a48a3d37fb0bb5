import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openStatePort } from "../../src/ledger/open-state-port.js";
import { openRunState } from "../../src/ledger/pg-state-port.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import type { StatePort } from "../../src/ledger/state-port.js";
import { createRedactor } from "../../src/secrets.js";
import { freshSchema } from "./postgres.js";

// The state port's adapters as the runtime opens them, for the conformance suites: each suite runs
// against the part of the port it covers (ledger, runs and checkpointer, store), on both backends.

export interface OpenPort {
  port: StatePort;
  dispose(): Promise<void>;
}

/** A fresh SQLite state: a workspace database of its own, through openStatePort. */
export async function sqliteStatePortForTest(label = "port"): Promise<OpenPort> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ll-${label}-`));
  const dbPath = path.join(dir, "state.db");
  const db = openStateDb(dbPath);
  const port = (await openStatePort({}, createRedactor([]))).attach(db, dbPath);
  return {
    port,
    async dispose() {
      await port.close();
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh PostgreSQL state in a schema of its own, opened as a worker opens its one pool and handed
 * to openStatePort as the shared state (the port's close() must leave it open: checked here).
 */
export async function pgStatePortForTest(url: string, label = "port"): Promise<OpenPort> {
  const st = await openRunState(url, { schema: freshSchema(label), max: 3 });
  const port = (await openStatePort({ shared: st }, createRedactor([]))).attach(undefined as never, "");
  return {
    port,
    async dispose() {
      await port.close();
      // Still open: the pool was the caller's.
      await st.pool.query("SELECT 1");
      await st.close();
    },
  };
}
