import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openStateDb } from "../../src/ledger/state-db.js";
import { openPgState } from "../../src/ledger/pg-db.js";
import { PgStore } from "../../src/memory/pg-store.js";
import { SqliteStore } from "../../src/memory/sqlite-store.js";
import { createRedactor } from "../../src/secrets.js";
import { describePg, freshSchema, useTestDatabase } from "../helpers/postgres.js";
import { storeConformance } from "./store-conformance.js";

storeConformance("sqlite", {
  async create() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-store-"));
    const db = openStateDb(path.join(dir, "state.db"));
    return {
      store: new SqliteStore(db, createRedactor([])),
      async dispose() {
        db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});

describePg("PostgreSQL store", () => {
  const db = useTestDatabase("store");
  storeConformance("postgres", {
    async create() {
      const st = await openPgState(db.url, { schema: freshSchema("store") });
      return { store: new PgStore(st.pool, createRedactor([])), dispose: () => st.close() };
    },
  });
});
