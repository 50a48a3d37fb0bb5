import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { detectIsolation, isolationWarning, type IsolationReport } from "../../src/sandbox/detect.js";
import { runCommand } from "../../src/sandbox/engine.js";
import { createLocalSandbox, createSandbox, killOrphan } from "../../src/sandbox/executor.js";
import { LEVELS, levelPromises, pathsInPrivateDirs, planUid } from "../../src/sandbox/isolation.js";
import { DEFAULT_LIMITS, detectCgroups, resolveLimits, rlimitScript, whichLimit, type LimitEvidence } from "../../src/sandbox/limits.js";
import type { ProcessInfo } from "../../src/sandbox/port.js";
import { buildSeccompFilter } from "../../src/sandbox/seccomp.js";

const report = detectIsolation();
const isRoot = process.getuid?.() === 0;
const has = (l: "bwrap" | "unshare") => report.levels[l].ok;
const skipWhy = (l: "bwrap" | "unshare") => (has(l) ? "" : ` — SKIPPED: ${report.levels[l].detail}`);

let tmp: string;
beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-iso-")));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe("detectIsolation", () => {
  it("reports every level with a reason, the limits, and picks the strongest that works", () => {
    for (const l of LEVELS) {
      expect(typeof report.levels[l].ok).toBe("boolean");
      expect(report.levels[l].detail.length).toBeGreaterThan(0);
      expect(report.reasons.some((r) => r.startsWith(`${l}: `))).toBe(true);
    }
    expect(report.level).toBe(LEVELS.find((l) => report.levels[l].ok));
    expect(report.levels.none.ok).toBe(true);
    for (const k of ["memory", "pids", "cpu", "file_size", "timeout", "output"]) {
      expect(report.reasons.some((r) => r.startsWith(`limit ${k}: `))).toBe(true);
    }
  });

  it("probes once per process unless asked to refresh", () => {
    expect(detectIsolation()).toBe(report);
    expect(detectIsolation({ refresh: true }).level).toBe(report.level);
  });

  it("has a loud warning for level none only", () => {
    const w = isolationWarning("none", ["bwrap: unavailable — bwrap not found"]);
    expect(w).toMatch(/WITHOUT ISOLATION/);
    expect(w).toContain("bwrap: unavailable — bwrap not found");
    expect(isolationWarning("bwrap")).toBeNull();
    expect(isolationWarning("unshare")).toBeNull();
  });
});

describe("createSandbox", () => {
  it("auto takes the detected level; createLocalSandbox stays level none without probing", () => {
    expect(createSandbox().level).toBe(report.level);
    const local = createLocalSandbox();
    expect(local.level).toBe("none");
  });

  it("refuses a level that does not work here, with the reason", () => {
    const fake: IsolationReport = {
      ...report,
      level: "none",
      levels: { ...report.levels, bwrap: { ok: false, detail: "bwrap not found (install bubblewrap)" } },
    };
    expect(() => createSandbox({ level: "bwrap", report: fake })).toThrow(ConfigError);
    expect(() => createSandbox({ level: "bwrap", report: fake })).toThrow(/bwrap not found/);
    expect(createSandbox({ report: fake }).level).toBe("none");
  });

  it("removes its per-command cgroups", async () => {
    const sb = createLocalSandbox();
    for (let i = 0; i < 3; i++) await sb.exec({ command: "sleep 0.05 & echo hi", cwd: tmp, timeoutMs: 5000 });
    for (const parent of Object.values(detectCgroups().parents)) {
      const mine = fs.readdirSync(parent).filter((n) => n.startsWith(`ledgerloop-${process.pid}-`));
      expect(mine).toEqual([]);
    }
  });

  it.skipIf(!detectCgroups().parents.memory)("reports CPU time and peak memory measured by the cgroups", async () => {
    const r = await createLocalSandbox().exec({ command: `node -e "Buffer.alloc(64<<20,1)"`, cwd: tmp, timeoutMs: 20_000 });
    expect(r.usage?.memoryPeakBytes).toBeGreaterThan(64 << 20);
    expect(r.usage?.cpuMs).toBeGreaterThanOrEqual(0);
  });
});

describe("limits", () => {
  it("defaults and overrides", () => {
    expect(resolveLimits()).toEqual(DEFAULT_LIMITS);
    expect(DEFAULT_LIMITS).toMatchObject({ cpuSeconds: 300, memoryBytes: 2 * 1024 ** 3, pids: 512, fileSizeBytes: 1024 ** 3 });
    expect(resolveLimits({ pids: 10 }, { cpuSeconds: 2, pids: undefined })).toMatchObject({ pids: 10, cpuSeconds: 2 });
    expect(() => resolveLimits({ memoryBytes: 0 })).toThrow(RangeError);
    expect(() => resolveLimits({ cpuSeconds: Number.NaN })).toThrow(RangeError);
  });

  it("sets rlimits in the wrapper (soft cpu below hard, file size in 512-byte blocks)", () => {
    const lines = rlimitScript({ ...DEFAULT_LIMITS, cpuSeconds: 5, fileSizeBytes: 1024 * 1024 });
    expect(lines).toEqual(["ulimit -S -t 5", "ulimit -H -t 6", "ulimit -f 2048"]);
    expect(rlimitScript(DEFAULT_LIMITS, { nproc: true }).at(-1)).toBe("ulimit -p 512");
  });

  const ev = (e: Partial<LimitEvidence>): LimitEvidence => ({
    exitCode: 1,
    signal: null,
    stderr: "",
    timedOut: false,
    stoppedFor: null,
    oomKills: 0,
    pidsRefused: 0,
    ...e,
  });
  it.each([
    [ev({ stoppedFor: "output" }), "output"],
    [ev({ exitCode: 137, oomKills: 1 }), "memory"],
    [ev({ exitCode: 0, oomKills: 1 }), null],
    [ev({ timedOut: true, exitCode: null, signal: "SIGKILL", pidsRefused: 5 }), "pids"],
    [ev({ timedOut: true, exitCode: null, signal: "SIGTERM" }), "timeout"],
    [ev({ exitCode: null, signal: "SIGXCPU" }), "cpu"],
    [ev({ exitCode: 152 }), "cpu"],
    [ev({ exitCode: 153 }), "file_size"],
    [ev({ exitCode: null, signal: "SIGXFSZ" }), "file_size"],
    [ev({ exitCode: 1, stderr: "Error: EFBIG: file too large, write" }), "file_size"],
    [ev({ exitCode: 1 }), null],
    [ev({ exitCode: 0 }), null],
  ])("whichLimit(%o) = %s", (e, want) => {
    expect(whichLimit(e)).toBe(want);
  });

  it("a timeout is classified as timeout, a memory kill as resource_limit, through the engine", async () => {
    const sb = createLocalSandbox();
    const slow = await runCommand({ sandbox: sb, workspace: tmp, command: "sleep 10", timeoutMs: 300, outputCapBytes: 4096 });
    expect(slow.exec.limit).toBe("timeout");
    expect(slow.errorClass).toBe("timeout");
    expect(slow.stoppedBy).toBe("limit");
    if (detectCgroups().parents.memory) {
      const hog = createSandbox({ level: "none", limits: { memoryBytes: 96 * 1024 ** 2 } });
      const fb = await runCommand({
        sandbox: hog,
        workspace: tmp,
        command: `node -e "const a=[];for(;;)a.push(Buffer.alloc(8<<20,1))"`,
        timeoutMs: 30_000,
        outputCapBytes: 4096,
      });
      expect(fb.exec.limit).toBe("memory");
      expect(fb.errorClass).toBe("resource_limit");
      expect(fb.stoppedBy).toBe("limit");
      expect(fb.output).toContain("stopped: memory limit exceeded");
    }
  });

  it("names a SIGKILL that the cgroups show no limit sent as a stop from outside, through the engine", async () => {
    const cg = detectCgroups().parents;
    const fb = await runCommand({
      sandbox: createSandbox({ level: "none" }),
      workspace: tmp,
      command: "echo before; kill -9 $$",
      timeoutMs: 30_000,
      outputCapBytes: 4096,
    });
    expect(fb.exec.signal === "SIGKILL" || fb.exec.exitCode === 137).toBe(true);
    if (cg.memory && cg.cpuacct) {
      expect(fb).toMatchObject({ stoppedBy: "outside", errorClass: "unknown" });
    } else {
      // Without the cgroups' word, a bare SIGKILL is still read as the OOM killer's.
      expect(fb).toMatchObject({ stoppedBy: "limit", errorClass: "resource_limit" });
    }
  });
});

describe("seccomp filter", () => {
  it("compiles for x64 and arm64 only", () => {
    for (const arch of ["x64", "arm64"]) {
      const f = buildSeccompFilter(arch)!;
      expect(f.length % 8).toBe(0);
      expect(f.length / 8).toBeLessThan(256);
    }
    expect(buildSeccompFilter("ia32")).toBeNull();
  });
});

describe("pathsInPrivateDirs", () => {
  it("names the absolute paths of a command line under /tmp, /run or /dev/shm, except the workspace's", () => {
    const words = ["/usr/bin/node", "/tmp/tools/server.mjs", "/tmp/ws/server.mjs", "/tmpfile", "rel/x.mjs", "/run/user/0/s", "/dev/shm/x", "--flag"];
    expect(pathsInPrivateDirs(words, "/tmp/ws")).toEqual(["/tmp/tools/server.mjs", "/run/user/0/s", "/dev/shm/x"]);
    expect(pathsInPrivateDirs(["/tmp/ws", "/tmp/ws/../other/a"], "/tmp/ws/")).toEqual(["/tmp/ws/../other/a"]);
  });
});

describe("planUid", () => {
  it("runs as the runner when the runner is not root", () => {
    expect(planUid(tmp, 1000)).toMatchObject({ kind: "self", uid: 1000 });
  });

  it.skipIf(!isRoot)("as root: root's workspace → uid 0 without capabilities; another owner's → that owner", () => {
    expect(planUid(tmp, 0)).toMatchObject({ kind: "root-userns", uid: 0 });
    fs.chownSync(tmp, 65534, 65534);
    expect(planUid(tmp, 0)).toMatchObject({ kind: "owner", uid: 65534, gid: 65534 });
    // An owner who cannot reach the workspace cannot be the one to run in it.
    const locked = path.join(tmp, "locked");
    fs.mkdirSync(locked, { mode: 0o700 });
    fs.chownSync(tmp, 0, 0);
    fs.chmodSync(tmp, 0o700);
    const inner = path.join(locked, "ws");
    fs.mkdirSync(inner);
    fs.chownSync(inner, 65534, 65534);
    expect(planUid(inner, 0)).toMatchObject({ kind: "root-userns" });
  });
});

describe.skipIf(!has("bwrap"))(`bwrap level${skipWhy("bwrap")}`, () => {
  const sb = () => createSandbox({ level: "bwrap" });
  const exec = (command: string, extra: Record<string, unknown> = {}) => sb().exec({ command, cwd: tmp, workspace: tmp, timeoutMs: 20_000, ...extra });

  it.skipIf(!isRoot)("root's workspace: uid 65534 inside, files root's on the host, no capabilities", async () => {
    const r = await exec("id -u; touch made; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status");
    expect(r.stdout).toMatch(/^65534\n/);
    expect(r.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(r.stdout).toMatch(/CapBnd:\s+0+\n/);
    expect(r.stdout).toMatch(/NoNewPrivs:\s+1/);
    expect(r.stdout).toMatch(/Seccomp:\s+2/);
    expect(fs.statSync(path.join(tmp, "made")).uid).toBe(0);
  });

  it.skipIf(!isRoot)("another user's workspace: the command runs as that user (a real uid, not root)", async () => {
    fs.chownSync(tmp, 65534, 65534);
    expect(sb().uidFor(tmp).kind).toBe("owner");
    const r = await exec("id -u; touch made");
    expect(r.stdout).toBe("65534\n");
    // The host agrees: the file belongs to the owner, so the command ran under the owner's real uid.
    expect(fs.statSync(path.join(tmp, "made")).uid).toBe(65534);
  });

  it("keeps a workspace under /tmp visible, gives a private /tmp, TMPDIR=/tmp and a cleared environment", async () => {
    process.env.LEDGERLOOP_NOT_ALLOWED = "x";
    try {
      const r = await exec("pwd; ls -A /tmp | wc -l; echo $TMPDIR; printenv LEDGERLOOP_NOT_ALLOWED || echo unset");
      expect(r.stdout).toBe(`${tmp}\n1\n/tmp\nunset\n`);
    } finally {
      delete process.env.LEDGERLOOP_NOT_ALLOWED;
    }
  });

  it("hides credential stores of the home directory", async () => {
    const secretDir = path.join(tmp, "fake-home", ".ssh");
    fs.mkdirSync(secretDir, { recursive: true });
    fs.writeFileSync(path.join(secretDir, "id_ed25519"), "PRIVATE");
    fs.writeFileSync(path.join(tmp, "fake-home", ".npmrc"), "//registry/:_authToken=secret");
    const ws = path.join(tmp, "ws");
    fs.mkdirSync(ws);
    const hidden = createSandbox({ level: "bwrap", hiddenPaths: [secretDir, path.join(tmp, "fake-home", ".npmrc")] });
    const r = await hidden.exec({ command: `ls -A ${secretDir}; cat ${tmp}/fake-home/.npmrc; echo end`, cwd: ws, workspace: ws, timeoutMs: 10_000 });
    expect(r.stdout).toBe("end\n");
  });

  it("refuses set-uid bits but not ordinary chmod", async () => {
    const r = await exec(
      [
        "cp /bin/sh x",
        "chmod 755 x && echo chmod-ok",
        "chmod u+s x || echo suid-refused",
        "chmod 2755 x || echo sgid-refused",
        `python3 -c "import os; os.open('y', os.O_CREAT|os.O_WRONLY, 0o4755)" 2>/dev/null || echo open-refused`,
        `python3 -c "import os; os.close(os.open('/etc/hostname', os.O_RDONLY, 0o4755)); print('open-ro-ok')"`,
      ].join("; "),
    );
    expect(r.stdout).toBe("chmod-ok\nsuid-refused\nsgid-refused\nopen-refused\nopen-ro-ok\n");
    expect(fs.statSync(path.join(tmp, "x")).mode & 0o7777).toBe(0o755);
  });

  it("reports exit codes; a shell killed by a signal comes back as 128+n through bwrap", async () => {
    expect((await exec("exit 7")).exitCode).toBe(7);
    const killed = await exec("kill -9 $$");
    expect(killed.exitCode).toBe(137);
  });

  it("a request's allowNetwork overrides the sandbox default", async () => {
    const open = createSandbox({ level: "bwrap", allowNetwork: true });
    const withNet = await open.exec({ command: "ip -o link | wc -l", cwd: tmp, workspace: tmp, timeoutMs: 10_000 });
    const without = await open.exec({ command: "ip -o link | wc -l", cwd: tmp, workspace: tmp, timeoutMs: 10_000, allowNetwork: false });
    expect(Number(without.stdout.trim())).toBe(1); // lo only
    expect(Number(withNet.stdout.trim())).toBeGreaterThan(1);
  });

  it("binds the workspace, not just cwd: a command in a subdirectory can write the workspace root", async () => {
    fs.mkdirSync(path.join(tmp, "sub"));
    const sbx = createSandbox({ level: "bwrap", workspace: tmp });
    const r = await sbx.exec({ command: "echo up > ../root.txt && cat ../root.txt", cwd: path.join(tmp, "sub"), timeoutMs: 10_000 });
    expect(r.stdout).toBe("up\n");
  });

  it("killOrphan of the recorded process ends the whole sandbox", async () => {
    let info: ProcessInfo | undefined;
    const t0 = Date.now();
    const pending = exec("sleep 60 & sleep 60", {
      onStart: (p: ProcessInfo) => {
        info = p;
      },
    });
    while (!info) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    expect(killOrphan(info)).toBe(true);
    const r = await pending;
    expect(r.signal).toBe("SIGKILL");
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it("an abort signal stops it", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const t0 = Date.now();
    const r = await exec("sleep 60", { signal: ac.signal });
    expect(r.signal).toBe("SIGKILL");
    expect(Date.now() - t0).toBeLessThan(5000);
  });
});

describe.skipIf(!has("unshare"))(`unshare level${skipWhy("unshare")}`, () => {
  it("no network but loopback, a new PID namespace, no capabilities", async () => {
    const sb = createSandbox({ level: "unshare" });
    const r = await sb.exec({
      command:
        "ip -o link | wc -l; ip -br addr show lo | grep -c 127.0.0.1; ls /proc | grep -c '^[0-9][0-9]*$'; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status",
      cwd: tmp,
      workspace: tmp,
      timeoutMs: 10_000,
    });
    const [links, loUp, procs] = r.stdout.split("\n");
    expect(links).toBe("1");
    expect(loUp).toBe("1");
    // Only the namespace's own few processes are visible (the mount setup before the command uses
    // pids too, so the command's own pid is not a small number any more).
    expect(Number(procs)).toBeLessThan(10);
    expect(r.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(r.stdout).toMatch(/NoNewPrivs:\s+1/);
  });
});

describe("what doctor says a level promises", () => {
  it.skipIf(!has("unshare") || process.getuid?.() !== 0)(
    "at unshare a root runner's uid plan claims no user namespace (skipped unless root with unshare)",
    () => {
      const reason = createSandbox({ level: "unshare" }).uidFor(tmp).reason;
      expect(reason).not.toMatch(/65534|in a user namespace/);
      expect(reason).toMatch(/no user namespace at this level/);
    },
  );

  it("lists the user namespace and seccomp as not enforced at unshare, and confinement as not enforced at none", () => {
    expect(levelPromises("unshare").notEnforced.join("\n")).toMatch(/user namespace[\s\S]*seccomp/);
    expect(levelPromises("unshare").enforced.join("\n")).toMatch(/read-only host/);
    expect(levelPromises("none").notEnforced.join("\n")).toMatch(/file-system confinement/);
    expect(levelPromises("bwrap").enforced.join("\n")).toMatch(/user namespace/);
  });
});
