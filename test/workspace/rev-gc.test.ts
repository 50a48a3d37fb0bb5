import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Database } from "../../src/sqlite/driver.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStateDb } from "../../src/ledger/state-db.js";
import { RevisionError, RevisionStore } from "../../src/workspace/revisions.js";

// gc and sizes of the revision store (src/workspace/rev-gc.ts), through the store's API.

let tmp: string;
let ws: string;
let db: Database;
let store: RevisionStore;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-rev-gc-")));
  ws = path.join(tmp, "ws");
  fs.mkdirSync(ws);
  db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
  store = new RevisionStore(db, ws);
});

afterEach(() => {
  db.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function write(files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(ws, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
  }
}

const read = (rel: string) => fs.readFileSync(path.join(ws, rel), "utf8");

async function expectRevisionError(p: Promise<unknown>, code: string): Promise<void> {
  const caught = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(caught).toBeInstanceOf(RevisionError);
  expect((caught as RevisionError).code).toBe(code);
}

describe("gc and stats", () => {
  it("keeps live revisions and heads restorable and reclaims the rest", async () => {
    write({ "shared.txt": "shared by all\n", "v.txt": "v1 ".repeat(100) });
    const r1 = await store.snapshot();
    write({ "v.txt": "v2 ".repeat(100), "only2.txt": "only in r2 ".repeat(50) });
    const r2 = await store.snapshot();
    write({ "v.txt": "v3 ".repeat(100) });
    fs.rmSync(path.join(ws, "only2.txt"));
    const r3 = await store.snapshot();
    const before = store.stats();
    expect(before.revisions).toBe(3);

    const res = store.gc(new Set([r1.revId, "f".repeat(64)]));
    expect(res).toMatchObject({ revisionsDeleted: 1, blobsDeleted: 2, keptHeads: [r3.revId], unknownLive: ["f".repeat(64)] });
    const after = store.stats();
    expect(res.bytesReclaimed).toBe(before.blobs.storedBytes + before.trees.bytes - after.blobs.storedBytes - after.trees.bytes);
    expect(res.bytesReclaimed).toBeGreaterThan(0);
    expect(after.revisions).toBe(2);

    await expectRevisionError(store.restore(r2.revId), "REV_NOT_FOUND");
    await store.restore(r1.revId);
    expect(read("v.txt")).toBe("v1 ".repeat(100));
    await store.restore(r3.revId);
    expect(read("v.txt")).toBe("v3 ".repeat(100));
    expect(store.gc(new Set([r1.revId, r3.revId]))).toMatchObject({ revisionsDeleted: 0, blobsDeleted: 0, bytesReclaimed: 0 });
  });

  it("keeps big blobs as files and deletes those files when they are collected", async () => {
    const small = new RevisionStore(db, ws, { inlineBlobBytes: 100 });
    const big = Buffer.from(Array.from({ length: 4000 }, (_, i) => (i * 31) % 256));
    write({ "big.bin": big, "small.txt": "s" });
    const r1 = await small.snapshot();
    const hash = small.files(r1.revId).get("big.bin")!.hash;
    const file = path.join(ws, ".ledgerloop", "blobs", hash.slice(0, 2), hash);
    expect(fs.existsSync(file)).toBe(true);
    expect(small.stats().blobs.inFiles.count).toBe(1);
    fs.rmSync(path.join(ws, "big.bin"));
    await small.snapshot();
    const res = small.gc(new Set());
    expect(res.blobsDeleted).toBe(1);
    expect(fs.existsSync(file)).toBe(false);
  });
});
