import { spawn, spawnSync } from "node:child_process";
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
  await replaceFile(ws, "out/f.txt", "new\n");
  expect(fs.readFileSync(path.join(dir, "f.txt"), "utf8")).toBe("new\n");
  expect(fs.readdirSync(dir).sort()).toEqual([`.f.txt.ll-write-${process.ppid}-live01`, `.g.txt.ll-write-${dead}-other1`, "f.txt", "g.txt"].sort());
});

it("a write never lands outside when a directory on the way is swapped for a link to a host directory", async () => {
  const ws = tempWorkspace(undefined, { "cache/keep.txt": "k\n" });
  const outside = tempWorkspace(undefined, { "host.txt": "h\n" });
  const py = `
import os
os.chdir(${JSON.stringify(ws)})
os.symlink(${JSON.stringify(outside)}, "cache.link")
while True:
    os.rename("cache", "cache.real"); os.rename("cache.link", "cache")
    os.rename("cache", "cache.link"); os.rename("cache.real", "cache")
`;
  const swapper = spawn("python3", ["-c", py], { stdio: "ignore" });
  try {
    await new Promise((r) => setTimeout(r, 100));
    let written = 0;
    let refused = 0;
    // Until both outcomes were seen, or 10 s: on a loaded machine the swapper may get little CPU.
    const end = Date.now() + 10_000;
    while (Date.now() < end && (written < 50 || refused < 5)) {
      try {
        await replaceFile(ws, `cache/f${written}.txt`, "x");
        written++;
      } catch (err) {
        // The path check saw the link: refused (or, mid-rename, nothing there).
        expect(["PATH_OUTSIDE_WORKSPACE", "ENOENT"]).toContain((err as { code?: string }).code);
        refused++;
      }
    }
    expect(written).toBeGreaterThan(0);
    // What the test is for: nothing was ever written into the host directory. (How many writes were
    // refused depends on the scheduler; under load the swapper may not have interleaved at all.)
    expect(fs.readdirSync(outside)).toEqual(["host.txt"]);
  } finally {
    swapper.kill("SIGKILL");
  }
});
