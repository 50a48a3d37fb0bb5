import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { once } from "node:events";
import { Database } from "../../src/sqlite/driver.js";
import { afterEach, describe, expect, it } from "vitest";
import { acquireLease, LEASE_EXIT_CODE, LeaseHeldError, listLeases, threadScope, workspaceScope } from "../../src/ledger/lease.js";
import { openStateDb } from "../../src/ledger/state-db.js";
import { readProcStart } from "../../src/proc.js";
import { REPO, cleanupTemp, tempWorkspace } from "../helpers/workspace.js";

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  cleanupTemp();
});

function freshDb(): { db: Database; file: string } {
  const file = path.join(tempWorkspace(), ".ledgerloop", "state.db");
  return { db: openStateDb(file), file };
}

/** Puts a lease row as another process would have left it. */
function plant(
  db: Database,
  scope: string,
  h: { host?: string; bootId?: string; pid: number; start: string | null; heartbeatAt?: number; expiresAt?: number },
) {
  const t = Date.now();
  const boot = h.bootId ?? fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  db.prepare(
    `INSERT OR REPLACE INTO ll_leases (scope, token, host, boot_id, pid, proc_start, command, thread, acquired_at, heartbeat_at, expires_at)
     VALUES (?, 'planted', ?, ?, ?, ?, 'run', 'T0', ?, ?, ?)`,
  ).run(scope, h.host ?? os.hostname(), boot, h.pid, h.start, t, h.heartbeatAt ?? t, h.expiresAt ?? t + 30_000);
}

async function sleeper(): Promise<{ child: ChildProcess; pid: number; start: string }> {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  children.push(child);
  await once(child, "spawn");
  return { child, pid: child.pid!, start: readProcStart(child.pid!)! };
}

describe("workspace and thread leases", () => {
  it("a second acquirer of a held scope is refused with one line naming the holder, and gets it after release", () => {
    const { db } = freshDb();
    const first = acquireLease(db, [threadScope("T"), workspaceScope("/x")], { command: "run", thread: "T" });
    let err: unknown;
    try {
      acquireLease(db, [workspaceScope("/x")], { command: "run", thread: "U" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LeaseHeldError);
    const e = err as LeaseHeldError;
    expect(e.code).toBe("LEASE_HELD");
    expect(e.exitCode).toBe(LEASE_EXIT_CODE);
    expect(e.message).toBe(`workspace /x is in use by run of T (pid ${process.pid} on host ${os.hostname()}, heartbeat 0 s ago); wait for it or stop it`);
    expect(() => acquireLease(db, [threadScope("T")], { command: "resume", thread: "T" })).toThrow(/^run T is in use by run of T/);
    // Nothing of the refused acquisition was written: the holder's rows are intact.
    expect(listLeases(db).map((l) => l.token)).toEqual([first.token, first.token]);
    first.release();
    expect(listLeases(db)).toEqual([]);
    acquireLease(db, [workspaceScope("/x")], { command: "run", thread: "U" }).release();
  });

  it("a lease left by a local process that died is taken over at once", async () => {
    const { db } = freshDb();
    acquireLease(db, [workspaceScope("/x")], { command: "probe" }).release(); // creates the table
    const s = await sleeper();
    plant(db, "workspace:/x", { pid: s.pid, start: s.start });
    expect(() => acquireLease(db, [workspaceScope("/x")], { command: "run" })).toThrow(new RegExp(`pid ${s.pid} on host`));
    s.child.kill("SIGKILL");
    await once(s.child, "exit");
    const l = acquireLease(db, [workspaceScope("/x")], { command: "run" });
    expect(listLeases(db)[0]).toMatchObject({ pid: process.pid, token: l.token });
    l.release();
  });

  it("a pid now used by another process (other start time) does not keep the lease", async () => {
    const { db } = freshDb();
    acquireLease(db, [workspaceScope("/x")], { command: "probe" }).release();
    const s = await sleeper();
    plant(db, "workspace:/x", { pid: s.pid, start: String(Number(s.start) - 1) });
    acquireLease(db, [workspaceScope("/x")], { command: "run" }).release();
  });

  it("a lease of another machine holds until it expires, then is taken over", () => {
    const { db } = freshDb();
    acquireLease(db, [workspaceScope("/x")], { command: "probe" }).release();
    const t = Date.now();
    plant(db, "workspace:/x", { host: "elsewhere", bootId: "b", pid: process.pid, start: null, heartbeatAt: t - 3_000, expiresAt: t + 27_000 });
    expect(() => acquireLease(db, [workspaceScope("/x")], { command: "run" })).toThrow(
      /^workspace \/x is in use by run of T0 \(pid \d+ on host elsewhere, heartbeat 3 s ago\); wait for it, or until its lease expires in 2[67] s or stop it$/,
    );
    plant(db, "workspace:/x", { host: "elsewhere", bootId: "b", pid: process.pid, start: null, heartbeatAt: t - 31_000, expiresAt: t - 1_000 });
    acquireLease(db, [workspaceScope("/x")], { command: "run" }).release();
  });

  it("the heartbeat renews the expiry; a lease taken over is reported lost through its signal", () => {
    let now = 1_000_000;
    const { db } = freshDb();
    const l = acquireLease(db, [workspaceScope("/x")], { command: "run", ttlMs: 30_000, heartbeatMs: 5_000, now: () => now });
    expect(listLeases(db)[0]!.expiresAt).toBe(1_030_000);
    now += 10_000;
    expect(l.heartbeat()).toBe(true);
    expect(listLeases(db)[0]).toMatchObject({ heartbeatAt: 1_010_000, expiresAt: 1_040_000 });
    db.prepare("UPDATE ll_leases SET token = 'someone-else'").run();
    expect(l.heartbeat()).toBe(false);
    expect(l.signal.aborted).toBe(true);
    l.release();
    expect(listLeases(db)).toHaveLength(1); // release removes only its own rows
  });

  it("acquisition is atomic across processes: of four racing at once, exactly one wins", () => {
    const { file } = freshDb();
    const script = path.join(path.dirname(file), "race.mts");
    fs.writeFileSync(
      script,
      `import { acquireLease, workspaceScope } from ${JSON.stringify(path.join(REPO, "src/ledger/lease.ts"))};
import { openStateDb } from ${JSON.stringify(path.join(REPO, "src/ledger/state-db.ts"))};
const db = openStateDb(${JSON.stringify(file)});
const at = Number(process.argv[2]);
while (Date.now() < at) {}
try { acquireLease(db, [workspaceScope("/x")], { command: "race" }); console.log("won"); }
catch (e) { console.log(e.code ?? e.message); }
const until = Date.now() + 3000; while (Date.now() < until) {}
`,
    );
    const at = String(Date.now() + 6_000);
    const procs = [0, 1, 2, 3].map(() => spawn(process.execPath, ["--import", "tsx", script, at], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] }));
    const outs = procs.map((p) => {
      children.push(p);
      let out = "";
      p.stdout!.on("data", (d) => (out += d));
      p.stderr!.on("data", (d) => (out += d));
      return once(p, "exit").then(() => out.trim());
    });
    return Promise.all(outs).then((results) => {
      expect(results.sort()).toEqual(["LEASE_HELD", "LEASE_HELD", "LEASE_HELD", "won"]);
    });
  }, 60_000);
});
