import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { openStateDb } from "../../src/ledger/state-db.js";
import { SqliteLedger } from "../../src/ledger/sqlite-ledger.js";

// Reading a ledger does not load the event schemas (zod): `threads`, `history` and `ledger` start in
// a third of the time. Every append is still validated: `append` loads them first, and a
// synchronous append before that is refused, never written unchecked.
describe("event schemas load on the first append", () => {
  it("refuses appendSync before any append, then validates every append", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ll-lazy-schemas-"));
    const ledger = new SqliteLedger(openStateDb(path.join(dir, "state.db")));
    expect(() => ledger.appendSync({ threadId: "t", parentId: null, type: "decision", payload: { text: "a", step: 0 } })).toThrow(
      /event schemas are not loaded/,
    );
    expect(await ledger.list("t")).toEqual([]);
    await expect(ledger.append({ threadId: "t", parentId: null, type: "decision", payload: { text: 1 } as never })).rejects.toThrow(/invalid decision event/);
    const a = await ledger.append({ threadId: "t", parentId: null, type: "decision", payload: { text: "a", step: 0 } });
    // Loaded now: the synchronous path validates too.
    expect(() => ledger.appendSync({ threadId: "t", parentId: a.id, type: "decision", payload: { step: 1 } as never })).toThrow(/invalid decision event/);
    const b = ledger.appendSync({ threadId: "t", parentId: a.id, type: "decision", payload: { text: "b", step: 1 } });
    expect((await ledger.list("t")).map((e) => e.id)).toEqual([a.id, b.id]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
