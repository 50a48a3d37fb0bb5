import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStateDb } from "../../src/ledger/state-db.js";
import { RevisionStore } from "../../src/workspace/revisions.js";
import { REPO } from "../helpers/workspace.js";

let tmp: string;
let ws: string;
let dbFile: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-rev-crash-")));
  ws = path.join(tmp, "ws");
  fs.mkdirSync(ws);
  dbFile = path.join(ws, ".ledgerloop", "state.db");
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

// The snapshot runs in a real child process that SIGKILLs itself at the failpoint: right after the
// new blobs are committed, before any tree, revision row or head is written.
const CHILD = `
import { register } from "tsx/esm/api";
register();
const { openStateDb } = await import("./src/ledger/state-db.ts");
const { RevisionStore } = await import("./src/workspace/revisions.ts");
const db = openStateDb(process.env.REV_DB);
await new RevisionStore(db, process.env.REV_WS, { inlineBlobBytes: Number(process.env.REV_INLINE) }).snapshot();
db.close();
`;

function snapshotInChild(failpoint: string | undefined, inline = 1024 * 1024) {
  const env: NodeJS.ProcessEnv = { ...process.env, REV_DB: dbFile, REV_WS: ws, REV_INLINE: String(inline) };
  delete env.LEDGERLOOP_FAILPOINT;
  if (failpoint) env.LEDGERLOOP_FAILPOINT = failpoint;
  return spawnSync(process.execPath, ["--input-type=module", "-e", CHILD], { cwd: REPO, env, encoding: "utf8", timeout: 60_000 });
}

describe("a snapshot killed mid-way", () => {
  it("leaves no half revision: the head and the revisions are as before, and gc removes the orphan blobs", async () => {
    fs.writeFileSync(path.join(ws, "a.txt"), "one\n");
    fs.writeFileSync(path.join(ws, "big.bin"), randomBytes(5000));
    const first = snapshotInChild(undefined, 1000);
    expect(first.status, first.stderr).toBe(0);

    const db = openStateDb(dbFile);
    try {
      const store = new RevisionStore(db, ws, { inlineBlobBytes: 1000 });
      const r1 = store.head()!.revId;
      fs.writeFileSync(path.join(ws, "a.txt"), "two\n");
      fs.writeFileSync(path.join(ws, "big.bin"), randomBytes(6000)); // a blob file this time
      fs.writeFileSync(path.join(ws, "new.txt"), "new\n");
      const before = store.stats();

      const killed = snapshotInChild("rev-blobs:1", 1000);
      expect(killed.signal).toBe("SIGKILL");

      const after = store.stats();
      expect(after.revisions).toBe(before.revisions);
      expect(after.trees).toEqual(before.trees);
      expect(after.blobs.count).toBe(before.blobs.count + 3); // committed, but nothing refers to them
      expect(store.head()?.revId).toBe(r1);
      expect(await store.status()).toMatchObject({ baseRevId: r1, created: ["new.txt"], modified: ["a.txt", "big.bin"] });

      // Everything still works: rewind to the last complete revision, and collect the orphans.
      await store.restore(r1);
      expect(fs.readFileSync(path.join(ws, "a.txt"), "utf8")).toBe("one\n");
      const gc = store.gc(new Set([r1]));
      expect(gc.blobsDeleted).toBe(3);
      expect(store.stats()).toEqual(before);
      expect(fs.readdirSync(path.join(ws, ".ledgerloop", "blobs")).flatMap((d) => fs.readdirSync(path.join(ws, ".ledgerloop", "blobs", d)))).toHaveLength(1);
    } finally {
      db.close();
    }
  });
});
