import path from "node:path";
import type { Database } from "../../../src/sqlite/driver.js";
import { SqliteLedger } from "../../../src/ledger/sqlite-ledger.js";
import { openStateDb } from "../../../src/ledger/state-db.js";
import { tempWorkspace } from "../../helpers/workspace.js";

/**
 * A workspace whose state holds two runs of two decisions each about a tariff table, "kept" and
 * "gone" (the one a test deletes), for the tests of a run deleted under the index.
 */
export async function twoTariffRuns(files: Record<string, string>): Promise<{ ws: string; stateDir: string; db: Database; ledger: SqliteLedger }> {
  const ws = tempWorkspace(undefined, files);
  const stateDir = path.join(ws, ".ledgerloop");
  const db = openStateDb(path.join(stateDir, "state.db"));
  const ledger = new SqliteLedger(db);
  const kept = await ledger.append({ threadId: "kept", parentId: null, type: "decision", payload: { text: "Cache the tariff table in memory", step: 1 } });
  await ledger.append({ threadId: "kept", parentId: kept.id, type: "decision", payload: { text: "Expire the tariff cache hourly", step: 2 } });
  const gone = await ledger.append({ threadId: "gone", parentId: null, type: "decision", payload: { text: "Store the tariff table in redis", step: 1 } });
  await ledger.append({ threadId: "gone", parentId: gone.id, type: "decision", payload: { text: "Shard redis by tariff region", step: 2 } });
  return { ws, stateDir, db, ledger };
}
