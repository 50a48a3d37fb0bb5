/**
 * Issue 32, finding 4: the set-id clean-up did lstat then chmod(path), which follows a symlink a
 * still-running process swaps in between (a host file became 0777), and background processes
 * (start_process) never got the clean-up at all. Root only: set-id files of other users are no risk,
 * and only root's commands run without the seccomp filter that refuses the chmod.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { createSandbox } from "../../src/sandbox/executor.js";
import { LEVELS } from "../../src/sandbox/isolation.js";
import { clearNewSetid } from "../../src/sandbox/setid.js";

const isRoot = process.getuid?.() === 0;
const report = detectIsolation();
let area: string;
let ws: string;
let swapper: ChildProcess | undefined;

beforeEach(() => {
  area = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-setid-")));
  ws = path.join(area, "ws");
  fs.mkdirSync(ws);
});

afterEach(() => {
  swapper?.kill("SIGKILL");
  swapper = undefined;
  fs.rmSync(area, { recursive: true, force: true });
});

const mode = (p: string) => fs.statSync(p).mode & 0o7777;

async function until(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

describe.skipIf(!isRoot)("clearNewSetid (skipped unless the runner is root)", () => {
  it("clears new set-id bits, keeps older ones, and names files that are not UTF-8", async () => {
    fs.writeFileSync(path.join(ws, "mine"), "x");
    fs.chmodSync(path.join(ws, "mine"), 0o4755);
    await new Promise((r) => setTimeout(r, 100));
    const since = Date.now();
    const odd = Buffer.concat([Buffer.from(`${ws}/`), Buffer.from([0x74, 0xff])]);
    fs.writeFileSync(odd, "x");
    fs.chmodSync(odd, 0o6755);
    expect(clearNewSetid(ws, since)).toEqual(["t\ufffd"]);
    expect(fs.statSync(odd).mode & 0o7777).toBe(0o755);
    expect(mode(path.join(ws, "mine"))).toBe(0o4755);
  });

  it("files swapped for a symlink to a host file while it runs: the host file's mode never changes", async () => {
    const host = path.join(area, "host-file");
    fs.writeFileSync(host, "host");
    fs.chmodSync(host, 0o600);
    // Many files, each swapped in turn: the old lstat-then-chmod window is microseconds wide.
    const names = Array.from({ length: 32 }, (_, i) => `tool${i}`);
    for (const n of names) fs.writeFileSync(path.join(ws, n), "x");
    const py = `
import os
os.chdir(${JSON.stringify(ws)})
names = ${JSON.stringify(names)}
for n in names: os.symlink(${JSON.stringify(host)}, n + ".link")
while True:
    for n in names:
        os.rename(n, n + ".real"); os.chmod(n + ".real", 0o4777); os.rename(n + ".link", n)
        os.rename(n, n + ".link"); os.rename(n + ".real", n)
`;
    swapper = spawn("python3", ["-c", py], { stdio: "ignore" });
    await new Promise((r) => setTimeout(r, 100));
    let cleared = 0;
    const end = Date.now() + 3000;
    while (Date.now() < end) {
      cleared += clearNewSetid(ws, 0).length;
      expect(mode(host)).toBe(0o600);
    }
    // The swapper was running all along (it exits only when killed) and files were cleared.
    expect(swapper.exitCode).toBeNull();
    expect(cleared).toBeGreaterThan(0);
    expect(mode(host)).toBe(0o600);
  });
});

describe.each(LEVELS)("background processes at %s", (level) => {
  const probe = report.levels[level];
  const skip = !probe.ok ? `SKIPPED: ${probe.detail}` : !isRoot ? "SKIPPED: the runner is not root (only root's set-id files are a risk)" : null;
  describe.skipIf(skip !== null)(skip ?? "available", () => {
    it("what a background process leaves set-uid is cleared when it ends", async () => {
      const sb = createSandbox({ level, workspace: ws });
      const p = await sb.startBackground!({ command: "cp /bin/true bgtool; chmod 4755 bgtool 2>/dev/null; exit 0", cwd: ws, workspace: ws });
      await p.exited;
      expect(fs.existsSync(path.join(ws, "bgtool"))).toBe(true);
      expect(mode(path.join(ws, "bgtool")) & 0o6000).toBe(0);
    }, 60_000);

    it("while one runs, each later command clears what it made set-uid since it started", async () => {
      const sb = createSandbox({ level, workspace: ws });
      const p = await sb.startBackground!({ command: "cp /bin/true bg2; chmod 4755 bg2 2>/dev/null; touch made; sleep 30", cwd: ws, workspace: ws });
      try {
        expect(await until(() => fs.existsSync(path.join(ws, "made")))).toBe(true);
        await new Promise((r) => setTimeout(r, 100));
        const r = await sb.exec({ command: "true", cwd: ws, workspace: ws, timeoutMs: 20_000 });
        expect(p.running).toBe(true);
        expect(mode(path.join(ws, "bg2")) & 0o6000).toBe(0);
        // Where the chmod was allowed (no seccomp filter to refuse it), the command is told.
        if (level !== "bwrap") expect(r.stderr).toMatch(/cleared the set-uid\/set-gid bits of bg2/);
      } finally {
        await p.stop(500);
      }
    }, 60_000);
  });
});
