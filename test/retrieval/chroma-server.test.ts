import { execFileSync, spawn, spawnSync } from "node:child_process";
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
  ])(
    "killed %s: the next process takes the server over, and the last release stops it",
    async (_when, point) => {
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
    },
    180_000,
  );
});

describe("the embedded Chroma server's watchdog", () => {
  /** Starts the server from a child process and SIGKILLs the child: the server is left with no client. */
  async function orphanServer(stateDir: string, idleSeconds: number): Promise<number> {
    const script = `import { ensureChromaServer } from ${JSON.stringify(path.join(REPO, "src/retrieval/chroma-server.ts"))};
const s = await ensureChromaServer({ stateDir: ${JSON.stringify(stateDir)}, startTimeoutMs: 45_000 });
await fetch(s.url + "/api/v2/tenants/default_tenant/databases/default_database/collections", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "before-the-crash" }) });
console.log(JSON.stringify({ pid: s.pid }));
setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: REPO,
      env: { ...process.env, LEDGERLOOP_CHROMA_IDLE_SECONDS: String(idleSeconds) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("\n")) resolve(out.split("\n")[0]!);
      });
      child.once("exit", (code) => reject(new Error(`the client exited (${code}) before its server answered`)));
    });
    const { pid } = JSON.parse(line) as { pid: number };
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    return pid;
  }

  async function exitsWithin(pid: number, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (!alive(pid)) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return !alive(pid);
  }

  it("stops a server whose every client was killed, once it has been idle; the next process starts one on the same data", async () => {
    const stateDir = tempWorkspace();
    const pid = await orphanServer(stateDir, 2);
    expect(serversOn(path.join(stateDir, "chroma"))).toEqual([pid]);
    // Killed clients stop nothing themselves: the watchdog does, after 2 s without a live client.
    expect(await exitsWithin(pid, 60_000)).toBe(true);
    expect(fs.existsSync(path.join(stateDir, "chroma.server.json"))).toBe(false);
    expect(fs.readFileSync(path.join(stateDir, "chroma.log"), "utf8")).toMatch(
      /stopping the embedded Chroma server on .*: no ledgerloop process has used it for 2 s/,
    );
    const next = await ensureChromaServer({ stateDir, startTimeoutMs: 45_000 });
    try {
      expect(next.started).toBe(true);
      const res = await fetch(`${next.url}/api/v2/tenants/default_tenant/databases/default_database/collections`);
      expect(JSON.stringify(await res.json())).toContain("before-the-crash");
    } finally {
      await next.release();
    }
  }, 180_000);

  it("stops an orphaned server within seconds when its workspace state is deleted, without waiting out the idle time", async () => {
    const stateDir = tempWorkspace();
    // Ten minutes of idle time: only the deleted data directory can stop it within the minute.
    const pid = await orphanServer(stateDir, 600);
    fs.rmSync(stateDir, { recursive: true, force: true });
    // It looks every 5 s; the minute is room for a loaded machine.
    expect(await exitsWithin(pid, 60_000)).toBe(true);
  }, 180_000);

  it("leaves a server alone while a live process uses it, however long", async () => {
    const stateDir = tempWorkspace();
    const before = process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS;
    process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS = "1";
    let s: Awaited<ReturnType<typeof ensureChromaServer>>;
    try {
      s = await ensureChromaServer({ stateDir, startTimeoutMs: 45_000 });
    } finally {
      if (before === undefined) delete process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS;
      else process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS = before;
    }
    try {
      // Several idle periods and checks pass while this process is registered.
      await new Promise((r) => setTimeout(r, 5_000));
      expect(alive(s.pid!)).toBe(true);
      expect(await heartbeat(s.url)).toBe(true);
    } finally {
      await s.release();
    }
    expect(alive(s.pid!)).toBe(false);
  }, 120_000);
});

describe("LEDGERLOOP_CHROMA_IDLE_SECONDS", () => {
  it("refuses a value that is not a whole number of seconds, naming it, and starts nothing", async () => {
    const stateDir = tempWorkspace();
    const before = process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS;
    process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS = "5m";
    try {
      await expect(ensureChromaServer({ stateDir })).rejects.toThrow(/LEDGERLOOP_CHROMA_IDLE_SECONDS must be a whole number of seconds .*not "5m"/);
    } finally {
      if (before === undefined) delete process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS;
      else process.env.LEDGERLOOP_CHROMA_IDLE_SECONDS = before;
    }
    expect(serversOn(path.join(stateDir, "chroma"))).toEqual([]);
    expect(fs.existsSync(path.join(stateDir, "chroma.lock"))).toBe(false);
  });
});
