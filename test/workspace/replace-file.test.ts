import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { replaceFile } from "../../src/workspace/replace-file.js";
import { cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(() => cleanupTemp());

/** A pid that certainly belongs to no running process: one that just exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(r.stdout);
}

it("a write cleans up the temp files an earlier writer of the same file left when it was killed, and only those", async () => {
  const ws = tempWorkspace(undefined, { "out/f.txt": "old\n", "out/g.txt": "g\n" });
  const dir = path.join(ws, "out");
  const dead = deadPid();
  // What a SIGKILL between writing the temp file and renaming it leaves behind.
  fs.writeFileSync(path.join(dir, `.f.txt.ll-write-${dead}-abc123`), "half");
  // A temp of a live process (this one's parent stands in), and one of another file: not ours to touch.
  fs.writeFileSync(path.join(dir, `.f.txt.ll-write-${process.ppid}-live01`), "busy");
  fs.writeFileSync(path.join(dir, `.g.txt.ll-write-${dead}-other1`), "other");
  await replaceFile(path.join(dir, "f.txt"), "new\n");
  expect(fs.readFileSync(path.join(dir, "f.txt"), "utf8")).toBe("new\n");
  expect(fs.readdirSync(dir).sort()).toEqual([`.f.txt.ll-write-${process.ppid}-live01`, `.g.txt.ll-write-${dead}-other1`, "f.txt", "g.txt"].sort());
});
