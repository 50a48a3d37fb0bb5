import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it, expect } from "vitest";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";
import { loadEventSchemas } from "../../src/ledger/event-rows.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { sqliteStatePortForTest } from "../helpers/state-port.js";
import { ledgerConformance } from "./conformance.js";

// These tests append synchronously (appendSync): the event schemas load first.
await loadEventSchemas();

// The ledger of the state port's SQLite adapter, as the runtime opens it.
ledgerConformance("sqlite", {
  async create() {
    const { port, dispose } = await sqliteStatePortForTest("ledger");
    return { ledger: port.ledger, dispose };
  },
});

describe("sqlite ledger specifics", () => {
  it("cannot be updated or deleted behind its back", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-ledger-"));
    const db = openStateDb(path.join(dir, "state.db"));
    const ledger = new SqliteLedger(db);
    const e = ledger.appendSync({ threadId: "t", parentId: null, type: "decision", payload: { text: "a", step: 0 } });
    expect(() => db.prepare("UPDATE ll_events SET payload = '{}' WHERE id = ?").run(e.id)).toThrow(/append-only/);
    expect(() => db.prepare("DELETE FROM ll_events").run()).toThrow(/append-only/);
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
