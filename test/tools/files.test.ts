import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PathEscapeError } from "../../src/errors.js";
import { createLexicalSearcher } from "../../src/retrieval/lexical.js";
import { createLocalSandbox } from "../../src/sandbox/executor.js";
import { editFileTool } from "../../src/agent/tools/edit-file.js";
import type { ToolContext, ToolResult } from "../../src/agent/tools/index.js";
import { listFilesTool } from "../../src/agent/tools/list-files.js";
import { readFileTool } from "../../src/agent/tools/read-file.js";
import { searchCodeTool } from "../../src/agent/tools/search-code.js";
import { writeFileTool } from "../../src/agent/tools/write-file.js";

let tmp: string;
let ws: string;
let outside: string;
let ctx: ToolContext;

beforeEach(() => {
  // Realpath'd: the runtime hands tools a realpath'd workspace (macOS /var → /private/var).
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-tools-")));
  ws = path.join(tmp, "ws");
  outside = path.join(tmp, "outside");
  fs.mkdirSync(ws);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, "secret.txt"), "top secret\n");
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

function write(files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(ws, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
  }
}

const read = (rel: string) => fs.readFileSync(path.join(ws, rel), "utf8");

function expectError(r: ToolResult, ...fragments: string[]): void {
  expect(r.status, r.output).toBe("error");
  for (const f of fragments) expect(r.output).toContain(f);
}

function expectOk(r: ToolResult): string {
  expect(r.status, r.output).toBe("ok");
  return r.output;
}

describe("read_file", () => {
  it("numbers the lines and names the range", async () => {
    write({ "src/a.ts": "const a = 1;\nconst b = 2;\n\nexport { a, b };\n" });
    const out = expectOk(await readFileTool.run({ path: "src/a.ts" }, ctx));
    expect(out).toBe("src/a.ts (lines 1-4 of 4)\n1| const a = 1;\n2| const b = 2;\n3| \n4| export { a, b };");
  });

  it("pads line numbers to the widest one shown", async () => {
    write({ "a.txt": Array.from({ length: 12 }, (_, i) => `l${i + 1}`).join("\n") });
    const out = expectOk(await readFileTool.run({ path: "a.txt", startLine: 8, endLine: 11 }, ctx));
    expect(out).toBe("a.txt (lines 8-11 of 12)\n 8| l8\n 9| l9\n10| l10\n11| l11");
  });

  it("counts a last line without a trailing newline", async () => {
    write({ "a.txt": "one\ntwo" });
    expect(expectOk(await readFileTool.run({ path: "a.txt" }, ctx))).toBe("a.txt (lines 1-2 of 2)\n1| one\n2| two");
  });

  it("returns a range, clamping endLine to the end of the file", async () => {
    write({ "a.txt": "1\n2\n3\n4\n5\n" });
    expect(expectOk(await readFileTool.run({ path: "a.txt", startLine: 2, endLine: 3 }, ctx))).toBe("a.txt (lines 2-3 of 5)\n2| 2\n3| 3");
    expect(expectOk(await readFileTool.run({ path: "a.txt", startLine: 4, endLine: 99 }, ctx))).toBe("a.txt (lines 4-5 of 5)\n4| 4\n5| 5");
  });

  it("says how to continue when it stops at 2000 lines", async () => {
    write({ "big.txt": Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`).join("\n") });
    const out = expectOk(await readFileTool.run({ path: "big.txt" }, ctx));
    expect(out.startsWith("big.txt (lines 1-2000 of 2500)\n")).toBe(true);
    expect(out).toContain("2000| line 2000");
    expect(out).not.toContain("line 2001");
    expect(out.endsWith("[500 more lines; pass startLine: 2001 to continue]")).toBe(true);
    const rest = expectOk(await readFileTool.run({ path: "big.txt", startLine: 2001 }, ctx));
    expect(rest.startsWith("big.txt (lines 2001-2500 of 2500)\n2001| line 2001")).toBe(true);
    expect(rest).not.toContain("more lines");
  });

  it("refuses a startLine past the end", async () => {
    write({ "a.txt": "1\n2\n3\n" });
    const r = await readFileTool.run({ path: "a.txt", startLine: 4 }, ctx);
    expectError(r, "a.txt has 3 lines; startLine 4 is past the end.");
  });

  it("points a directory to list_files", async () => {
    write({ "src/a.ts": "" });
    expectError(await readFileTool.run({ path: "src" }, ctx), "src is a directory; use list_files");
  });

  it("does not show a binary file", async () => {
    write({ "img.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0x02, 0x03]) });
    const r = await readFileTool.run({ path: "img.png" }, ctx);
    expectError(r, "img.png looks binary (8 bytes); it is not shown.");
    expect(r.output).not.toContain("PNG");
  });

  it("names a missing file and suggests how to find the right path", async () => {
    const r = await readFileTool.run({ path: "src/nope.ts" }, ctx);
    expectError(r, "No such file: src/nope.ts. Use list_files or search_code");
  });

  it("reads a symlink to a file inside the workspace", async () => {
    write({ "real.txt": "hello\n" });
    fs.symlinkSync("real.txt", path.join(ws, "link.txt"));
    expect(expectOk(await readFileTool.run({ path: "link.txt" }, ctx))).toBe("link.txt (lines 1-1 of 1)\n1| hello");
  });

  it("reads (or clearly refuses) a file whose single line exceeds the output budget", async () => {
    write({ "min.js": `${"x".repeat(600 * 1024)}\n` });
    const r = await readFileTool.run({ path: "min.js" }, ctx);
    expect(r.output).not.toContain("lines 1-0");
    expect(r.output).not.toContain("pass startLine: 1 to continue");
  });
});

describe("write_file", () => {
  it("creates a file and its parent directories, reporting it as created", async () => {
    const r = await writeFileTool.run({ path: "src/deep/new/file.ts", content: "export const x = 1;\nexport const y = 2;\n" }, ctx);
    expect(expectOk(r)).toBe("Created src/deep/new/file.ts (2 lines, 40 bytes).");
    expect(r.filesChanged).toEqual({ created: ["src/deep/new/file.ts"], modified: [], deleted: [] });
    expect(read("src/deep/new/file.ts")).toBe("export const x = 1;\nexport const y = 2;\n");
  });

  it("overwrites an existing file, reporting it as modified", async () => {
    write({ "a.txt": "old content that is longer\n" });
    const r = await writeFileTool.run({ path: "a.txt", content: "new" }, ctx);
    expect(expectOk(r)).toBe("Overwrote a.txt (1 lines, 3 bytes).");
    expect(r.filesChanged).toEqual({ created: [], modified: ["a.txt"], deleted: [] });
    expect(read("a.txt")).toBe("new");
  });

  it("writes an empty file and is idempotent", async () => {
    expect(expectOk(await writeFileTool.run({ path: "e.txt", content: "" }, ctx))).toBe("Created e.txt (0 lines, 0 bytes).");
    expect(expectOk(await writeFileTool.run({ path: "e.txt", content: "" }, ctx))).toBe("Overwrote e.txt (0 lines, 0 bytes).");
    expect(read("e.txt")).toBe("");
  });

  it("refuses to replace a directory", async () => {
    write({ "src/a.ts": "a" });
    expectError(await writeFileTool.run({ path: "src", content: "x" }, ctx), "src is a directory; give a file path.");
    expect(read("src/a.ts")).toBe("a");
  });

  it.each([".git/hooks/pre-commit", ".ledgerloop/x", "sub/.git/config", "./.ledgerloop/state.db"])("refuses to write %s", async (p) => {
    fs.mkdirSync(path.join(ws, ".git", "hooks"), { recursive: true });
    await expect(writeFileTool.run({ path: p, content: "#!/bin/sh\necho pwned\n" }, ctx)).rejects.toThrow(PathEscapeError);
    expect(fs.existsSync(path.join(ws, p))).toBe(false);
  });

  it("refuses a symlink that smuggles a write into .git/", async () => {
    fs.mkdirSync(path.join(ws, ".git", "hooks"), { recursive: true });
    fs.symlinkSync(".git/hooks", path.join(ws, "hooks"));
    await expect(writeFileTool.run({ path: "hooks/pre-commit", content: "x" }, ctx)).rejects.toThrow(PathEscapeError);
    expect(fs.readdirSync(path.join(ws, ".git", "hooks"))).toEqual([]);
  });
});

describe("edit_file", () => {
  const SRC = "function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n";

  it("replaces exactly one occurrence and says where", async () => {
    write({ "src/f.ts": SRC });
    const r = await editFileTool.run({ path: "src/f.ts", oldText: "  return 2;", newText: "  const two = 2;\n  return two;" }, ctx);
    expect(expectOk(r)).toBe("Edited src/f.ts at line 6: replaced 1 line(s) with 2.");
    expect(r.filesChanged).toEqual({ created: [], modified: ["src/f.ts"], deleted: [] });
    expect(read("src/f.ts")).toBe(SRC.replace("  return 2;", "  const two = 2;\n  return two;"));
  });

  it("inserts newText literally ($ patterns are not special)", async () => {
    write({ "a.txt": "price: X\n" });
    expectOk(await editFileTool.run({ path: "a.txt", oldText: "X", newText: "$& $1 $$ $`" }, ctx));
    expect(read("a.txt")).toBe("price: $& $1 $$ $`\n");
  });

  it("reports zero matches with the lines where the first line of oldText appears", async () => {
    write({ "src/f.ts": SRC });
    // Right first line, wrong indentation below it.
    const r = await editFileTool.run({ path: "src/f.ts", oldText: "function b() {\n    return 2;", newText: "x" }, ctx);
    expectError(r, "oldText was not found in src/f.ts.", "Its first line appears at line(s) 5", "Read those lines again.");
    expect(read("src/f.ts")).toBe(SRC);
  });

  it("reports zero matches with a generic hint when even the first line is absent", async () => {
    write({ "src/f.ts": SRC });
    const r = await editFileTool.run({ path: "src/f.ts", oldText: "function c() {", newText: "x" }, ctx);
    expectError(r, "oldText was not found in src/f.ts.", "Read the file again");
    expect(r.output).not.toContain("line(s)");
    expect(read("src/f.ts")).toBe(SRC);
  });

  it("refuses several matches, listing their lines", async () => {
    write({ "src/f.ts": SRC });
    const r = await editFileTool.run({ path: "src/f.ts", oldText: "  return", newText: "  yield" }, ctx);
    expectError(r, "oldText occurs 2 times in src/f.ts (lines 2, 6)", "include more surrounding text");
    expect(read("src/f.ts")).toBe(SRC);
  });

  it("points a missing file to write_file", async () => {
    expectError(await editFileTool.run({ path: "nope.ts", oldText: "a", newText: "b" }, ctx), "No such file: nope.ts. To create a file use write_file.");
    expect(fs.existsSync(path.join(ws, "nope.ts"))).toBe(false);
  });

  it("refuses a directory", async () => {
    write({ "src/f.ts": SRC });
    expectError(await editFileTool.run({ path: "src", oldText: "a", newText: "b" }, ctx), "src is a directory.");
  });

  describe("crash guard", () => {
    const args = { path: "src/f.ts", oldText: "  return 2;", newText: "  return 3;" };

    it("prepare returns null when the edit could not apply", async () => {
      write({ "src/f.ts": SRC });
      expect(await editFileTool.prepare!({ ...args, oldText: "  return" }, ctx)).toBeNull();
      expect(await editFileTool.prepare!({ ...args, oldText: "absent" }, ctx)).toBeNull();
      expect(await editFileTool.prepare!({ ...args, path: "missing.ts" }, ctx)).toBeNull();
      expect(await editFileTool.prepare!(args, ctx)).toEqual(expect.any(String));
    });

    it("recognises an edit applied before the runner restarted and leaves the file alone", async () => {
      write({ "src/f.ts": SRC });
      const guard = await editFileTool.prepare!(args, ctx);
      expect(guard).not.toBeNull();
      expectOk(await editFileTool.run(args, ctx));
      const edited = read("src/f.ts");
      expect(edited).toBe(SRC.replace("return 2;", "return 3;"));
      const mtime = fs.statSync(path.join(ws, "src/f.ts")).mtimeMs;

      const again = await editFileTool.run(args, { ...ctx, guard });
      expect(expectOk(again)).toBe("src/f.ts: the edit was already applied before the runner restarted; nothing changed.");
      expect(again.filesChanged).toEqual({ created: [], modified: ["src/f.ts"], deleted: [] });
      expect(read("src/f.ts")).toBe(edited);
      expect(fs.statSync(path.join(ws, "src/f.ts")).mtimeMs).toBe(mtime);
    });

    it("does not mistake an edit whose newText contains oldText for a fresh one", async () => {
      // Without the guard a re-run would find oldText again (inside newText) and apply it twice.
      write({ "a.txt": "x = f(1)\n" });
      const grow = { path: "a.txt", oldText: "f(1)", newText: "g(f(1))" };
      const guard = await editFileTool.prepare!(grow, ctx);
      expectOk(await editFileTool.run(grow, ctx));
      expectOk(await editFileTool.run(grow, { ...ctx, guard }));
      expect(read("a.txt")).toBe("x = g(f(1))\n");
    });

    it("applies the edit on a re-run when the first attempt never wrote it", async () => {
      write({ "src/f.ts": SRC });
      const guard = await editFileTool.prepare!(args, ctx);
      const r = await editFileTool.run(args, { ...ctx, guard });
      expect(expectOk(r)).toBe("Edited src/f.ts at line 6: replaced 1 line(s) with 1.");
      expect(read("src/f.ts")).toBe(SRC.replace("return 2;", "return 3;"));
    });

    it("reports an error when someone else changed the file since the edit", async () => {
      write({ "src/f.ts": SRC });
      const guard = await editFileTool.prepare!(args, ctx);
      expectOk(await editFileTool.run(args, ctx));
      const changed = `${read("src/f.ts")}// touched by someone else\n`;
      fs.writeFileSync(path.join(ws, "src/f.ts"), changed);

      const r = await editFileTool.run(args, { ...ctx, guard });
      expectError(r, "src/f.ts changed since this edit was first attempted");
      expect(r.output).not.toContain("already applied");
      expect(read("src/f.ts")).toBe(changed);
    });

    it("does not apply an edit twice when newText contains oldText and the file changed meanwhile", async () => {
      write({ "w.ts": "call(f(1));\n" });
      const wrap = { path: "w.ts", oldText: "f(1)", newText: "g(f(1))" };
      const guard = await editFileTool.prepare!(wrap, ctx);
      expectOk(await editFileTool.run(wrap, ctx));
      fs.appendFileSync(path.join(ws, "w.ts"), "// other edit\n");
      const r = await editFileTool.run(wrap, { ...ctx, guard });
      expect(r.status).toBe("error");
      expect(read("w.ts")).toBe("call(g(f(1)));\n// other edit\n");
    });
  });
});

describe("list_files", () => {
  beforeEach(() => {
    write({
      ".gitignore": "dist/\n*.log\n",
      "README.md": "",
      "src/a.ts": "",
      "src/a.test.ts": "",
      "src/util/b.ts": "",
      "dist/bundle.js": "",
      "debug.log": "",
      ".git/HEAD": "ref: refs/heads/main\n",
      ".ledgerloop/state.db": "",
    });
  });

  it("lists files recursively, sorted, honouring .gitignore and hiding .git/ and .ledgerloop/", async () => {
    const out = expectOk(await listFilesTool.run({}, ctx));
    expect(out.split("\n")).toEqual([".gitignore", "README.md", "src/a.test.ts", "src/a.ts", "src/util/b.ts", "[2 gitignored entries not listed]"]);
  });

  it("filters by a glob matching names at any depth", async () => {
    expect(expectOk(await listFilesTool.run({ glob: "*.ts" }, ctx)).split("\n")).toEqual([
      "src/a.test.ts",
      "src/a.ts",
      "src/util/b.ts",
      "[2 gitignored entries not listed]",
    ]);
    expect(expectOk(await listFilesTool.run({ glob: "src/*.test.ts" }, ctx)).split("\n")[0]).toBe("src/a.test.ts");
  });

  it("lists a subdirectory with workspace-relative paths", async () => {
    expect(expectOk(await listFilesTool.run({ path: "src/util" }, ctx))).toBe("src/util/b.ts");
  });

  it("says when nothing matches", async () => {
    expect(expectOk(await listFilesTool.run({ glob: "*.py" }, ctx))).toBe("No files matching *.py under ..");
  });

  it("points a file path to read_file", async () => {
    expectError(await listFilesTool.run({ path: "src/a.ts" }, ctx), "src/a.ts is a file, not a directory; use read_file.");
  });

  it("names a missing directory", async () => {
    expectError(await listFilesTool.run({ path: "nope" }, ctx), "No such directory: nope.");
  });
});

describe("search_code", () => {
  it("finds UserRole and user_role for the query `user role`", async () => {
    write({
      "src/auth/roles.ts": "export enum UserRole {\n  Admin = 'admin',\n  Viewer = 'viewer',\n}\n",
      "app/models.py": "class Account:\n    user_role = 'viewer'\n",
      "src/math.ts": "export const add = (a: number, b: number) => a + b;\n",
    });
    const r = await searchCodeTool.run({ query: "user role" }, ctx);
    const out = expectOk(r);
    const paths = out.split("\n\n").map((block) => block.split(":")[0]);
    expect(paths.sort()).toEqual(["app/models.py", "src/auth/roles.ts"]);
    expect(out).toContain("1| export enum UserRole {");
    expect(out).toContain("2|     user_role = 'viewer'");
    expect(out).toMatch(/src\/auth\/roles\.ts:1-\d+ \(score \d+\.\d\d\)/);
  });

  it("honours k and says when nothing matches", async () => {
    write({ "a.ts": "const userRole = 1;\n", "b.ts": "const user_role = 2;\n", "c.ts": "let UserRoles;\n" });
    const out = expectOk(await searchCodeTool.run({ query: "user role", k: 2 }, ctx));
    expect(out.split("\n\n")).toHaveLength(2);
    expect(expectOk(await searchCodeTool.run({ query: "kubernetes" }, ctx))).toBe('No matches for "kubernetes".');
  });
});

describe("path confinement", () => {
  // The tests may run as root, where a broken guard would really write: write_file rewrites an
  // existing target with its own content, so a regression fails the test without damaging the host.
  const harmless = (p: string) => {
    try {
      return fs.readFileSync(path.resolve(ws, p), "utf8");
    } catch {
      return "written by a test\n";
    }
  };
  // Every path-taking tool, with arguments that would otherwise succeed (or write).
  const CALLS: Array<[string, (p: string) => Promise<unknown>]> = [
    ["read_file", (p) => readFileTool.run({ path: p }, ctx)],
    ["write_file", (p) => writeFileTool.run({ path: p, content: harmless(p) }, ctx)],
    ["edit_file run", (p) => editFileTool.run({ path: p, oldText: "top secret", newText: "edited by a test" }, ctx)],
    ["edit_file prepare", (p) => editFileTool.prepare!({ path: p, oldText: "top secret", newText: "edited by a test" }, ctx)],
    ["list_files", (p) => listFilesTool.run({ path: p }, ctx)],
  ];

  let secretMtime: number;
  beforeEach(() => {
    secretMtime = fs.statSync(path.join(outside, "secret.txt")).mtimeMs;
  });

  function outsideUnchanged(): void {
    expect(fs.readdirSync(outside).sort()).toEqual(["secret.txt"]);
    expect(fs.readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("top secret\n");
    expect(fs.statSync(path.join(outside, "secret.txt")).mtimeMs).toBe(secretMtime);
    expect(fs.readdirSync(tmp).sort()).toEqual(["outside", "ws"]);
  }

  for (const [name, call] of CALLS) {
    describe(name, () => {
      it("refuses ../ escapes", async () => {
        await expect(call("../outside/secret.txt")).rejects.toThrow(PathEscapeError);
        await expect(call("../x")).rejects.toThrow(PathEscapeError);
        await expect(call("src/../../outside/secret.txt")).rejects.toThrow(PathEscapeError);
        outsideUnchanged();
      });

      it("refuses absolute paths outside the workspace", async () => {
        await expect(call(path.join(outside, "secret.txt"))).rejects.toThrow(PathEscapeError);
        await expect(call(path.join(outside, "new.txt"))).rejects.toThrow(PathEscapeError);
        outsideUnchanged();
      });

      it("refuses /etc/passwd", async () => {
        const before = fs.readFileSync("/etc/passwd", "utf8");
        const mtime = fs.statSync("/etc/passwd").mtimeMs;
        await expect(call("/etc/passwd")).rejects.toThrow(PathEscapeError);
        expect(fs.readFileSync("/etc/passwd", "utf8")).toBe(before);
        expect(fs.statSync("/etc/passwd").mtimeMs).toBe(mtime);
      });

      it("refuses a symlink inside the workspace that leads out", async () => {
        fs.symlinkSync("/etc", path.join(ws, "etc-link"));
        fs.symlinkSync(outside, path.join(ws, "out-link"));
        fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "secret-link.txt"));
        const err = await call("etc-link/passwd").catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PathEscapeError);
        expect((err as PathEscapeError).code).toBe("PATH_OUTSIDE_WORKSPACE");
        await expect(call("out-link/secret.txt")).rejects.toThrow(PathEscapeError);
        await expect(call("out-link/new.txt")).rejects.toThrow(PathEscapeError);
        await expect(call("secret-link.txt")).rejects.toThrow(/symlink that leads outside the workspace/);
        await expect(call("out-link")).rejects.toThrow(PathEscapeError);
        outsideUnchanged();
      });
    });
  }

  it("lists a symlink to an outside file nowhere", async () => {
    write({ "in.txt": "" });
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "secret-link.txt"));
    expect(expectOk(await listFilesTool.run({}, ctx))).toBe("in.txt");
  });

  it("keeps search_code inside the workspace", async () => {
    fs.writeFileSync(path.join(outside, "roles.ts"), "export enum UserRole {}\n");
    fs.symlinkSync(path.join(outside, "roles.ts"), path.join(ws, "roles-link.ts"));
    fs.symlinkSync(outside, path.join(ws, "out-dir"));
    expect(expectOk(await searchCodeTool.run({ query: "user role" }, ctx))).toBe('No matches for "user role".');
  });
});
