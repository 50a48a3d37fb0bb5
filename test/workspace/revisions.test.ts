import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Database } from "../../src/sqlite/driver.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { openStateDb } from "../../src/ledger/state-db.js";
import { ConfinedDir } from "../../src/workspace/confined.js";
import { walkFiles } from "../../src/workspace/files.js";
import { RevisionError, RevisionStore, formatStat } from "../../src/workspace/revisions.js";

let tmp: string;
let ws: string;
let db: Database;
let store: RevisionStore;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-rev-")));
  ws = path.join(tmp, "ws");
  fs.mkdirSync(ws);
  db = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
  store = new RevisionStore(db, ws);
});

afterEach(() => {
  vi.restoreAllMocks();
  db.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Writes `content` at each workspace-relative path, creating directories as needed. */
function write(files: Record<string, string | Buffer>, root = ws): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
  }
}

const read = (rel: string, root = ws) => fs.readFileSync(path.join(root, rel), "utf8");
const exists = (rel: string, root = ws) => fs.existsSync(path.join(root, rel)) || isLink(path.join(root, rel));
const isLink = (abs: string) => fs.lstatSync(abs, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
const sh = (script: string) => execFileSync("sh", ["-c", script], { cwd: ws });
/** Past the racy window (100 ms): stats recorded now are trusted at the next snapshot. */
const settle = () => new Promise((r) => setTimeout(r, 150));

/**
 * Every entry under `root` except .ledgerloop, with content or link target and permission bits: what
 * "the workspace is exactly that revision" is checked against (ignored files and .git included, so a
 * test also sees that restore left them alone).
 */
function tree(root = ws): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (r === ".ledgerloop") continue;
      const abs = path.join(root, r);
      if (e.isSymbolicLink()) out[r] = `-> ${fs.readlinkSync(abs)}`;
      else if (e.isDirectory()) {
        if (fs.readdirSync(abs).length === 0) out[`${r}/`] = "(empty dir)";
        walk(r);
      } else out[r] = `${(fs.statSync(abs).mode & 0o777).toString(8)} ${fs.readFileSync(abs).toString("base64")}`;
    }
  };
  walk("");
  return out;
}

function count(table: string): number {
  return (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
}

async function expectRevisionError(p: Promise<unknown> | (() => unknown), code: string, ...mention: string[]) {
  let caught: unknown;
  try {
    await (typeof p === "function" ? p() : p);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RevisionError);
  expect((caught as RevisionError).code).toBe(code);
  for (const m of mention) expect((caught as Error).message).toContain(m);
}

describe("snapshot", () => {
  it("records every non-ignored file, untracked and shell-made ones included, never .git/ or .ledgerloop/", async () => {
    write({ "a.txt": "a\n", "src/b.ts": "b\n", ".gitignore": "*.log\nbuild/\n", "x.log": "log", "build/out.js": "o", ".git/HEAD": "ref" });
    sh("mkdir -p gen && printf 'made by a shell\\n' > gen/shell.txt");
    const r = await store.snapshot({ label: "start" });
    expect([...store.files(r.revId).keys()].sort()).toEqual([".gitignore", "a.txt", "gen/shell.txt", "src/b.ts"]);
    expect(r.changed).toEqual({ created: [".gitignore", "a.txt", "gen/shell.txt", "src/b.ts"], modified: [], deleted: [] });
    expect(r.reused).toBe(false);
    expect(store.info(r.revId)).toMatchObject({ revId: r.revId, label: "start", files: 4 });
    expect(store.head()?.revId).toBe(r.revId);
    expect(store.readFile(r.revId, "gen/shell.txt").toString()).toBe("made by a shell\n");
  });

  it("returns the previous id without writing when nothing changed", async () => {
    write({ "a.txt": "a\n", "d/b.txt": "b\n" });
    const r1 = await store.snapshot();
    await settle();
    await store.snapshot(); // trusts the stats from here on
    const rows = [count("ll_rev_revisions"), count("ll_rev_trees"), count("ll_rev_blobs")];
    const r2 = await store.snapshot();
    expect(r2.revId).toBe(r1.revId);
    expect(r2.reused).toBe(true);
    expect(r2.changed).toEqual({ created: [], modified: [], deleted: [] });
    expect(r2.stats).toMatchObject({ hashed: 0, blobsWritten: 0, treesWritten: 0 });
    expect([count("ll_rev_revisions"), count("ll_rev_trees"), count("ll_rev_blobs")]).toEqual(rows);
  });

  it("reports creates, modifications, deletions and a rename as delete + create", async () => {
    write({ "keep.txt": "k", "edit.txt": "v1", "gone.txt": "g", "old/name.txt": "moving" });
    await store.snapshot();
    write({ "edit.txt": "v2", "new.txt": "n" });
    fs.rmSync(path.join(ws, "gone.txt"));
    fs.mkdirSync(path.join(ws, "new"));
    fs.renameSync(path.join(ws, "old/name.txt"), path.join(ws, "new/name.txt"));
    const r = await store.snapshot();
    expect(r.changed).toEqual({ created: ["new.txt", "new/name.txt"], modified: ["edit.txt"], deleted: ["gone.txt", "old/name.txt"] });
    // The entries the snapshot hands back are the stored revision's.
    expect(new Map([...r.files].sort())).toEqual(new Map([...store.files(r.revId)].sort()));
    expect([...r.files.keys()].sort()).toEqual(["edit.txt", "keep.txt", "new.txt", "new/name.txt"]);
  });

  it("does not count a touch (mtime only) as a change", async () => {
    write({ "a.txt": "same" });
    const r1 = await store.snapshot();
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(path.join(ws, "a.txt"), later, later);
    const r2 = await store.snapshot();
    expect(r2.revId).toBe(r1.revId);
    expect(r2.changed.modified).toEqual([]);
    expect((await store.status()).clean).toBe(true);
  });

  it("sees a same-size rewrite right after a snapshot (racy timestamps are re-hashed)", async () => {
    write({ "a.txt": "aaaa" });
    const r1 = await store.snapshot();
    fs.writeFileSync(path.join(ws, "a.txt"), "bbbb"); // same size, very likely the same mtime tick
    const r2 = await store.snapshot();
    expect(r2.revId).not.toBe(r1.revId);
    expect(r2.changed.modified).toEqual(["a.txt"]);
  });

  it("does not trust a stat taken within the racy window, so a rewrite with identical stats is still caught", async () => {
    // This machine's file system stamps are too fine for two writes to share one, so the test makes
    // the stats identical by hand: the cache row gets the rewritten file's stat, as a coarse clock
    // (one stamp per tick, or per second on FAT/HFS+) would have produced it.
    write({ "a.txt": "aaaa" });
    await store.snapshot();
    const row = () => db.prepare("SELECT trusted FROM ll_rev_stat WHERE path = 'a.txt'").get() as { trusted: number };
    expect(row().trusted).toBe(0); // stamped just now
    fs.writeFileSync(path.join(ws, "a.txt"), "bbbb");
    const st = fs.statSync(path.join(ws, "a.txt"));
    db.prepare("UPDATE ll_rev_stat SET mtime = ?, ctime = ?, ino = ?, size = ? WHERE path = 'a.txt'").run(st.mtimeMs, st.ctimeMs, st.ino, st.size);
    const r = await store.snapshot();
    expect(r.changed.modified).toEqual(["a.txt"]);
    expect(store.readFile(r.revId, "a.txt").toString()).toBe("bbbb");

    await settle();
    await store.snapshot();
    expect(row().trusted).toBe(1); // old enough now: trusted, and not read again
    expect((await store.snapshot()).stats.hashed).toBe(0);
  });

  it("re-reads only the changed file of a large workspace (counted by the store and by opens of workspace files)", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`d${i % 10}/f${i}.ts`] = `export const v${i} = ${i};\n`;
    write(files);
    const first = await store.snapshot();
    expect(first.stats.hashed).toBe(300);
    await settle();
    await store.snapshot();
    await settle();

    // Workspace files are opened through the confined reader (by descriptor, not by path); so are
    // the ignore files the walk reads (.git/info/exclude), which are not content.
    const opened: string[] = [];
    const real = ConfinedDir.prototype.openRead;
    vi.spyOn(ConfinedDir.prototype, "openRead").mockImplementation(function (this: ConfinedDir, rel) {
      if (this.root === ws && !String(rel).startsWith(".git/")) opened.push(String(rel));
      return real.call(this, rel);
    });
    write({ "d3/f3.ts": "export const v3 = 'changed';\n" });
    const r = await store.snapshot();
    expect(r.changed).toEqual({ created: [], modified: ["d3/f3.ts"], deleted: [] });
    expect(r.stats.hashed).toBe(1);
    expect(opened).toEqual(["d3/f3.ts"]);
    // Only the trees on the changed file's path are new: the root and d3.
    expect(r.stats.treesWritten).toBe(2);
  });

  it("deduplicates contents: shared and repeated files are stored once", async () => {
    write({ "a.txt": "same content\n", "copy/a.txt": "same content\n", "b.txt": "b1\n" });
    const r1 = await store.snapshot();
    expect(r1.stats.blobsWritten).toBe(2);
    write({ "b.txt": "b2\n" });
    const r2 = await store.snapshot();
    expect(r2.stats.blobsWritten).toBe(1);
    expect(count("ll_rev_blobs")).toBe(3);
    // Two revisions share the blob of a.txt and the tree of copy/.
    const s = store.stats();
    expect(s.revisions).toBe(2);
    expect(s.blobs.count).toBe(3);
    expect(s.trees.count).toBe(3);
  });

  it("gives equal workspaces equal ids, also in another state DB", async () => {
    write({ "a.txt": "x", "b/c.txt": "y" });
    const r1 = await store.snapshot();
    const other = path.join(tmp, "other");
    write({ "b/c.txt": "y", "a.txt": "x" }, other);
    const db2 = openStateDb(path.join(other, ".ledgerloop", "state.db"));
    try {
      expect((await new RevisionStore(db2, other).snapshot()).revId).toBe(r1.revId);
    } finally {
      db2.close();
    }
  });

  it("records the regular files walkFiles lists (the one walker, same .gitignore rules)", async () => {
    write({
      ".gitignore": "*.log\n/dist/\n!keep.log\n",
      "a.log": "",
      "keep.log": "",
      "dist/x.js": "",
      "src/dist/y.js": "",
      "src/.gitignore": "gen/\n",
      "src/gen/z.ts": "",
      "src/ok.ts": "",
      ".git/info/exclude": "secret.txt\n",
      "secret.txt": "",
      "vendor/.git/HEAD": "",
      "vendor/v.js": "",
    });
    const recorded = [...(await store.snapshot()).files].filter(([, e]) => e.kind === "file").map(([rel]) => rel);
    expect(recorded).toEqual((await walkFiles(ws)).files);
    expect(recorded).toContain("src/ok.ts");
  });
});

describe("restore", () => {
  it("rewinds creates, edits, deletes, a rename and shell-made files, then goes forward again", async () => {
    write({ "keep.txt": "k", "edit.txt": "v1\n", "gone.txt": "g", "old/name.txt": "moving" });
    const r1 = await store.snapshot();
    const before = tree();
    write({ "edit.txt": "v2\n", "brand/new.txt": "n" });
    fs.rmSync(path.join(ws, "gone.txt"));
    fs.mkdirSync(path.join(ws, "new"));
    fs.renameSync(path.join(ws, "old/name.txt"), path.join(ws, "new/name.txt"));
    // Revisions record files, not directories (as git does): an emptied directory is not part of one.
    fs.rmdirSync(path.join(ws, "old"));
    sh("printf 'sed made this\\n' > shell.txt && sed -i 's/k/K/' keep.txt");
    const r2 = await store.snapshot();
    const after = tree();

    const back = await store.restore(r1.revId);
    expect(back).toMatchObject({
      created: ["gone.txt", "old/name.txt"],
      modified: ["edit.txt", "keep.txt"],
      deleted: ["brand/new.txt", "new/name.txt", "shell.txt"],
      skipped: [],
      dryRun: false,
    });
    expect(tree()).toEqual(before); // emptied directories (brand/, new/) are gone too
    expect((await store.status()).clean).toBe(true);
    expect(store.head()?.revId).toBe(r1.revId);

    await store.restore(r2.revId);
    expect(tree()).toEqual(after);
    expect((await store.snapshot()).revId).toBe(r2.revId);
  });

  it("never touches ignored files, .git/ or .ledgerloop/", async () => {
    write({ ".gitignore": "build/\n*.log\n", "src/a.ts": "a1", ".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n" });
    const r1 = await store.snapshot();
    write({ "src/a.ts": "a2", "build/out.js": "built", "debug.log": "log", "src/trace.log": "t", ".git/HEAD": "ref: refs/heads/other\n" });
    fs.writeFileSync(path.join(ws, ".ledgerloop", "note"), "runtime state");
    await store.snapshot();
    const res = await store.restore(r1.revId);
    expect(res).toMatchObject({ created: [], modified: ["src/a.ts"], deleted: [] });
    expect(read("src/a.ts")).toBe("a1");
    expect(read("build/out.js")).toBe("built");
    expect(read("debug.log")).toBe("log");
    expect(read("src/trace.log")).toBe("t");
    expect(read(".git/HEAD")).toBe("ref: refs/heads/other\n");
    expect(read(".ledgerloop/note")).toBe("runtime state");
  });

  it("keeps a directory that still holds ignored files after its tracked files are rewound away", async () => {
    write({ ".gitignore": "*.tmp\n", "a.txt": "a" });
    const r1 = await store.snapshot();
    write({ "d/new.txt": "n", "d/cache.tmp": "ignored" });
    await store.snapshot();
    await store.restore(r1.revId);
    expect(exists("d/new.txt")).toBe(false);
    expect(read("d/cache.tmp")).toBe("ignored");
  });

  it("round-trips symlinks (as links, dangling and directory ones too) and the executable bit", async () => {
    write({ "target.txt": "t", "sub/inner.txt": "i", "run.sh": "#!/bin/sh\necho hi\n", "ro.txt": "r" });
    fs.chmodSync(path.join(ws, "run.sh"), 0o755);
    fs.chmodSync(path.join(ws, "ro.txt"), 0o600);
    fs.symlinkSync("target.txt", path.join(ws, "link"));
    fs.symlinkSync("does/not/exist", path.join(ws, "dangling"));
    fs.symlinkSync("sub", path.join(ws, "dirlink"));
    fs.symlinkSync("/etc/hostname", path.join(ws, "outside"));
    const r1 = await store.snapshot();
    const files = store.files(r1.revId);
    expect(files.get("link")).toMatchObject({ kind: "symlink", size: "target.txt".length });
    expect(files.get("dirlink")?.kind).toBe("symlink");
    expect(files.has("dirlink/inner.txt")).toBe(false); // not followed
    expect(files.get("run.sh")?.mode).toBe(0o755);
    const before = tree();

    fs.rmSync(path.join(ws, "link"));
    fs.writeFileSync(path.join(ws, "link"), "now a file");
    fs.rmSync(path.join(ws, "dangling"));
    fs.rmSync(path.join(ws, "dirlink"));
    fs.symlinkSync("target.txt", path.join(ws, "dirlink"));
    fs.chmodSync(path.join(ws, "run.sh"), 0o644);
    fs.chmodSync(path.join(ws, "ro.txt"), 0o644);
    const r2 = await store.snapshot();
    expect(r2.changed).toEqual({ created: [], modified: ["dirlink", "link", "ro.txt", "run.sh"], deleted: ["dangling"] });

    await store.restore(r1.revId);
    expect(tree()).toEqual(before);
    expect(fs.readlinkSync(path.join(ws, "dangling"))).toBe("does/not/exist");
    expect(fs.readlinkSync(path.join(ws, "outside"))).toBe("/etc/hostname");
    expect(fs.statSync(path.join(ws, "run.sh")).mode & 0o777).toBe(0o755);
    expect(read("/etc/hostname", "/")).toBe(read("outside")); // the link still points where it did
  });

  it("turns a file into a directory and back", async () => {
    write({ x: "file" });
    const r1 = await store.snapshot();
    fs.rmSync(path.join(ws, "x"));
    write({ "x/inner.txt": "now a dir" });
    const r2 = await store.snapshot();
    await store.restore(r1.revId);
    expect(read("x")).toBe("file");
    await store.restore(r2.revId);
    expect(read("x/inner.txt")).toBe("now a dir");
  });

  it("round-trips binary content byte for byte", async () => {
    const bin = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256));
    write({ "img.bin": bin });
    const r1 = await store.snapshot();
    write({ "img.bin": Buffer.from("replaced") });
    await store.snapshot();
    await store.restore(r1.revId);
    expect(fs.readFileSync(path.join(ws, "img.bin")).equals(bin)).toBe(true);
  });

  it("dry run reports without touching anything", async () => {
    write({ "a.txt": "1" });
    const r1 = await store.snapshot();
    write({ "a.txt": "2", "b.txt": "b" });
    const r2 = await store.snapshot();
    const snap = tree();
    const dry = await store.restore(r1.revId, { dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, modified: ["a.txt"], deleted: ["b.txt"], created: [] });
    expect(tree()).toEqual(snap);
    expect(store.head()?.revId).toBe(r2.revId);
  });

  it("accepts a unique id prefix and refuses an unknown revision", async () => {
    write({ "a.txt": "1" });
    const r1 = await store.snapshot();
    expect(store.resolve(r1.revId.slice(0, 10))).toBe(r1.revId);
    await expectRevisionError(store.restore("0".repeat(64)), "REV_NOT_FOUND", "0".repeat(64));
  });

  it("refuses to write through a symlinked directory that is not part of the revision", async () => {
    write({ ".gitignore": "d\n", "keep.txt": "k" });
    fs.rmSync(path.join(ws, ".gitignore"));
    write({ "d/f.txt": "f" });
    const r1 = await store.snapshot();
    fs.rmSync(path.join(ws, "d"), { recursive: true });
    const outside = path.join(tmp, "outside");
    fs.mkdirSync(outside);
    write({ ".gitignore": "d\n" });
    fs.symlinkSync(outside, path.join(ws, "d")); // ignored, so restore must not remove it
    write({ "keep.txt": "changed" });
    await store.snapshot();
    const snap = tree();
    await expectRevisionError(store.restore(r1.revId), "REV_RESTORE_CONFLICT", "d/f.txt", "symlink", "Nothing was changed");
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(tree()).toEqual(snap);
  });

  it("refuses, changing nothing, to put a file where a directory still holds ignored files", async () => {
    write({ ".gitignore": "*.tmp\n", x: "file", "other.txt": "1" });
    const r1 = await store.snapshot();
    fs.rmSync(path.join(ws, "x"));
    write({ "x/a.txt": "a", "x/sub/cache.tmp": "ignored", "other.txt": "2" });
    await store.snapshot();
    const snap = tree();
    await expectRevisionError(store.restore(r1.revId), "REV_RESTORE_CONFLICT", "x/sub/cache.tmp", "Nothing was changed");
    expect(tree()).toEqual(snap);
    // Once the ignored file is gone the same restore goes through, empty subdirectories included.
    fs.rmSync(path.join(ws, "x/sub/cache.tmp"));
    await store.restore(r1.revId);
    expect(read("x")).toBe("file");
  });
});

describe("status", () => {
  it("lists edits made outside the run since the last revision, and is clean after a snapshot", async () => {
    expect(await store.status()).toMatchObject({ baseRevId: null });
    write({ "a.txt": "a", "b.txt": "b", "c.txt": "c" });
    const r1 = await store.snapshot();
    expect(await store.status()).toEqual({ baseRevId: r1.revId, clean: true, created: [], modified: [], deleted: [] });
    write({ "a.txt": "A" });
    fs.rmSync(path.join(ws, "b.txt"));
    sh("echo foreign > d.txt");
    fs.chmodSync(path.join(ws, "c.txt"), 0o755);
    expect(await store.status()).toEqual({
      baseRevId: r1.revId,
      clean: false,
      created: ["d.txt"],
      modified: ["a.txt", "c.txt"],
      deleted: ["b.txt"],
    });
    await store.snapshot();
    expect((await store.status()).clean).toBe(true);
  });

  it("sees a head moved by another store over the same workspace (another process)", async () => {
    write({ "a.txt": "1" });
    const r1 = await store.snapshot();
    write({ "a.txt": "2" });
    const r2 = await store.snapshot();
    const other = new RevisionStore(db, ws);
    await other.restore(r1.revId);
    expect(await store.status()).toMatchObject({ baseRevId: r1.revId, clean: true });
    expect((await store.snapshot()).revId).toBe(r1.revId);
    expect(r2.revId).not.toBe(r1.revId);
  });
});

describe("diff", () => {
  it("prints a git-style unified diff and per-file stats", async () => {
    write({ "src/a.ts": "one\ntwo\nthree\n", "gone.txt": "bye\n", "same/moved.txt": "moving content\n", "img.bin": Buffer.from([0, 1, 2]) });
    const r1 = await store.snapshot();
    write({ "src/a.ts": "one\n2\nthree\nfour\n", "new.txt": "hello\n", "dest/moved.txt": "moving content\n", "img.bin": Buffer.from([0, 9]) });
    fs.rmSync(path.join(ws, "gone.txt"));
    fs.rmSync(path.join(ws, "same"), { recursive: true });
    fs.chmodSync(path.join(ws, "new.txt"), 0o755);
    const r2 = await store.snapshot();

    const text = await store.diff(r1.revId, r2.revId);
    expect(text).toContain("diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,3 +1,4 @@\n one\n-two\n+2\n three\n+four\n");
    expect(text).toContain("diff --git a/new.txt b/new.txt\nnew file mode 100755\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+hello\n");
    expect(text).toContain("diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n");
    expect(text).toContain("diff --git a/same/moved.txt b/dest/moved.txt\nrename from same/moved.txt\nrename to dest/moved.txt\n");
    expect(text).toContain("Binary files a/img.bin and b/img.bin differ");

    const stat = await store.diff(r1.revId, r2.revId, { stat: true });
    expect(stat).toEqual([
      { path: "dest/moved.txt", oldPath: "same/moved.txt", status: "renamed", added: 0, removed: 0, binary: false, large: false },
      { path: "gone.txt", status: "deleted", added: 0, removed: 1, binary: false, large: false, oldMode: "100644" },
      { path: "img.bin", status: "modified", added: 0, removed: 0, binary: true, large: false },
      { path: "new.txt", status: "created", added: 1, removed: 0, binary: false, large: false, newMode: "100755" },
      { path: "src/a.ts", status: "modified", added: 2, removed: 1, binary: false, large: false },
    ]);
    expect(formatStat(stat)).toContain("5 files changed, 3 insertions(+), 2 deletions(-)");
    expect(await store.diff(r2.revId, r2.revId)).toBe("");
  });
});

describe("afterSnapshot", () => {
  it("is awaited after every snapshot, a reused revision included, and its failure fails the snapshot", async () => {
    const seen: Array<{ revId: string; reused: boolean; stored: boolean }> = [];
    let fail = false;
    const s = new RevisionStore(db, ws, {
      afterSnapshot: async (r) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        // The revision is stored before the hook runs: it can be read (and pushed) from there.
        seen.push({ revId: r.revId, reused: r.reused, stored: s.info(r.revId) !== null });
        if (fail) throw new Error("replica unreachable");
      },
    });
    write({ "a.txt": "1" });
    const r1 = await s.snapshot();
    expect(seen).toEqual([{ revId: r1.revId, reused: false, stored: true }]);
    await s.snapshot();
    expect(seen[1]).toEqual({ revId: r1.revId, reused: true, stored: true });
    fail = true;
    write({ "a.txt": "2" });
    await expect(s.snapshot()).rejects.toThrow("replica unreachable");
    expect(seen).toHaveLength(3);
    // The revision stays recorded locally; the next snapshot offers it to the hook again.
    expect(s.head()?.revId).toBe(seen[2]!.revId);
    fail = false;
    expect((await s.snapshot()).revId).toBe(seen[2]!.revId);
    expect(seen).toHaveLength(4);
  });
});

describe("copyTo", () => {
  it("materializes a revision in a new directory, on this state DB or another one", async () => {
    write({ "a.txt": "1", "s/run.sh": "#!/bin/sh\n" });
    fs.chmodSync(path.join(ws, "s/run.sh"), 0o755);
    fs.symlinkSync("a.txt", path.join(ws, "l"));
    const r1 = await store.snapshot();
    const expected = tree();
    write({ "a.txt": "2" });
    await store.snapshot();

    const shared = path.join(tmp, "fork-shared");
    expect(await store.copyTo(r1.revId, shared)).toMatchObject({ revId: r1.revId, files: 3 });
    expect(tree(shared)).toEqual(expected);
    expect(await new RevisionStore(db, shared).status()).toMatchObject({ baseRevId: r1.revId, clean: true });

    const own = path.join(tmp, "fork-own");
    const db2 = openStateDb(path.join(own, ".ledgerloop", "state.db"));
    try {
      const into = new RevisionStore(db2, own);
      await store.copyTo(r1.revId, own, { into });
      expect(tree(own)).toEqual(expected);
      expect(await into.status()).toMatchObject({ baseRevId: r1.revId, clean: true });
      expect(into.stats().revisions).toBe(1);
      // The copy stands on its own: its revision restores from its own DB.
      write({ "a.txt": "changed in fork" }, own);
      await into.snapshot();
      await into.restore(r1.revId);
      expect(read("a.txt", own)).toBe("1");
    } finally {
      db2.close();
    }

    await expectRevisionError(store.copyTo(r1.revId, ws), "REV_TARGET_NOT_EMPTY", ws);
  });
});

describe("exportObjects / importObjects", () => {
  it("copies a revision object by object, refusing a revision whose objects are missing or damaged", async () => {
    write({ "a.txt": "a\n".repeat(100), "d/b.txt": "b\n", "d/e/c.txt": "c\n" });
    const r = await store.snapshot({ label: "x" });
    const objs = store.exportObjects(r.revId);
    expect([...objs.trees.keys()]).toHaveLength(3);
    expect(objs.blobs).toEqual([...new Set([...r.files.values()].map((e) => e.hash))].sort());
    // A tree the other side has is neither returned nor walked into: skipping d/ leaves the root
    // alone, skipping d/e/ the root and d/.
    const subtrees = [...objs.trees.keys()].filter((h) => h !== r.revId);
    const left = subtrees.map((h) => store.exportObjects(r.revId, new Set([h])).trees.size);
    expect([...left].sort()).toEqual([1, 2]);
    const dTree = subtrees[left.indexOf(1)]!;

    const other = path.join(tmp, "other");
    const db2 = openStateDb(path.join(other, ".ledgerloop", "state.db"));
    try {
      const into = new RevisionStore(db2, other);
      await expectRevisionError(() => into.importObjects(objs.info, objs.trees, "from a test"), "REV_BLOB_MISSING", "was not copied");
      expect(into.info(r.revId)).toBeNull();
      const blobs = objs.blobs.map((h) => store.storedBlob(h));
      const damaged = { ...blobs[0]!, data: Buffer.concat([blobs[0]!.data, Buffer.from("x")]) };
      await expectRevisionError(
        () => into.importBlobs([damaged, ...blobs.slice(1)], "from a test"),
        "REV_BLOB_CORRUPT",
        `blob ${damaged.hash} (from a test) is corrupt`,
      );
      expect(objs.blobs.filter((h) => into.hasBlob(h))).toEqual([]);
      expect(into.importBlobs(blobs).count).toBe(blobs.length);
      const bad = new Map(objs.trees);
      bad.set(dTree, Buffer.concat([bad.get(dTree)!, Buffer.from([0])]));
      await expectRevisionError(() => into.importObjects(objs.info, bad), "REV_TREE_CORRUPT", dTree);
      into.importObjects(objs.info, objs.trees);
      expect(into.info(r.revId)).toEqual(store.info(r.revId));
      await into.restore(r.revId);
      expect(tree(other)).toEqual(tree());
    } finally {
      db2.close();
    }
  });
});

describe("importBlobs", () => {
  it("gives a blob row whose file is gone its file back", async () => {
    const s = new RevisionStore(db, ws, { inlineBlobBytes: 100 });
    write({ "big.txt": "x".repeat(50) + "y".repeat(5000).replace(/y/g, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))) });
    const r = await s.snapshot();
    const h = r.files.get("big.txt")!.hash;
    const copy = s.storedBlob(h);
    const file = path.join(ws, ".ledgerloop", "blobs", h.slice(0, 2), h);
    expect(fs.existsSync(file)).toBe(true);
    fs.rmSync(file);
    expect(s.hasBlob(h)).toBe(false);
    s.importBlobs([copy]);
    expect(s.hasBlob(h)).toBe(true);
    expect(s.readFile(r.revId, "big.txt").toString()).toBe(read("big.txt"));
  });
});

describe("large files", () => {
  it("records files over the limit by stat only, shows their changes, and never deletes or overwrites them", async () => {
    const s = new RevisionStore(db, ws, { largeFileBytes: 1000 });
    write({ "huge.dat": "x".repeat(2000), "a.txt": "a" });
    const r1 = await s.snapshot();
    expect(r1.stats.large).toBe(1);
    expect(s.stats().blobs.count).toBe(1); // a.txt only
    expect(s.files(r1.revId).get("huge.dat")).toMatchObject({ kind: "large", size: 2000 });
    await expectRevisionError(() => s.readFile(r1.revId, "huge.dat"), "REV_FILE_NOT_FOUND", "stat only");

    write({ "huge.dat": "y".repeat(3000) });
    const r2 = await s.snapshot();
    expect(r2.changed.modified).toEqual(["huge.dat"]);
    expect(await s.diff(r1.revId, r2.revId, { stat: true })).toEqual([
      { path: "huge.dat", status: "modified", added: 0, removed: 0, binary: false, large: true },
    ]);
    expect(await s.diff(r1.revId, r2.revId)).toContain("Large file");

    const back = await s.restore(r1.revId);
    expect(back.skipped).toEqual([{ path: "huge.dat", reason: "large" }]);
    expect(read("huge.dat")).toBe("y".repeat(3000));
  });
});

describe("damaged store", () => {
  it("names the hash of a missing blob and changes nothing", async () => {
    write({ "a.txt": "version one\n", "b.txt": "b1\n" });
    const r1 = await store.snapshot();
    write({ "a.txt": "version two\n", "b.txt": "b2\n" });
    await store.snapshot();
    const hash = store.files(r1.revId).get("b.txt")!.hash;
    db.prepare("DELETE FROM ll_rev_blobs WHERE hash = ?").run(hash);
    const snap = tree();
    await expectRevisionError(store.restore(r1.revId), "REV_BLOB_MISSING", hash, "b.txt");
    expect(tree()).toEqual(snap); // a.txt was not rewritten either: blobs are checked first
    await expectRevisionError(store.diff(r1.revId, store.head()!.revId), "REV_BLOB_MISSING", hash);
  });

  it("names the hash of a corrupt blob (inline or file)", async () => {
    const s = new RevisionStore(db, ws, { inlineBlobBytes: 200 });
    write({ "a.txt": "alpha ".repeat(10), "big.txt": Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 13) % 256)) });
    const r1 = await s.snapshot();
    write({ "a.txt": "beta", "big.txt": "small now" });
    await s.snapshot();
    const a = s.files(r1.revId).get("a.txt")!.hash;
    const big = s.files(r1.revId).get("big.txt")!.hash;
    db.prepare("UPDATE ll_rev_blobs SET data = ? WHERE hash = ?").run(Buffer.from("garbage"), a);
    await expectRevisionError(s.restore(r1.revId), "REV_BLOB_CORRUPT", a);
    const file = path.join(ws, ".ledgerloop", "blobs", big.slice(0, 2), big);
    db.prepare("DELETE FROM ll_rev_blobs WHERE hash = ?").run(a);
    fs.writeFileSync(file, "tampered");
    await expectRevisionError(() => s.readFile(r1.revId, "big.txt"), "REV_BLOB_CORRUPT", big);
    fs.rmSync(file);
    await expectRevisionError(() => s.readFile(r1.revId, "big.txt"), "REV_BLOB_MISSING", big, file);
  });

  it("names a missing tree object", async () => {
    write({ "d/a.txt": "a" });
    const r1 = await store.snapshot();
    db.prepare("DELETE FROM ll_rev_trees WHERE hash <> ?").run(r1.revId);
    await expectRevisionError(() => store.files(r1.revId), "REV_TREE_MISSING");
  });
});

describe("the user's ledgerloop.config.json", () => {
  it("is recorded and restored like any workspace file (tools may not write it; a rewind may)", async () => {
    write({ "ledgerloop.config.json": '{"sandbox":{"network":false}}\n', "a.txt": "a\n" });
    const first = await store.snapshot();
    await settle();
    write({ "ledgerloop.config.json": '{"sandbox":{"network":true}}\n' });
    await store.snapshot();
    const r = await store.restore(first.revId);
    expect(r.modified).toEqual(["ledgerloop.config.json"]);
    expect(read("ledgerloop.config.json")).toBe('{"sandbox":{"network":false}}\n');
  });
});
