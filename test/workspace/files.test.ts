import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PathEscapeError } from "../../src/errors.js";
import { diffSnapshots, hashFile, statSnapshot, walkFiles } from "../../src/workspace/files.js";

let tmp: string;
let ws: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-files-")));
  ws = path.join(tmp, "ws");
  fs.mkdirSync(ws);
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Writes `content` at each workspace-relative path, creating directories as needed. */
function write(files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(ws, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
  }
}

describe("walkFiles", () => {
  it("lists files sorted as full paths, never .git/ or .ledgerloop/", async () => {
    write({
      "b.txt": "",
      "a/x.ts": "",
      "a-b/y.ts": "",
      ".git/HEAD": "",
      ".git/objects/ab/cd": "",
      "vendor/.git/HEAD": "",
      "vendor/lib.js": "",
      ".ledgerloop/ledger.db": "",
      ".gitignore": "",
    });
    const { files, truncated, skippedIgnored } = await walkFiles(ws);
    expect(files).toEqual([".gitignore", "a-b/y.ts", "a/x.ts", "b.txt", "vendor/lib.js"]);
    expect(files).toEqual([...files].sort());
    expect({ truncated, skippedIgnored }).toEqual({ truncated: false, skippedIgnored: 0 });
  });

  it("applies nested .gitignore rules relative to their directory", async () => {
    write({
      "sub/.gitignore": "*.log\n",
      "sub/a.log": "",
      "sub/deeper/c.log": "",
      "sub/keep.txt": "",
      "b.log": "",
    });
    const { files } = await walkFiles(ws);
    expect(files).toEqual(["b.log", "sub/.gitignore", "sub/keep.txt"]);
  });

  it("anchors a nested rule with a slash to its own directory", async () => {
    write({ "sub/.gitignore": "/gen\n", "sub/gen/x.ts": "", "sub/other/gen/y.ts": "", "gen/z.ts": "" });
    expect((await walkFiles(ws)).files).toEqual(["gen/z.ts", "sub/.gitignore", "sub/other/gen/y.ts"]);
  });

  it("build/ at the root ignores the whole directory without entering it, counting it once", async () => {
    write({ ".gitignore": "build/\nnode_modules\n", "build/a.js": "", "build/deep/b.js": "", "src/build.ts": "" });
    write({ "node_modules/x/index.js": "", "node_modules/y/index.js": "" });
    // A file named "build" is not matched by the directory-only rule.
    write({ "docs/build": "" });
    const result = await walkFiles(ws);
    expect(result.files).toEqual([".gitignore", "docs/build", "src/build.ts"]);
    expect(result.skippedIgnored).toBe(2);
  });

  it("honours negation, and a deeper file overrides a shallower one", async () => {
    write({
      ".gitignore": "*.log\n!keep.log\n",
      "a.log": "",
      "keep.log": "",
      "logs/keep.log": "",
      "pkg/.gitignore": "!*.log\n",
      "pkg/wanted.log": "",
    });
    expect((await walkFiles(ws)).files).toEqual([".gitignore", "keep.log", "logs/keep.log", "pkg/.gitignore", "pkg/wanted.log"]);
  });

  it("cannot re-include a file whose parent directory is excluded (as git)", async () => {
    write({ ".gitignore": "out/\n!out/keep.txt\n", "out/keep.txt": "" });
    expect((await walkFiles(ws)).files).toEqual([".gitignore"]);
  });

  it("honours .git/info/exclude, below any .gitignore in precedence", async () => {
    write({ ".git/info/exclude": "*.tmp\nlocal/\n", ".gitignore": "!wanted.tmp\n", "a.tmp": "", "wanted.tmp": "", "local/x": "" });
    expect((await walkFiles(ws)).files).toEqual([".gitignore", "wanted.tmp"]);
  });

  it("includeIgnored lists ignored files but still never .git/ or .ledgerloop/", async () => {
    write({ ".gitignore": "build/\n", "build/a.js": "", ".git/HEAD": "", ".ledgerloop/x": "" });
    expect(await walkFiles(ws, { includeIgnored: true })).toEqual({
      files: [".gitignore", "build/a.js"],
      truncated: false,
      skippedIgnored: 0,
    });
  });

  it("glob without a slash matches the name at any depth; with one, the whole path", async () => {
    write({ "a.ts": "", "a.js": "", "src/b.ts": "", "src/lib/c.ts": "", "test/d.ts": "", ".hidden/e.ts": "" });
    expect((await walkFiles(ws, { glob: "*.ts" })).files).toEqual([".hidden/e.ts", "a.ts", "src/b.ts", "src/lib/c.ts", "test/d.ts"]);
    expect((await walkFiles(ws, { glob: "src/**/*.ts" })).files).toEqual(["src/b.ts", "src/lib/c.ts"]);
    expect((await walkFiles(ws, { glob: "src/*.ts" })).files).toEqual(["src/b.ts"]);
  });

  it("under lists one directory, keeping paths workspace-relative and ancestors' rules", async () => {
    write({ ".gitignore": "*.gen.ts\n", "src/a.ts": "", "src/a.gen.ts": "", "src/lib/b.ts": "", "test/c.ts": "" });
    expect((await walkFiles(ws, { under: "src" })).files).toEqual(["src/a.ts", "src/lib/b.ts"]);
    expect((await walkFiles(ws, { under: "./src/lib/" })).files).toEqual(["src/lib/b.ts"]);
    expect((await walkFiles(ws, { under: "src", glob: "lib/*.ts" })).files).toEqual([]);
  });

  it("under an ignored directory, .git or outside the workspace", async () => {
    write({ ".gitignore": "node_modules/\n", "node_modules/x/index.js": "", ".git/HEAD": "" });
    expect(await walkFiles(ws, { under: "node_modules/x" })).toEqual({ files: [], truncated: false, skippedIgnored: 1 });
    expect((await walkFiles(ws, { under: "node_modules/x", includeIgnored: true })).files).toEqual(["node_modules/x/index.js"]);
    expect((await walkFiles(ws, { under: ".git" })).files).toEqual([]);
    await expect(walkFiles(ws, { under: "../" })).rejects.toBeInstanceOf(PathEscapeError);
    await expect(walkFiles(ws, { under: "missing" })).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("limit returns the first files in order and reports truncation", async () => {
    write({ "a.ts": "", "b/c.ts": "", "b/d.ts": "", "e.ts": "" });
    expect(await walkFiles(ws, { limit: 2 })).toEqual({ files: ["a.ts", "b/c.ts"], truncated: true, skippedIgnored: 0 });
    expect(await walkFiles(ws, { limit: 4 })).toMatchObject({ truncated: false });
    expect(await walkFiles(ws, { limit: 3, glob: "*.ts" })).toMatchObject({ files: ["a.ts", "b/c.ts", "b/d.ts"], truncated: true });
  });

  it("lists symlinks to files inside, never follows symlinked directories or links out", async () => {
    write({ "src/a.ts": "", "outside-target.txt": "" });
    fs.mkdirSync(path.join(tmp, "outside"));
    fs.writeFileSync(path.join(tmp, "outside", "secret.txt"), "");
    fs.symlinkSync("src/a.ts", path.join(ws, "a-link.ts"));
    fs.symlinkSync("src", path.join(ws, "src-link"));
    fs.symlinkSync(path.join(tmp, "outside"), path.join(ws, "out-dir"));
    fs.symlinkSync(path.join(tmp, "outside", "secret.txt"), path.join(ws, "secret-link"));
    fs.symlinkSync("missing", path.join(ws, "dangling"));
    expect((await walkFiles(ws)).files).toEqual(["a-link.ts", "outside-target.txt", "src/a.ts"]);
  });
});

describe("statSnapshot and diffSnapshots", () => {
  it("detect created, modified (same size, bumped mtime) and deleted files", async () => {
    write({ ".gitignore": "build/\n", "keep.ts": "same", "edit.ts": "aaaa", "gone.ts": "x", "build/out.js": "1" });
    const before = await statSnapshot(ws);
    expect([...before.keys()]).toEqual([".gitignore", "edit.ts", "gone.ts", "keep.ts"]);

    fs.writeFileSync(path.join(ws, "edit.ts"), "bbbb");
    // Same size, so only the mtime can tell; push it well past any timestamp granularity.
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(ws, "edit.ts"), later, later);
    fs.rmSync(path.join(ws, "gone.ts"));
    write({ "new/file.ts": "n", "build/out2.js": "ignored" });

    const after = await statSnapshot(ws);
    expect(await diffSnapshots(ws, before, after)).toEqual({
      created: ["new/file.ts"],
      modified: ["edit.ts"],
      deleted: ["gone.ts"],
    });
  });

  it("size and mode changes are modifications even with the mtime restored", async () => {
    write({ "grow.ts": "a", "run.sh": "echo" });
    const before = await statSnapshot(ws);
    const growStat = fs.statSync(path.join(ws, "grow.ts"));
    fs.writeFileSync(path.join(ws, "grow.ts"), "abc");
    fs.utimesSync(path.join(ws, "grow.ts"), growStat.atime, growStat.mtime);
    fs.chmodSync(path.join(ws, "run.sh"), 0o755);
    const after = await statSnapshot(ws);
    expect((await diffSnapshots(ws, before, after)).modified).toEqual(["grow.ts", "run.sh"]);
  });

  it("with hashesBefore, an mtime-only change with identical content is not a modification", async () => {
    write({ "touched.ts": "same", "edited.ts": "aaaa" });
    const before = await statSnapshot(ws);
    const hashes = new Map([
      ["touched.ts", await hashFile(ws, "touched.ts")],
      ["edited.ts", await hashFile(ws, "edited.ts")],
    ]);
    fs.writeFileSync(path.join(ws, "edited.ts"), "bbbb");
    const later = new Date(Date.now() + 60_000);
    for (const rel of ["touched.ts", "edited.ts"]) fs.utimesSync(path.join(ws, rel), later, later);
    const after = await statSnapshot(ws);
    expect((await diffSnapshots(ws, before, after)).modified).toEqual(["edited.ts", "touched.ts"]);
    expect((await diffSnapshots(ws, before, after, hashes)).modified).toEqual(["edited.ts"]);
  });

  it("an unchanged tree diffs to nothing", async () => {
    write({ "a.ts": "a", "b/c.ts": "c" });
    const before = await statSnapshot(ws);
    expect(await diffSnapshots(ws, before, await statSnapshot(ws))).toEqual({ created: [], modified: [], deleted: [] });
  });
});
