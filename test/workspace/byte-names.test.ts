/**
 * Names that are not UTF-8 (issue 32, finding 9, second half): a file whose name is bytes must be
 * seen like any other — listed in what a command changed, kept in revisions with its exact bytes,
 * restored and removed by a rewind — and the restore that does it never goes through a symlink.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Database } from "../../src/sqlite/driver.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStateDb } from "../../src/ledger/state-db.js";
import { bytesOfName, hostPath, nameOfBytes, shownName } from "../../src/workspace/byte-names.js";
import { walkFiles } from "../../src/workspace/files.js";
import { RevisionStore } from "../../src/workspace/revisions.js";
import { trackCommand } from "../../src/workspace/tracker.js";

describe("nameOfBytes / bytesOfName", () => {
  it("maps UTF-8 names to themselves", () => {
    for (const s of ["plain.txt", "dir/ünïcödé.ts", "日本語/ファイル.md", "emoji-😀.txt", ""]) {
      expect(nameOfBytes(Buffer.from(s))).toBe(s);
      expect(bytesOfName(s).equals(Buffer.from(s))).toBe(true);
    }
  });

  it("round-trips every byte string, invalid UTF-8 and the escape block's own code points included", () => {
    const samples: Buffer[] = [
      Buffer.from([0xff, 0xfe]),
      Buffer.from([0x61, 0x80, 0x62]),
      Buffer.from([0xc3]), // a cut-off sequence
      Buffer.from([0xe0, 0x80, 0x80]), // overlong
      Buffer.from([0xed, 0xa0, 0x80]), // a UTF-8-encoded surrogate
      Buffer.from([0xf4, 0x90, 0x80, 0x80]), // above U+10FFFF
      Buffer.from("\uf780\uf7ff", "utf8"), // names really holding the escape block
      Buffer.concat([Buffer.from("x\uf7a5y", "utf8"), Buffer.from([0xa5])]),
    ];
    for (let i = 0; i < 3000; i++) samples.push(randomBytes(1 + (i % 24)));
    for (const b of samples) {
      const s = nameOfBytes(b);
      expect(bytesOfName(s).equals(b), `round trip of ${b.toString("hex")}`).toBe(true);
      // What is stored is valid Unicode: no lone surrogates, so SQLite and PostgreSQL keep it as is.
      expect(Buffer.from(s, "utf8").toString("utf8")).toBe(s);
    }
  });

  it("distinct byte names give distinct strings", () => {
    const a = nameOfBytes(Buffer.from([0xa5]));
    const b = nameOfBytes(Buffer.from("\uf7a5", "utf8"));
    expect(a).not.toBe(b);
  });

  it("shows escaped bytes as \\xNN", () => {
    expect(shownName(nameOfBytes(Buffer.concat([Buffer.from("d"), Buffer.from([0xff, 0xfe]), Buffer.from("/x")])))).toBe("d\\xff\\xfe/x");
  });
});

describe("workspace names that are not UTF-8", () => {
  let tmp: string;
  let ws: string;
  let db: Database;
  let store: RevisionStore;
  const ODD = Buffer.from([0x6f, 0xff, 0xfe]); // "o" then two bytes that are not UTF-8
  const oddAbs = (suffix = "") => Buffer.concat([Buffer.from(`${ws}/`), ODD, Buffer.from(suffix)]);

  beforeEach(() => {
    tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-bytes-")));
    ws = path.join(tmp, "ws");
    fs.mkdirSync(ws);
    db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
    store = new RevisionStore(db, ws);
  });

  afterEach(() => {
    db.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("are listed, and a command's feedback names the files it made under them", async () => {
    fs.writeFileSync(path.join(ws, "a.txt"), "a\n");
    const { changes } = await trackCommand(ws, undefined, async () => {
      fs.mkdirSync(oddAbs());
      fs.writeFileSync(oddAbs("/inner.txt"), "hidden?\n");
      fs.writeFileSync(oddAbs(".txt"), "odd file\n");
    });
    const oddDir = nameOfBytes(ODD);
    expect(changes.created.sort()).toEqual([`${oddDir}.txt`, `${oddDir}/inner.txt`].sort());
    const { files } = await walkFiles(ws);
    expect(files).toContain(`${oddDir}/inner.txt`);
    expect(fs.readFileSync(hostPath(ws, `${oddDir}/inner.txt`), "utf8")).toBe("hidden?\n");
  });

  it("are removed by a rewind to before they existed, and restored with their exact bytes", async () => {
    fs.writeFileSync(path.join(ws, "a.txt"), "a\n");
    const before = await store.snapshot();
    fs.mkdirSync(oddAbs());
    fs.writeFileSync(oddAbs("/inner.txt"), "v1\n");
    fs.writeFileSync(oddAbs(".bin"), Buffer.from([0, 1, 2, 0xff]));
    const withOdd = await store.snapshot();
    expect(withOdd.changed?.created.length).toBe(2);

    const back = await store.restore(before.revId);
    expect(back.deleted.length).toBe(2);
    expect(fs.existsSync(oddAbs())).toBe(false);
    expect(fs.existsSync(oddAbs(".bin"))).toBe(false);
    expect(fs.readdirSync(ws).sort()).toEqual([".ledgerloop", "a.txt"]);

    await store.restore(withOdd.revId);
    expect(fs.readFileSync(oddAbs("/inner.txt"), "utf8")).toBe("v1\n");
    expect(fs.readFileSync(oddAbs(".bin")).equals(Buffer.from([0, 1, 2, 0xff]))).toBe(true);
    expect((await store.status()).clean).toBe(true);
  });

  it("a symlink target that is not UTF-8 is restored byte for byte", async () => {
    const target = Buffer.concat([Buffer.from("t-"), Buffer.from([0xfe])]);
    fs.symlinkSync(target, path.join(ws, "link"));
    const r1 = await store.snapshot();
    fs.unlinkSync(path.join(ws, "link"));
    await store.snapshot();
    await store.restore(r1.revId);
    expect(fs.readlinkSync(path.join(ws, "link"), { encoding: "buffer" }).equals(target)).toBe(true);
  });
});

describe("restore never goes through a symlink", () => {
  let tmp: string;
  let ws: string;
  let outside: string;
  let db: Database;
  let store: RevisionStore;

  beforeEach(() => {
    tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-restore-link-")));
    ws = path.join(tmp, "ws");
    outside = path.join(tmp, "host-dir");
    fs.mkdirSync(ws);
    fs.mkdirSync(outside);
    db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
    store = new RevisionStore(db, ws);
  });

  afterEach(() => {
    db.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("an ignored symlink where the revision has a directory: refused, nothing written outside", async () => {
    fs.mkdirSync(path.join(ws, "cache"));
    fs.writeFileSync(path.join(ws, "cache/authorized_keys"), "ssh-ed25519 AAAA agent\n");
    const r1 = await store.snapshot();
    fs.rmSync(path.join(ws, "cache"), { recursive: true });
    fs.writeFileSync(path.join(ws, ".gitignore"), "cache\n");
    fs.symlinkSync(outside, path.join(ws, "cache"));
    await store.snapshot();
    await expect(store.restore(r1.revId)).rejects.toMatchObject({ code: "REV_RESTORE_CONFLICT" });
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it("a deeper directory of the revision swapped for a symlink after the last snapshot: replaced, not followed", async () => {
    fs.mkdirSync(path.join(ws, "a/b"), { recursive: true });
    fs.writeFileSync(path.join(ws, "a/b/f.txt"), "mine\n");
    const r1 = await store.snapshot();
    fs.rmSync(path.join(ws, "a/b"), { recursive: true });
    fs.symlinkSync(outside, path.join(ws, "a/b"));
    await store.restore(r1.revId);
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.lstatSync(path.join(ws, "a/b")).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(ws, "a/b/f.txt"), "utf8")).toBe("mine\n");
  });
});
