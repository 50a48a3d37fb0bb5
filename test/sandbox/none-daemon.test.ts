import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createSandbox } from "../../src/sandbox/executor.js";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { noneNamespacePrefix } from "../../src/sandbox/none-pidns.js";
import { findProcesses } from "../helpers/processes.js";

// At level "none" a command's processes must end with it, even a daemon that tries hard to stay:
// it moves itself into the top cgroup of every hierarchy (out of the per-command groups), drops
// LEDGERLOOP_COMMAND from its environment, leaves the session and double-forks.

const isRoot = process.getuid?.() === 0;
const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-none-daemon-")));
const leftovers: number[] = [];
afterAll(() => {
  for (const pid of leftovers) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone: what the test wanted
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Host pids of processes whose command line contains `needle`. */
function hostPids(needle: string): number[] {
  return findProcesses((p) => p.cmdline.includes(needle));
}

/** A daemon that escapes every container but a PID namespace; it touches `beat` every 100 ms. */
function daemonCommand(beat: string): string {
  const loop = `while :; do date +%s%N > ${beat}; sleep 0.1; done`;
  return [
    "(",
    // Out of the command's cgroups: the top group of every v1 hierarchy (root may write them).
    "for f in /sys/fs/cgroup/*/tasks; do echo $BASHPID > $f 2>/dev/null; done;",
    `exec env -u LEDGERLOOP_COMMAND setsid bash -c 'bash -c "${loop}" & disown'`,
    ") & sleep 0.5; echo started",
  ].join(" ");
}

/** Whether `beat` keeps being rewritten (the daemon lives). */
async function beating(beat: string): Promise<boolean> {
  if (!fs.existsSync(beat)) return false;
  const a = fs.readFileSync(beat, "utf8");
  await sleep(700);
  return fs.readFileSync(beat, "utf8") !== a;
}

describe.skipIf(!isRoot)("level none as root (skipped as non-root: a PID namespace needs root, see the README)", () => {
  it("has a PID namespace here", () => {
    expect(noneNamespacePrefix("/bin/sh").prefix, noneNamespacePrefix("/bin/sh").reason).not.toBeNull();
  });

  it("a daemon that leaves the command's cgroups, drops its tag and double-forks does not survive the command", async () => {
    const sandbox = createSandbox({ level: "none", workspace: tmp });
    expect(sandbox.reasons.join("\n")).toMatch(/own PID namespace/);
    const beat = path.join(tmp, `beat-${Date.now()}`);
    const r = await sandbox.exec({ command: daemonCommand(beat), cwd: tmp, timeoutMs: 20_000, tag: `t-${process.pid}` });
    expect(r).toMatchObject({ exitCode: 0, stdout: "started\n", isolation: "none" });
    await sleep(300);
    const survivors = hostPids(beat);
    leftovers.push(...survivors);
    expect(survivors).toEqual([]);
    expect(await beating(beat)).toBe(false);
  }, 60_000);

  it("the same daemon on a timeout is stopped too", async () => {
    const sandbox = createSandbox({ level: "none", workspace: tmp });
    const beat = path.join(tmp, `beat-t-${Date.now()}`);
    const r = await sandbox.exec({ command: `${daemonCommand(beat)}; sleep 30`, cwd: tmp, timeoutMs: 1_500 });
    expect(r.timedOut).toBe(true);
    await sleep(300);
    const survivors = hostPids(beat);
    leftovers.push(...survivors);
    expect(survivors).toEqual([]);
  }, 60_000);

  it("commands behave as before: exit codes, `kill $$`, signals as 128+n, the host's files, network and uid", async () => {
    const sandbox = createSandbox({ level: "none", workspace: tmp });
    const run = (command: string) => sandbox.exec({ command, cwd: tmp, timeoutMs: 10_000 });
    expect((await run("exit 3")).exitCode).toBe(3);
    // The command is not the namespace's first process, so signals to itself work.
    const killed = await run("kill -TERM $$; sleep 5");
    expect(killed.exitCode ?? 128 + 15).toBe(128 + 15);
    expect(killed.durationMs).toBeLessThan(4_000);
    expect((await run("id -u")).stdout.trim()).toBe("0");
    fs.writeFileSync(path.join(tmp, "host-file"), "from the host\n");
    expect((await run(`cat ${path.join(tmp, "host-file")} && echo written > out.txt`)).stdout).toBe("from the host\n");
    expect(fs.readFileSync(path.join(tmp, "out.txt"), "utf8")).toBe("written\n");
    // The host's network (loopback included): nothing is taken away at this level.
    const server = net.createServer((c) => c.end("hello from the host\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    const got = await run(`exec 3<>/dev/tcp/127.0.0.1/${port}; cat <&3`);
    server.close();
    expect(got.stdout).toBe("hello from the host\n");
    // Its own /proc: `ps` sees the command's processes only, so pids it prints are its own.
    const ps = await run("ps -e -o pid= | wc -l");
    expect(Number(ps.stdout.trim())).toBeLessThan(10);
  }, 60_000);
});

describe("what doctor says about level none", () => {
  it("names the guarantee it gives, or the one it cannot give", () => {
    const none = detectIsolation().levels.none.detail;
    expect(none).toMatch(/runs on the host \(its files, network and uid\)/);
    if (noneNamespacePrefix("/bin/sh").prefix) expect(none).toMatch(/own PID namespace: every process it starts ends with it \(not ones a host service/);
    else expect(none).toMatch(/can outlive the command/);
    // A sandbox without the namespace says so in its reasons.
    const off = createSandbox({ level: "none", workspace: tmp, pidNamespace: false });
    expect(off.reasons.join("\n")).toMatch(/no PID namespace .*can outlive the command/);
  });
});
