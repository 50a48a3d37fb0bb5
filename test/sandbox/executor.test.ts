import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCommand } from "../../src/sandbox/engine.js";
import { DEFAULT_POLICY } from "../../src/sandbox/policy.js";
import { commandEnv, createLocalSandbox, DEFAULT_OUTPUT_CAP, killOrphan, readProcStart, spawnCapped } from "../../src/sandbox/executor.js";
import type { ProcessInfo } from "../../src/sandbox/port.js";

let tmp: string;
/** Processes a test started that might outlive it; killed in afterEach whatever happened. */
let leftovers: Array<{ pid: number; procStart: string | null }>;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ledgerloop-exec-")));
  leftovers = [];
});

afterEach(() => {
  for (const { pid, procStart } of leftovers) {
    // Only the very process recorded: a pid freed by a passing test may already belong to another.
    if (procStart === null || readProcStart(pid) !== procStart) continue;
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone in the meantime: what the test wanted
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

// These tests exercise what stops a command's processes on the host itself (process group, /proc
// scan, the LEDGERLOOP_COMMAND tag), which is all a runner without a PID namespace (non-root) has:
// no namespace here, so pids and signals are the host's. The namespace is tested in none-daemon.test.ts.
const sandbox = createLocalSandbox({ pidNamespace: false });
const exec = (command: string, timeoutMs = 10_000, extra: Partial<Parameters<typeof sandbox.exec>[0]> = {}) =>
  sandbox.exec({ command, cwd: tmp, timeoutMs, ...extra });

/** A process is gone when /proc no longer has it or it is a zombie waiting for its (new) parent to reap it. */
function isGone(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
  } catch {
    return true;
  }
}

async function waitGone(pid: number, ms = 2000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (isGone(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return isGone(pid);
}

/** Process group id (field 5 of /proc/<pid>/stat). */
function pgidOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

function readPid(file: string): number {
  const pid = Number(fs.readFileSync(path.join(tmp, file), "utf8").trim());
  expect(pid).toBeGreaterThan(1);
  leftovers.push({ pid, procStart: readProcStart(pid) });
  return pid;
}

describe("createLocalSandbox().exec", () => {
  it("reports exit code, stdout and stderr separately", async () => {
    const r = await exec("echo out; echo err >&2; printf 'no newline'; exit 3");
    expect(r).toMatchObject({
      exitCode: 3,
      signal: null,
      stdout: "out\nno newline",
      stderr: "err\n",
      timedOut: false,
      truncated: false,
      isolation: "none",
      limit: null,
      denied: null,
    });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("runs bash in the given directory with stdin closed", async () => {
    fs.writeFileSync(path.join(tmp, "here.txt"), "");
    const r = await exec('echo "$PWD"; ls; [[ -n "$BASH_VERSION" ]] && echo bash; cat; echo "cat=$?"');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe(`${tmp}\nhere.txt\nbash\ncat=0\n`);
  });

  it("reports exit 0 and a process killed by a signal", async () => {
    expect((await exec("true")).exitCode).toBe(0);
    const killed = await exec("kill -9 $$");
    expect(killed.exitCode).toBeNull();
    expect(killed.signal).toBe("SIGKILL");
    expect(killed.timedOut).toBe(false);
  });

  it("gives exit 127 for a missing program", async () => {
    const r = await exec("definitely-not-a-program-ledgerloop --version");
    expect(r.exitCode).toBe(127);
    expect(r.stderr).toContain("definitely-not-a-program-ledgerloop: command not found");
  });

  it("gives exit 127 when the program itself cannot be spawned", async () => {
    const r = await spawnCapped({
      argv: [path.join(tmp, "no-such-binary")],
      cwd: tmp,
      env: commandEnv(),
      timeoutMs: 5000,
      outputCapBytes: 1024,
    });
    expect(r.exitCode).toBe(127);
    expect(r.stderr).toContain("no-such-binary: command not found");
  });

  it("a start that cannot be recorded stops the command and leaves no timer behind", async () => {
    // As when the ledger's database is down at the moment a command starts: onStart throws.
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timers();
    let started: ProcessInfo | undefined;
    let watched = 0;
    const run = spawnCapped({
      argv: ["sh", "-c", "sleep 30"],
      cwd: tmp,
      env: commandEnv(),
      timeoutMs: 60_000,
      outputCapBytes: 1024,
      watch: { intervalMs: 20, check: () => (watched++, null) },
      onStart: (p) => {
        started = p;
        throw new Error("the state database is unavailable");
      },
    });
    await expect(run).rejects.toThrow("the state database is unavailable");
    expect(started).toBeDefined();
    expect(await waitGone(started!.pid)).toBe(true);
    // Neither the time limit nor the watch interval outlives the command.
    const seen = watched;
    await new Promise((r) => setTimeout(r, 200));
    expect(watched).toBe(seen);
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it("on timeout kills the whole process group, background children included", async () => {
    const t0 = performance.now();
    const r = await exec("sleep 30 & echo $! > bg.pid; echo started; sleep 30", 500);
    const elapsed = performance.now() - t0;
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    expect(r.signal).toMatch(/^SIG(TERM|KILL)$/);
    expect(r.stdout).toBe("started\n");
    expect(elapsed).toBeLessThan(5000);
    expect(r.durationMs).toBeGreaterThanOrEqual(450);
    const bg = readPid("bg.pid");
    expect(await waitGone(bg)).toBe(true);
  });

  it("kills a child that ignores SIGTERM once the time is up", async () => {
    const t0 = performance.now();
    const r = await exec("trap '' TERM; sleep 30 & echo $! > bg.pid; wait", 300);
    expect(r.timedOut).toBe(true);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(await waitGone(readPid("bg.pid"))).toBe(true);
  });

  it("returns quickly when a background child keeps stdout open, and kills it", async () => {
    const r = await exec("(sleep 30 & echo $! > bg.pid) ; echo hi; date +%s%3N > end.ms", 20_000);
    // Timed from the leader's last line, not from the start: starting a shell on a busy machine can
    // take longer than the fallback itself, and is not what this checks.
    const afterLeader = Date.now() - Number(fs.readFileSync(path.join(tmp, "end.ms"), "utf8"));
    expect(r).toMatchObject({ exitCode: 0, stdout: "hi\n", timedOut: false });
    // Under the 2 s drain fallback: the group kill closed the pipe, not the drain timer.
    expect(afterLeader).toBeLessThan(1900);
    expect(await waitGone(readPid("bg.pid"))).toBe(true);
  });

  it("does not wait for a process that left the group (setsid) past the drain time", async () => {
    const t0 = performance.now();
    const r = await exec("setsid sleep 30 & echo $! > bg.pid; echo hi", 20_000);
    const elapsed = performance.now() - t0;
    readPid("bg.pid"); // not ours to keep alive: afterEach kills it
    expect(r).toMatchObject({ exitCode: 0, stdout: "hi\n", timedOut: false });
    expect(elapsed).toBeLessThan(5000);
  });

  it("caps an output flood, keeping head and tail and counting the cut bytes", async () => {
    const r = await exec("yes | head -c 5000000; echo done >&2", 30_000);
    expect(r.exitCode).toBe(0);
    expect(r.truncated).toBe(true);
    const half = DEFAULT_OUTPUT_CAP / 2;
    const marker = `\n[... ${5_000_000 - 2 * half} bytes cut by ledgerloop's output cap ...]\n`;
    expect(r.stdout).toBe(`${"y\n".repeat(half / 2)}${marker}${"y\n".repeat(half / 2)}`);
    expect(r.stderr).toBe("done\n");
  });

  it("uses the per-request cap over the sandbox default", async () => {
    const r = await exec("head -c 1000 /dev/zero | tr '\\0' a", 10_000, { outputCapBytes: 100 });
    expect(r.truncated).toBe(true);
    expect(r.stdout).toBe(`${"a".repeat(50)}\n[... 900 bytes cut by ledgerloop's output cap ...]\n${"a".repeat(50)}`);
    const big = createLocalSandbox({ outputCapBytes: 2000 });
    const whole = await big.exec({ command: "head -c 1000 /dev/zero | tr '\\0' a", cwd: tmp, timeoutMs: 10_000 });
    expect(whole).toMatchObject({ truncated: false, stdout: "a".repeat(1000) });
  });

  it("caps stderr on its own", async () => {
    const r = await exec("echo small; head -c 3000 /dev/zero | tr '\\0' e >&2", 10_000, { outputCapBytes: 200 });
    expect(r.stdout).toBe("small\n");
    expect(r.truncated).toBe(true);
    expect(r.stderr).toContain("[... 2800 bytes cut by ledgerloop's output cap ...]");
  });

  it("aborts the whole group on signal", async () => {
    const ac = new AbortController();
    const t0 = performance.now();
    const pending = exec("sleep 30 & echo $! > bg.pid; sleep 30", 30_000, { signal: ac.signal });
    setTimeout(() => ac.abort(), 300);
    const r = await pending;
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(r.signal).toBe("SIGKILL");
    expect(r.timedOut).toBe(false);
    expect(await waitGone(readPid("bg.pid"))).toBe(true);
  });

  describe("environment", () => {
    const saved = new Map<string, string | undefined>();
    const setEnv = (vars: Record<string, string>) => {
      for (const [k, v] of Object.entries(vars)) {
        if (!saved.has(k)) saved.set(k, process.env[k]);
        process.env[k] = v;
      }
    };
    afterEach(() => {
      for (const [k, v] of saved) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      saved.clear();
    });

    it("does not pass secrets or test-runner variables to commands", async () => {
      setEnv({
        MY_API_KEY: "sk-test-value-aaaaaaaaaaaaaaaaaaaaaaaa",
        GITHUB_TOKEN: "ghp-test-value-bbbbbbbbbbbbbbbbbbbbbbb",
        INNOCENT_LOOKING: "runner-only-value",
        NODE_TEST_CONTEXT: "child-v8",
        NODE_OPTIONS: "--require /nonexistent.js",
        LANG: "C.UTF-8",
      });
      const r = await exec("printenv");
      expect(r.exitCode).toBe(0);
      const names = r.stdout
        .split("\n")
        .filter(Boolean)
        .map((l) => l.slice(0, l.indexOf("=")));
      // The allow-list still lets the basics through (so an empty printenv cannot pass this test).
      expect(names).toContain("PATH");
      expect(names).toContain("LANG");
      for (const name of ["MY_API_KEY", "GITHUB_TOKEN", "INNOCENT_LOOKING", "NODE_TEST_CONTEXT", "NODE_OPTIONS"]) {
        expect(names).not.toContain(name);
      }
      expect(names.filter((n) => n.startsWith("VITEST"))).toEqual([]);
      expect(r.stdout).not.toContain("test-value");
      expect(r.stdout).not.toContain("runner-only-value");
    });

    it("adds request variables but drops secret-looking ones among them", async () => {
      const r = await exec("printenv", 10_000, { env: { APP_MODE: "test", DB_PASSWORD: "hunter2-hunter2" } });
      expect(r.stdout).toContain("APP_MODE=test\n");
      expect(r.stdout).not.toContain("DB_PASSWORD");
      expect(r.stdout).not.toContain("hunter2");
    });

    it("commandEnv keeps allow-listed and LC_ names only", () => {
      expect(
        commandEnv(
          { EXTRA: "1", AWS_SECRET_ACCESS_KEY: "x" },
          { PATH: "/bin", LC_ALL: "C", HOME: "/root", OPENAI_API_KEY: "k", NODE_TEST_CONTEXT: "child", VITEST_POOL_ID: "1" },
        ),
      ).toEqual({ PATH: "/bin", LC_ALL: "C", HOME: "/root", EXTRA: "1" });
    });
  });

  it("reports the process to onStart while it runs, in its own process group", async () => {
    const seen: Array<ProcessInfo & { alive: boolean; pgrp: number }> = [];
    const r = await exec("sleep 0.2; echo ok", 10_000, {
      onStart: (p) => {
        seen.push({ ...p, alive: !isGone(p.pid), pgrp: pgidOf(p.pid) });
      },
    });
    expect(r.stdout).toBe("ok\n");
    expect(seen).toHaveLength(1);
    const p = seen[0]!;
    expect(p.alive).toBe(true);
    expect(p.pgid).toBe(p.pid);
    expect(p.pgrp).toBe(p.pid);
    expect(p.pgid).not.toBe(pgidOf(process.pid));
    expect(p.procStart).toMatch(/^\d+$/);
  });

  it("waits for an async onStart before the command may finish", async () => {
    const order: string[] = [];
    await exec("true", 10_000, {
      onStart: async () => {
        await new Promise((r) => setTimeout(r, 50));
        order.push("onStart");
      },
    });
    order.push("returned");
    expect(order).toEqual(["onStart", "returned"]);
  });
});

describe("killOrphan", () => {
  it("refuses bad records and kills a still-running group recorded earlier", async () => {
    let info: ProcessInfo | undefined;
    const t0 = performance.now();
    const pending = exec("sleep 30 & echo $! > bg.pid; sleep 30", 60_000, {
      onStart: (p) => {
        info = p;
      },
    });
    // Wait until the background child exists.
    while (!fs.existsSync(path.join(tmp, "bg.pid")) || fs.readFileSync(path.join(tmp, "bg.pid"), "utf8") === "") {
      await new Promise((r) => setTimeout(r, 20));
    }
    const bg = readPid("bg.pid");
    leftovers.push({ pid: info!.pid, procStart: info!.procStart });
    expect(info!.procStart).toBe(readProcStart(info!.pid));

    // A recycled pid (different start time) or an incomplete record must not be killed.
    expect(killOrphan({ ...info!, procStart: "1" })).toBe(false);
    expect(killOrphan({ pid: null, pgid: info!.pgid, procStart: info!.procStart })).toBe(false);
    expect(killOrphan({ pid: info!.pid, pgid: null, procStart: info!.procStart })).toBe(false);
    expect(isGone(info!.pid)).toBe(false);
    expect(isGone(bg)).toBe(false);

    expect(killOrphan(info!)).toBe(true);
    const r = await pending;
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.signal).toBe("SIGKILL");
    expect(await waitGone(bg)).toBe(true);
    expect(await waitGone(info!.pid)).toBe(true);
  });

  it("finds a tagged command that was never recorded, daemons that left its group included", async () => {
    // The runner can die after spawning a command and before onStart records it: the tag is set
    // before the command exists, so what survived is found all the same.
    const tag = `t-${process.pid}-${Date.now()}`;
    const pending = exec("setsid sleep 30 & echo $! > bg.pid; sleep 30", 60_000, { tag });
    while (!fs.existsSync(path.join(tmp, "bg.pid")) || fs.readFileSync(path.join(tmp, "bg.pid"), "utf8") === "") {
      await new Promise((r) => setTimeout(r, 20));
    }
    const bg = readPid("bg.pid");
    // Read around an exec, environ can be empty for a moment (this failed once under load): poll.
    const environ = async () => {
      for (let waited = 0; waited < 2000; waited += 20) {
        const vars = fs.readFileSync(`/proc/${bg}/environ`, "utf8").split("\0");
        if (vars.length > 1) return vars;
        await new Promise((r) => setTimeout(r, 20));
      }
      return fs.readFileSync(`/proc/${bg}/environ`, "utf8").split("\0");
    };
    expect(await environ()).toContain(`LEDGERLOOP_COMMAND=${tag}`);
    // Another tag matches nothing.
    expect(killOrphan({ pid: null, pgid: null, procStart: null }, `${tag}-other`)).toBe(false);
    expect(isGone(bg)).toBe(false);
    expect(killOrphan({ pid: null, pgid: null, procStart: null }, tag)).toBe(true);
    const r = await pending;
    expect(r.signal).toBe("SIGKILL");
    expect(await waitGone(bg)).toBe(true);
  });

  it("does nothing for a process that is gone", async () => {
    let info: ProcessInfo | undefined;
    await exec("true", 10_000, {
      onStart: (p) => {
        info = p;
      },
    });
    await waitGone(info!.pid);
    expect(killOrphan(info!)).toBe(false);
  });
});

describe("runCommand", () => {
  it("decides on the verdict its caller already evaluated instead of evaluating the policy again", async () => {
    const base = { sandbox, workspace: tmp, command: "echo ran > ran.txt", timeoutMs: 10_000, outputCapBytes: 4096, policy: DEFAULT_POLICY };
    // The policy alone allows this command...
    expect((await runCommand(base)).exec.exitCode).toBe(0);
    fs.rmSync(path.join(tmp, "ran.txt"));
    // ...but the verdict handed in (the one the user was shown) is what counts.
    const given = { decision: "deny" as const, rule: "caller.rule", reason: "decided by the caller", parts: [] };
    const fb = await runCommand({ ...base, verdict: given });
    expect(fb.exec.denied).toEqual({ rule: "caller.rule", reason: "decided by the caller" });
    expect(fs.existsSync(path.join(tmp, "ran.txt"))).toBe(false);
  });

  it("reports files a shell command created, modified and deleted", async () => {
    fs.writeFileSync(path.join(tmp, "a.txt"), "a\n");
    fs.writeFileSync(path.join(tmp, "b.txt"), "b\n");
    fs.writeFileSync(path.join(tmp, "same.txt"), "same\n");
    fs.mkdirSync(path.join(tmp, "src"));
    const fb = await runCommand({
      sandbox,
      workspace: tmp,
      command: "echo new > src/c.txt; echo more >> a.txt; rm b.txt; cat same.txt > /dev/null",
      timeoutMs: 10_000,
      outputCapBytes: 4096,
    });
    expect(fb.ok).toBe(true);
    expect(fb.errorClass).toBeNull();
    expect(fb.filesChanged).toEqual({ created: ["src/c.txt"], modified: ["a.txt"], deleted: ["b.txt"] });
    expect(fb.output).toContain("files changed: +src/c.txt ~a.txt -b.txt");
    expect(fb.output.startsWith("$ echo new > src/c.txt;")).toBe(true);
    expect(fb.output).toMatch(/\nexit code 0 \(\d+\.\d\d s, sandbox: none\)/);
  });

  it("reports a command killed by the run's own stop as interrupted, with what it had done so far", async () => {
    const ac = new AbortController();
    const pending = runCommand({
      sandbox,
      workspace: tmp,
      command: "echo half > half.txt; touch started; sleep 30; echo never > rest.txt",
      timeoutMs: 60_000,
      outputCapBytes: 4096,
      signal: ac.signal,
    });
    // Stopped once it is under way (the file says so), not by a timer.
    for (let i = 0; i < 2000 && !fs.existsSync(path.join(tmp, "started")); i++) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    const fb = await pending;
    expect(fb.ok).toBe(false);
    expect(fb.errorClass).toBe("interrupted");
    expect(fb.stoppedBy).toBe("run_stopped");
    expect(fb.output).toMatch(/\nwas stopped because the run was stopped \(killed by SIGKILL\); it may have done part of its work/);
    expect(fb.filesChanged.created).toContain("half.txt");
    expect(fs.existsSync(path.join(tmp, "rest.txt"))).toBe(false);
  });

  it("does not report gitignored files", async () => {
    fs.writeFileSync(path.join(tmp, ".gitignore"), "build/\n");
    const fb = await runCommand({
      sandbox,
      workspace: tmp,
      command: "mkdir -p build && echo x > build/out.js && echo y > kept.txt",
      timeoutMs: 10_000,
      outputCapBytes: 4096,
    });
    expect(fb.filesChanged).toEqual({ created: ["kept.txt"], modified: [], deleted: [] });
  });

  it("turns a failing node --test run into test counts and test_failure", async () => {
    fs.writeFileSync(
      path.join(tmp, "math.test.mjs"),
      [
        'import test from "node:test";',
        'import assert from "node:assert/strict";',
        'test("adds", () => assert.equal(1 + 1, 2));',
        'test("subtracts", () => assert.equal(2 - 1, 3));',
        'test.skip("later", () => {});',
        "",
      ].join("\n"),
    );
    const fb = await runCommand({
      sandbox,
      workspace: tmp,
      command: "node --test math.test.mjs",
      timeoutMs: 30_000,
      outputCapBytes: 16 * 1024,
      expectTests: true,
    });
    expect(fb.exec.exitCode).toBe(1);
    expect(fb.ok).toBe(false);
    expect(fb.errorClass).toBe("test_failure");
    expect(fb.tests).toMatchObject({ framework: "node-test", passed: 1, failed: 1, skipped: 1 });
    expect(fb.tests!.failedTests).toContain("subtracts");
    expect(fb.output).toContain("tests (node-test): 1 passed, 1 failed, 1 skipped; failing: subtracts");
  });

  it("with expectTests, failing tests fail the run even when the command exits 0", async () => {
    const command = "printf '# tests 2\\n# pass 1\\n# fail 1\\n'; exit 0";
    const base = { sandbox, workspace: tmp, command, timeoutMs: 10_000, outputCapBytes: 4096 };
    const asTests = await runCommand({ ...base, expectTests: true });
    expect(asTests.tests).toMatchObject({ passed: 1, failed: 1 });
    expect(asTests.ok).toBe(false);
    expect(asTests.errorClass).toBe("test_failure");
    const plain = await runCommand(base);
    expect(plain.ok).toBe(true);
    expect(plain.errorClass).toBeNull();
  });

  it("classifies a timeout and a missing program", async () => {
    const base = { sandbox, workspace: tmp, outputCapBytes: 4096 };
    const slow = await runCommand({ ...base, command: "sleep 10", timeoutMs: 200 });
    expect(slow.ok).toBe(false);
    expect(slow.errorClass).toBe("timeout");
    expect(slow.output).toMatch(/timed out after \d+ ms and was killed/);
    const missing = await runCommand({ ...base, command: "no-such-program-ledgerloop", timeoutMs: 10_000 });
    expect(missing.errorClass).toBe("command_not_found");
    expect(missing.exec.exitCode).toBe(127);
  });

  it("tells the model how many bytes the output cap cut", async () => {
    const fb = await runCommand({
      sandbox,
      workspace: tmp,
      command: "yes | head -c 5000000",
      timeoutMs: 30_000,
      outputCapBytes: DEFAULT_OUTPUT_CAP,
    });
    expect(fb.exec.truncated).toBe(true);
    expect(fb.output).toContain(`[... ${5_000_000 - DEFAULT_OUTPUT_CAP} bytes cut by ledgerloop's output cap ...]`);
  });
});
