/**
 * The host-side readers switched to the confined reader (issue 32, "what must be true" 2): each case
 * is a read the old code made through a path the agent controls, and which reached a host file.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLexicalSearcher } from "../../src/retrieval/lexical.js";
import { createLocalSandbox } from "../../src/sandbox/executor.js";
import { hashFile } from "../../src/workspace/files.js";
import { readEntry } from "../../src/workspace/rev-fs.js";
import { declaredPackages } from "../../src/workspace/snapshot.js";
import { detectTestCommand } from "../../src/workspace/test-command.js";
import type { ToolContext } from "../../src/agent/tools/index.js";
import { readFileTool } from "../../src/agent/tools/read-file.js";

let tmp: string;
let ws: string;
let outside: string;
const SECRET = "HOST-SECRET-5d1c";

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-confined-callers-")));
  ws = path.join(tmp, "ws");
  outside = path.join(tmp, "outside");
  fs.mkdirSync(ws);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, "secret.txt"), `${SECRET}\n`);
  fs.writeFileSync(path.join(outside, "package.json"), JSON.stringify({ dependencies: { [SECRET.toLowerCase()]: "1.0.0" } }));
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe("host-side readers never read through a symlink out of the workspace", () => {
  it("a revision snapshot does not read a file through a directory swapped for a link (O_NOFOLLOW guards only the last name)", () => {
    fs.symlinkSync(outside, path.join(ws, "d"));
    expect(readEntry(ws, "d/secret.txt", "file", 1 << 20)).toBe("vanished");
    fs.mkdirSync(path.join(ws, "real"));
    fs.writeFileSync(path.join(ws, "real/f.txt"), "inside\n");
    const r = readEntry(ws, "real/f.txt", "file", 1 << 20);
    expect(r !== "vanished" && r !== "unreadable" && r.kind === "file" && r.content.toString()).toBe("inside\n");
  });

  it("hashing a changed file refuses a link that leads out", async () => {
    fs.symlinkSync(path.join(outside, "secret.txt"), path.join(ws, "notes.txt"));
    await expect(hashFile(ws, "notes.txt")).rejects.toMatchObject({ code: "PATH_OUTSIDE_WORKSPACE" });
  });

  it("the workspace summary does not read a manifest that is a link to a host file", () => {
    fs.symlinkSync(path.join(outside, "package.json"), path.join(ws, "package.json"));
    expect(declaredPackages(ws).join("\n")).not.toContain(SECRET.toLowerCase());
  });

  it("the test command is not guessed from a package.json that is a link to a host file", async () => {
    fs.writeFileSync(path.join(outside, "package.json"), JSON.stringify({ scripts: { test: `echo ${SECRET}` } }));
    fs.symlinkSync(path.join(outside, "package.json"), path.join(ws, "package.json"));
    // The host file says "there is a test script": nothing in the workspace does.
    expect(await detectTestCommand(ws)).toBeNull();
  });

  it("read_file refuses a FIFO instead of hanging on it", async () => {
    spawnSync("mkfifo", [path.join(ws, "pipe")]);
    const ctx: ToolContext = {
      workspace: ws,
      sandbox: createLocalSandbox(),
      searcher: createLexicalSearcher(ws),
      commandTimeoutMs: 10_000,
      testTimeoutMs: 30_000,
      outputCapBytes: 16 * 1024,
    };
    const r = await readFileTool.run({ path: "pipe" }, ctx);
    expect(r.status).toBe("error");
    expect(r.output).toContain("is not a regular file");
  }, 10_000);
});
