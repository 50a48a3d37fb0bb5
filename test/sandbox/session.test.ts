import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listeningPorts, LineRing } from "../../src/sandbox/background.js";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { createSandbox } from "../../src/sandbox/executor.js";
import { runCommand } from "../../src/sandbox/engine.js";
import { SandboxSession } from "../../src/sandbox/session.js";
import { isRunning } from "../../src/proc.js";
import { findProcesses } from "../helpers/processes.js";

const report = detectIsolation();
const levels = (["bwrap", "unshare"] as const).filter((l) => report.levels[l].ok);

let tmp: string;
beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-sess-")));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** Pids of processes whose command line contains `marker` (from /proc, this test's own excluded). */
export function withMarker(marker: string): number[] {
  return findProcesses((p) => p.cmdline.includes(marker));
}

async function until(check: () => boolean, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

const server = (port: number, marker: string) =>
  `node -e 'require("http").createServer((q,s)=>s.end("up")).listen(${port},"127.0.0.1",()=>console.log("listening"))' ${marker}`;

function freePort(): number {
  return 20000 + Math.floor(Math.random() * 20000);
}

describe("LineRing", () => {
  it("keeps the newest lines within its line and byte bounds and cuts long lines", () => {
    const r = new LineRing(3, 1000, 10);
    r.push("a\nb\nc\nd\npart");
    expect(r.snapshot()).toEqual(["b", "c", "d", "part"]);
    expect(r.dropped).toBe(1);
    r.push("ial\n" + "x".repeat(30) + "\n");
    expect(r.snapshot(2)).toEqual(["partial", "xxxxxxxxxx… (line cut)"]);
  });
});

describe.each(levels)("sandbox session at %s", (level) => {
  it("a background server is reachable from the next command, not from the host, and gone after close", async () => {
    const port = freePort();
    const marker = `ll-sess-${level}-${port}`;
    const sb = createSandbox({ level, workspace: tmp, session: true });
    const p = await sb.startBackground!({ command: server(port, marker), cwd: tmp });
    expect(await until(() => sb.listeningPorts!().has(port), 10_000)).toBe(true);
    // The host's loopback does not have it.
    expect(listeningPorts("self").has(port)).toBe(false);
    const host = await fetch(`http://127.0.0.1:${port}`).then(
      () => "reached",
      () => "unreachable",
    );
    expect(host).toBe("unreachable");
    const r = await sb.exec({ command: `node -e 'fetch("http://127.0.0.1:${port}").then(r=>r.text()).then(t=>console.log(t))'`, cwd: tmp, timeoutMs: 20_000 });
    expect(r.stdout.trim()).toBe("up");
    expect(withMarker(marker).length).toBeGreaterThan(0);
    await sb.closeSession!();
    expect(await until(() => withMarker(marker).length === 0)).toBe(true);
    await p.exited;
    expect(p.running).toBe(false);
  }, 60_000);

  it("a command of the session cannot reach a server on the host's loopback", async () => {
    const http = await import("node:http");
    const host = http.createServer((_q, s) => s.end("host"));
    await new Promise<void>((r) => host.listen(0, "127.0.0.1", () => r()));
    const port = (host.address() as { port: number }).port;
    try {
      const sb = createSandbox({ level, workspace: tmp, session: true });
      const r = await sb.exec({
        command: `node -e 'fetch("http://127.0.0.1:${port}").then(()=>console.log("reached"),()=>console.log("unreachable"))'`,
        cwd: tmp,
        timeoutMs: 20_000,
      });
      expect(r.stdout.trim()).toBe("unreachable");
      await sb.closeSession!();
    } finally {
      host.close();
    }
  }, 60_000);

  it("without a session each command has its own loopback (the old behaviour)", async () => {
    const port = freePort();
    const sb = createSandbox({ level, workspace: tmp });
    const r = await sb.exec({
      command: `(${server(port, "x")} &) ; for i in $(seq 100); do node -e 'fetch("http://127.0.0.1:${port}").then(r=>r.text()).then(t=>console.log(t),()=>process.exit(1))' && break; sleep 0.1; done`,
      cwd: tmp,
      timeoutMs: 20_000,
    });
    expect(r.stdout).toContain("up");
    const r2 = await sb.exec({
      command: `node -e 'fetch("http://127.0.0.1:${port}").then(()=>console.log("reached"),()=>console.log("unreachable"))'`,
      cwd: tmp,
      timeoutMs: 20_000,
    });
    expect(r2.stdout.trim()).toBe("unreachable");
  }, 60_000);

  it("a command killed because its session ended is told so (interrupted, not a resource limit), and the next command gets a new session", async () => {
    const sb = createSandbox({ level, workspace: tmp, session: true });
    let leader = 0;
    const running = runCommand({
      sandbox: sb,
      workspace: tmp,
      command: "echo started; touch started; sleep 60; echo finished",
      timeoutMs: 120_000,
      outputCapBytes: 64 * 1024,
      onStart: (p) => {
        leader = p.pid;
      },
    });
    // Running inside the session (killed before nsenter has entered it, it would only fail to enter).
    expect(await until(() => leader > 0 && fs.existsSync(path.join(tmp, "started")), 20_000)).toBe(true);
    // The leader is nsenter, pointed at the session's holder (PID 1 of its namespace).
    const argv = fs.readFileSync(`/proc/${leader}/cmdline`, "utf8").split("\0");
    const holder = Number(argv[argv.indexOf("--target") + 1]);
    expect(isRunning(holder)).toBe(true);
    // What the kernel does when the holder dies however it dies: every process of the namespace goes.
    process.kill(holder, "SIGKILL");
    const fb = await running;
    expect(fb.exec.signal).toBe("SIGKILL");
    expect(fb.exec.limit ?? null).toBeNull();
    expect(fb.exec.sessionEnded).toBe(true);
    expect(fb.errorClass).toBe("interrupted");
    expect(fb.stoppedBy).toBe("session_ended");
    expect(fb.exec.stdout).toBe("started\n");
    expect(fb.output).toMatch(/killed \(SIGKILL\) when the run's sandbox session ended, not by anything it did/);
    expect(fb.exec.stderr).toMatch(/the next command starts in a new session/);

    const next = await sb.exec({ command: "echo again", cwd: tmp, timeoutMs: 20_000 });
    expect(next).toMatchObject({ exitCode: 0, stdout: "again\n" });
    expect(next.sessionEnded).toBeUndefined();
    await sb.closeSession!();
  }, 90_000);

  it("a runner killed with SIGKILL leaves no process of its session behind", async () => {
    const port = freePort();
    const marker = `ll-sesskill-${level}-${port}`;
    const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/fixtures/processes/hold-session.mts"), level, tmp, marker, String(port)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("READY")) resolve(out);
      });
      child.once("exit", (c) => reject(new Error(`holder script exited ${c}: ${out}`)));
    });
    expect(line).toContain("READY up");
    expect(withMarker(marker).length).toBeGreaterThan(0);
    child.kill("SIGKILL");
    expect(await until(() => withMarker(marker).length === 0, 10_000)).toBe(true);
  }, 60_000);
});

describe("the session holder", () => {
  it.skipIf(!levels.length)("ends by its watchdog when the runner's end of its pipe closes (no signal needed)", async () => {
    const tools = report.tools;
    const s = await SandboxSession.open({ sh: tools.sh, unshare: tools.unshare, setpriv: tools.setpriv, ip: tools.ip }, { net: true });
    expect(s.alive()).toBe(true);
    // What the kernel does when the runner dies, whatever killed it: the pipe's write end closes.
    (s as unknown as { child: { stdin: { end(): void } } }).child.stdin.end();
    expect(await until(() => !isRunning(s.pid, s.procStart), 5000)).toBe(true);
    await s.close();
  });
});

describe("level none", () => {
  it("background processes use the host loopback and stop with stop()", async () => {
    const port = freePort();
    const marker = `ll-none-${port}`;
    const sb = createSandbox({ level: "none", workspace: tmp, session: true });
    const p = await sb.startBackground!({ command: server(port, marker), cwd: tmp });
    expect(await until(() => sb.listeningPorts!().has(port), 10_000)).toBe(true);
    expect(await fetch(`http://127.0.0.1:${port}`).then((r) => r.text())).toBe("up");
    await p.stop();
    expect(await until(() => withMarker(marker).length === 0)).toBe(true);
  }, 30_000);

  it("a runner killed with SIGKILL leaves no background process behind", async () => {
    const port = freePort();
    const marker = `ll-nonekill-${port}`;
    const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/fixtures/processes/hold-session.mts"), "none", tmp, marker, String(port)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("READY")) resolve();
      });
      child.once("exit", (c) => reject(new Error(`exited ${c}: ${out}`)));
    });
    expect(withMarker(marker).length).toBeGreaterThan(0);
    child.kill("SIGKILL");
    expect(await until(() => withMarker(marker).length === 0, 10_000)).toBe(true);
  }, 30_000);
});
