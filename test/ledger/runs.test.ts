import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openStateDb } from "../../src/ledger/state-db.js";
import { openPgState } from "../../src/ledger/pg-db.js";
import { RedactingPostgresSaver } from "../../src/ledger/pg-checkpoints.js";
import { PgRunRegistry } from "../../src/ledger/pg-runs.js";
import { sqliteRunRegistry } from "../../src/ledger/runs.js";
import { RedactingSqliteSaver } from "../../src/runtime.js";
import { createRedactor } from "../../src/secrets.js";
import { describePg, freshSchema, useTestDatabase } from "../helpers/postgres.js";
import { runsConformance } from "./runs-conformance.js";

runsConformance("sqlite", {
  async create() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-runs-"));
    const db = openStateDb(path.join(dir, "state.db"));
    return {
      runs: sqliteRunRegistry(db),
      checkpointer: new RedactingSqliteSaver(db, createRedactor([])),
      async dispose() {
        db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});

describePg("PostgreSQL run registry", () => {
  const db = useTestDatabase("runs");
  runsConformance("postgres", {
    async create() {
      const st = await openPgState(db.url, { schema: freshSchema("runs") });
      const checkpointer = new RedactingPostgresSaver(st.pool, createRedactor([]), { schema: st.schema });
      await checkpointer.setup();
      return { runs: new PgRunRegistry(st.pool), checkpointer, dispose: () => st.close() };
    },
  });
});
