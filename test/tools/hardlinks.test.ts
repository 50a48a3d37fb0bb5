import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Database } from "../../src/sqlite/driver.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStateDb } from "../../src/ledger/state-db.js";
import { createLexicalSearcher } from "../../src/retrieval/lexical.js";
import { createLocalSandbox } from "../../src/sandbox/executor.js";
import { replaceFile } from "../../src/workspace/replace-file.js";
import { RevisionStore } from "../../src/workspace/revisions.js";
import { editFileTool } from "../../src/agent/tools/edit-file.js";
import type { ToolContext, ToolResult } from "../../src/agent/tools/index.js";
import { writeFileTool } from "../../src/agent/tools/write-file.js";

// A workspace file hard-linked to a file outside (pnpm's store does this for every package file):
// whatever writes the workspace name must leave the outside name's bytes alone.

let tmp: string;
let ws: string;
let store: string;
let ctx: ToolContext;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-hardlink-")));
  ws = path.join(tmp, "ws");
  store = path.join(tmp, "store");
  fs.mkdirSync(path.join(ws, "node_modules", "pkg"), { recursive: true });
  fs.mkdirSync(store);
  fs.writeFileSync(path.join(store, "index.js"), "module.exports = 1;\n", { mode: 0o755 });
  fs.chmodSync(path.join(store, "index.js"), 0o755);
  fs.linkSync(path.join(store, "index.js"), path.join(ws, "node_modules", "pkg", "index.js"));
  ctx = {
    workspace: ws,
    sandbox: createLocalSandbox(),
    searcher: createLexicalSearcher(ws),
    commandTimeoutMs: 10_000,
    testTimeoutMs: 30_000,
    outputCapBytes: 16 * 1024,
  };
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

const REL = "node_modules/pkg/index.js";
const outsideBytes = () => fs.readFileSync(path.join(store, "index.js"));
const inside = () => fs.readFileSync(path.join(ws, REL), "utf8");
const ORIGINAL = Buffer.from("module.exports = 1;\n");

function expectOk(r: ToolResult): void {
  expect(r.status, r.output).toBe("ok");
}

/** The workspace name is now its own file, mode kept, and the outside name is untouched. */
function expectUnlinked(): void {
  expect(outsideBytes().equals(ORIGINAL)).toBe(true);
  const st = fs.statSync(path.join(ws, REL));
  expect(st.nlink).toBe(1);
  expect(st.ino).not.toBe(fs.statSync(path.join(store, "index.js")).ino);
  expect(st.mode & 0o777).toBe(0o755);
  expect(fs.statSync(path.join(store, "index.js")).nlink).toBe(1);
}

describe("a workspace file hard-linked to a file outside", () => {
  it("write_file replaces the workspace name and leaves the outside file byte-identical", async () => {
    expectOk(await writeFileTool.run({ path: REL, content: "module.exports = 2;\n" }, ctx));
    expect(inside()).toBe("module.exports = 2;\n");
    expectUnlinked();
  });

  it("edit_file replaces the workspace name and leaves the outside file byte-identical", async () => {
    expectOk(await editFileTool.run({ path: REL, oldText: "= 1", newText: "= 2" }, ctx));
    expect(inside()).toBe("module.exports = 2;\n");
    expectUnlinked();
  });

  it("edit_file's crash guard still recognises an edit already applied", async () => {
    const args = { path: REL, oldText: "= 1", newText: "= 2" };
    const guard = await editFileTool.prepare!(args, ctx);
    expect(guard).not.toBeNull();
    expectOk(await editFileTool.run(args, { ...ctx, guard }));
    const again = await editFileTool.run(args, { ...ctx, guard });
    expect(again.status).toBe("ok");
    expect(again.output).toContain("already applied");
    expect(inside()).toBe("module.exports = 2;\n");
    expectUnlinked();
  });

  it("a symlink inside the workspace to the linked file stays a symlink; its target is replaced", async () => {
    fs.symlinkSync("node_modules/pkg/index.js", path.join(ws, "alias.js"));
    expectOk(await writeFileTool.run({ path: "alias.js", content: "x\n" }, ctx));
    expect(fs.lstatSync(path.join(ws, "alias.js")).isSymbolicLink()).toBe(true);
    expect(inside()).toBe("x\n");
    expectUnlinked();
  });

  it("a rewind restore replaces the workspace name and leaves the outside file byte-identical (held already: restore renames a temp file)", async () => {
    const db: Database = openStateDb(path.join(ws, ".ledgerloop", "state.db"));
    try {
      const revs = new RevisionStore(db, ws);
      // Snapshot a different content, then put the hard link back in place and restore over it.
      fs.rmSync(path.join(ws, REL));
      fs.writeFileSync(path.join(ws, REL), "restored\n", { mode: 0o755 });
      const r = await revs.snapshot();
      fs.rmSync(path.join(ws, REL));
      fs.linkSync(path.join(store, "index.js"), path.join(ws, REL));
      await revs.restore(r.revId);
      expect(inside()).toBe("restored\n");
      expectUnlinked();
    } finally {
      db.close();
    }
  });
});

describe("replaceFile", () => {
  it("creates a missing file and its directories with the default mode", async () => {
    await replaceFile(ws, "new/dir/a.txt", "hi");
    expect(fs.readFileSync(path.join(ws, "new/dir/a.txt"), "utf8")).toBe("hi");
    expect(fs.statSync(path.join(ws, "new/dir/a.txt")).mode & 0o777).toBe(0o666 & ~process.umask());
  });

  it("creates the target of a dangling symlink instead of replacing the link", async () => {
    fs.symlinkSync("later.txt", path.join(ws, "link.txt"));
    await replaceFile(ws, "link.txt", "made");
    expect(fs.lstatSync(path.join(ws, "link.txt")).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(path.join(ws, "later.txt"), "utf8")).toBe("made");
  });

  it("leaves no temp file behind when the write fails", async () => {
    fs.mkdirSync(path.join(ws, "d"));
    await expect(replaceFile(ws, "d", "x")).rejects.toMatchObject({ code: "EISDIR" });
    expect(fs.readdirSync(ws).filter((n) => n.includes(".ll-write-"))).toEqual([]);
  });
});
