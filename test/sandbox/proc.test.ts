import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { isExiting, isRunning, readProcStart } from "../../src/proc.js";

// A PID namespace's init killed with SIGKILL first kills every process of its namespace and waits
// until each is reaped; only then does it become a zombie. A command entered with nsenter is reaped
// by nsenter, outside the namespace: the runner sees the command dead while the init still shows as
// running (state S or D). That window made a session's end look like a kill from outside (CI, under
// load). Here nsenter is stopped, so the window stays open as long as the test needs.
const canUnshare = spawnSync("unshare", ["--pid", "--fork", "true"]).status === 0;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) {
    try {
      c.kill("SIGCONT");
      c.kill("SIGKILL");
    } catch {
      // gone
    }
  }
});

const until = async (ok: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (ok()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return ok();
};
// The state letter of /proc/<pid>/stat: "T" once a SIGSTOP has really stopped the process.
const stateOf = (pid: number) => fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "")[0];
const childOf = (pid: number) => Number(fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/)[0] || 0);

describe.skipIf(!canUnshare)(`isExiting${canUnshare ? "" : " (skipped: unshare --pid --fork is not permitted here)"}`, () => {
  it("sees a killed namespace init as exiting while it still waits for its namespace to empty, where isRunning still says running", async () => {
    const ns = spawn("unshare", ["--pid", "--fork", "sleep", "1000"], { stdio: "ignore" });
    children.push(ns);
    expect(await until(() => childOf(ns.pid!) > 0)).toBe(true);
    const init = childOf(ns.pid!);
    const start = readProcStart(init);
    expect(isExiting(init, start)).toBe(false);

    const entered = spawn("nsenter", ["--target", String(init), "--pid", "--", "sleep", "1000"], { stdio: "ignore" });
    children.push(entered);
    expect(await until(() => childOf(entered.pid!) > 0)).toBe(true);
    entered.kill("SIGSTOP");
    // A signal is acted on when its process next runs. On a busy machine nsenter could still be in
    // wait() when the init dies, reap its command there and only then stop: wait until it has stopped.
    expect(await until(() => stateOf(entered.pid!) === "T")).toBe(true);
    process.kill(init, "SIGKILL");

    // Its command is dead (a zombie nsenter cannot reap while stopped); the init is in its exit path.
    expect(await until(() => isExiting(init, start))).toBe(true);
    expect(isRunning(init, start)).toBe(true);

    entered.kill("SIGCONT");
    expect(await until(() => !isRunning(init, start))).toBe(true);
    expect(isExiting(init, start)).toBe(true);
  }, 30_000);

  it("is false for a live process and true for one that is gone or whose pid was reused", () => {
    expect(isExiting(process.pid)).toBe(false);
    expect(isExiting(process.pid, readProcStart(process.pid))).toBe(false);
    expect(isExiting(process.pid, "1")).toBe(true);
    expect(isExiting(2 ** 22 + 1)).toBe(true);
  });
});
