import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ensureChromaServer, heartbeat } from "../../src/retrieval/chroma-server.js";
import { REPO, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

afterAll(cleanupTemp);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

describe("embedded Chroma server", () => {
  it("is shared by every user of a state dir, across processes, and stopped by the last one", async () => {
    const stateDir = tempWorkspace();
    const a = await ensureChromaServer({ stateDir, startTimeoutMs: 45_000 });
    expect(a.started).toBe(true);
    expect(a.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await heartbeat(a.url)).toBe(true);
    const record = JSON.parse(fs.readFileSync(path.join(stateDir, "chroma.server.json"), "utf8"));
    expect(record).toMatchObject({ pid: a.pid, dataDir: path.join(stateDir, "chroma") });

    // Another process finds it through the record and its heartbeat, and leaves it running.
    const script = `import { ensureChromaServer } from ${JSON.stringify(path.join(REPO, "src/retrieval/chroma-server.ts"))};
const s = await ensureChromaServer({ stateDir: ${JSON.stringify(stateDir)} });
console.log(JSON.stringify({ url: s.url, started: s.started }));
await s.release();`;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: REPO, encoding: "utf8", timeout: 60_000 });
    expect(JSON.parse(out.trim())).toEqual({ url: a.url, started: false });
    expect(alive(a.pid!)).toBe(true);

    // A second user in this process: the server stays until both have released it.
    const b = await ensureChromaServer({ stateDir });
    expect(b.started).toBe(false);
    await a.release();
    expect(await heartbeat(b.url)).toBe(true);
    await b.release();
    expect(alive(a.pid!)).toBe(false);
    expect(fs.existsSync(path.join(stateDir, "chroma.server.json"))).toBe(false);
  });

  it("replaces a server that died (stale record), keeping its data", async () => {
    const stateDir = tempWorkspace();
    const a = await ensureChromaServer({ stateDir, startTimeoutMs: 45_000 });
    await fetch(`${a.url}/api/v2/tenants/default_tenant/databases/default_database/collections`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "kept-collection" }),
    });
    process.kill(a.pid!, "SIGKILL");
    for (let i = 0; i < 50 && alive(a.pid!); i++) await new Promise((r) => setTimeout(r, 50));
    const b = await ensureChromaServer({ stateDir, startTimeoutMs: 45_000 });
    expect(b.started).toBe(true);
    expect(b.pid).not.toBe(a.pid);
    const res = await fetch(`${b.url}/api/v2/tenants/default_tenant/databases/default_database/collections`);
    expect(JSON.stringify(await res.json())).toContain("kept-collection");
    await a.release();
    await b.release();
    expect(alive(b.pid!)).toBe(false);
  });
});

/** Pids of Chroma servers whose command line runs on `dataDir`. */
function serversOn(dataDir: string): number[] {
  return fs
    .readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        const argv = fs.readFileSync(`/proc/${n}/cmdline`, "utf8").split("\0");
        return argv.includes("run") && argv[argv.indexOf("--path") + 1] === dataDir && alive(Number(n));
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("a process killed while starting the embedded Chroma server", () => {
  // LEDGERLOOP_FAILPOINT kills the starting process with SIGKILL right after it spawned the server:
  // before it wrote chroma.server.json (the old code wrote it only once the server answered), and
  // right after. Either way the next process must adopt or stop that server, and none may be left.
  it.each([
    ["before the record is written", "chroma-spawned"],
    ["after the record is written, before the server answers", "chroma-recorded"],
  ])("killed %s: the next process takes the server over, and the last release stops it", async (_when, point) => {
    const stateDir = tempWorkspace();
    const dataDir = path.join(stateDir, "chroma");
    const script = `import { ensureChromaServer } from ${JSON.stringify(path.join(REPO, "src/retrieval/chroma-server.ts"))};
await ensureChromaServer({ stateDir: ${JSON.stringify(stateDir)}, startTimeoutMs: 45_000 });
console.log("not killed");`;
    const killed = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: REPO,
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, LEDGERLOOP_FAILPOINT: `${point}:1` },
    });
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    // The orphan: a server nobody has registered with.
    const orphans = serversOn(dataDir);
    expect(orphans).toHaveLength(1);
    const next = await ensureChromaServer({ stateDir, startTimeoutMs: 45_000 });
    try {
      expect(await heartbeat(next.url)).toBe(true);
      if (point === "chroma-recorded") {
        // The record named it: adopted once it answered, not replaced.
        expect(next).toMatchObject({ started: false, pid: orphans[0] });
      } else {
        // Nothing named it: stopped before a new one was started on the same data.
        expect(next.started).toBe(true);
        expect(alive(orphans[0]!)).toBe(false);
      }
      expect(serversOn(dataDir)).toEqual([next.pid]);
      expect(JSON.parse(fs.readFileSync(path.join(stateDir, "chroma.server.json"), "utf8"))).toMatchObject({ pid: next.pid, status: "ready" });
    } finally {
      await next.release();
    }
    expect(serversOn(dataDir)).toEqual([]);
  }, 180_000);
});
