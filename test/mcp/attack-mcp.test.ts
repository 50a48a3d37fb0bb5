/**
 * The attack suite for MCP servers: a hostile files-style stdio server (fixtures/mcp/hostile-server.mjs)
 * is started by the runtime's MCP client at every isolation level available here, and each case
 * checks the HOST afterwards. A server gets what a command gets at its level (isolation.ts), so a
 * case is only run where the level promises it; one it does not promise is skipped with the reason
 * in its name, and a level missing on this machine is skipped with the probe's reason.
 */
import { execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { createSandbox } from "../../src/sandbox/executor.js";
import { LEVELS, type IsolationLevel } from "../../src/sandbox/isolation.js";
import { noneNamespacePrefix } from "../../src/sandbox/none-pidns.js";
import { gitCommitTool } from "../../src/agent/tools/git-commit.js";
import { loadMcpTools, type McpToolSet } from "../../src/agent/tools/mcp.js";
import { registerTool, type ToolResult } from "../../src/agent/tools/tool.js";
import { findProcesses } from "../helpers/processes.js";
import { cleanupTemp, REPO, tempWorkspace } from "../helpers/workspace.js";

const report = detectIsolation();
const isRoot = process.getuid?.() === 0;
const SERVER = path.join(REPO, "test/fixtures/mcp/hostile-server.mjs");
const HOLDER = path.join(REPO, "test/fixtures/mcp/hold-server.mts");

type Promise_ = "protected" | "pidns";
/** What each level promises a server, as it does a command (see src/sandbox/isolation.ts). */
const PROMISES: Record<IsolationLevel, Set<Promise_>> = {
  bwrap: new Set(["protected", "pidns"]),
  unshare: new Set(["protected", "pidns"]),
  // As root, level none gives each command, and each server, its own PID namespace (none-pidns.ts).
  none: new Set(noneNamespacePrefix("/bin/sh").prefix ? ["pidns"] : []),
};
const WHY_NOT: Record<Promise_, string> = {
  protected:
    "protected workspace paths are not read-only at this level (.ledgerloop/ is writable; git's control files and the config are restored after the call)",
  pidns: "no PID namespace at this level (the runner is not root)",
};

/** Unique string for this file's run: in the servers' and daemons' command lines. */
const RUN = `llmcp${crypto.randomBytes(4).toString("hex")}`;
let seq = 0;
let mark = "";
let ws = "";
let set: McpToolSet | null = null;

const ours = (m: string) => findProcesses((p) => p.argv.some((a) => a.includes(m) && !/^\/\S*$/.test(a)));

function killOurs(): void {
  for (const pid of ours(RUN)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return cond();
}

const git = (...args: string[]) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: ws, stdio: "pipe" }).toString();

const CONFIG = () => JSON.stringify({ mcpServers: { hostile: { command: process.execPath, args: [SERVER, mark], risk: "exec", approve: "allow" } } }, null, 2);

beforeEach(() => {
  mark = `${RUN}x${++seq}`;
  ws = tempWorkspace(undefined, { "a.txt": "a\n", ".ledgerloop/state.db": "state" });
  fs.writeFileSync(path.join(ws, "ledgerloop.config.json"), CONFIG());
  git("init", "-q");
  git("add", "a.txt");
  git("commit", "-q", "-m", "init");
});

afterEach(async () => {
  await set?.close();
  set = null;
  killOurs();
});
afterAll(() => cleanupTemp());

const snapshot = (rel: string) => {
  try {
    return fs.readFileSync(path.join(ws, rel)).toString("base64");
  } catch {
    return null;
  }
};

describe.each(LEVELS)("level %s", (level) => {
  const probe = report.levels[level];
  describe.skipIf(!probe.ok)(probe.ok ? "available" : `SKIPPED: ${probe.detail}`, () => {
    const when = (p: Promise_, name: string, fn: () => Promise<void>, timeout = 60_000) =>
      PROMISES[level].has(p) ? it(name, fn, timeout) : it.skip(`${name} — not promised: ${WHY_NOT[p]}`, fn);

    const start = async () => {
      const servers = parseConfig(JSON.parse(CONFIG())).mcpServers!;
      set = await loadMcpTools(servers, { sandbox: createSandbox({ level, workspace: ws, session: true }), workspace: ws, allowNetwork: false });
      expect(set.problems).toEqual([]);
      expect(set.servers[0]!.detail).toContain(level);
    };
    /** A call of the server's tool as act makes it; the output is what the model reads. */
    const use = async (tool: string, args: Record<string, unknown>): Promise<ToolResult> => {
      const t = set!.offered.find((o) => o.name === `mcp__hostile__${tool}`)!;
      const bound = t.bind(args);
      if (!bound.ok) throw new Error(`${tool}: arguments refused`);
      return bound.call.run({ workspace: ws } as never);
    };

    it("a filter planted in .git/config + .gitattributes never runs in git_commit on the host; the model is told", async () => {
      await start();
      const config = snapshot(".git/config");
      const planted =
        fs.readFileSync(path.join(ws, ".git/config"), "utf8") +
        `[filter "pwn"]\n\tclean = sh -c 'touch ${ws}/PWNED; cat'\n\tsmudge = cat\n\trequired = false\n`;
      const r = await use("write", { path: ".git/config", content: planted });
      await use("write", { path: ".gitattributes", content: "* filter=pwn\n" });
      expect(snapshot(".git/config")).toBe(config);
      expect(r.output).toMatch(level === "none" ? /ledgerloop: undid changes to git's control files \(\.git\/config\)/ : /EROFS|read-only file system/i);
      fs.writeFileSync(path.join(ws, "b.txt"), "b\n");
      const commit = await registerTool(gitCommitTool).bind({ message: "b" });
      if (!commit.ok) throw new Error("git_commit arguments refused");
      const c = await commit.call.run({ workspace: ws } as never);
      expect(c.status).toBe("ok");
      expect(fs.existsSync(path.join(ws, "PWNED"))).toBe(false);
    });

    it("ledgerloop.config.json cannot be rewritten to allow the network (prevented, or restored after the call); the model is told", async () => {
      await start();
      const before = snapshot("ledgerloop.config.json");
      const r = await use("write", { path: "ledgerloop.config.json", content: JSON.stringify({ sandbox: { network: true } }) });
      expect(snapshot("ledgerloop.config.json")).toBe(before);
      expect(r.output).toMatch(level === "none" ? /ledgerloop: restored ledgerloop\.config\.json/ : /EROFS|read-only file system/i);
    });

    when("protected", ".ledgerloop/ is read-only to the server", async () => {
      await start();
      const r = await use("write", { path: ".ledgerloop/x", content: "x" });
      const s = await use("write", { path: ".ledgerloop/state.db", content: "owned" });
      expect(fs.existsSync(path.join(ws, ".ledgerloop/x"))).toBe(false);
      expect(snapshot(".ledgerloop/state.db")).toBe(Buffer.from("state").toString("base64"));
      expect(`${r.output}\n${s.output}`).toMatch(/EROFS|read-only file system/i);
    });

    it("a .git the server creates in a subfolder is moved away after the call; the model is told", async () => {
      await start();
      const r = await use("write", { path: "sub/.git/config", content: `[core]\n\tfsmonitor = touch ${ws}/PWNED\n` });
      expect(fs.existsSync(path.join(ws, "sub/.git"))).toBe(false);
      expect(r.output).toMatch(/ledgerloop: moved away sub\/\.git, which the command created/);
    });

    it.skipIf(!isRoot)(
      "a set-uid/set-gid file the server makes is not left so on the host (skipped unless the runner is root: only root's are a risk)",
      async () => {
        await start();
        const r = await use("setuid", { path: "x" });
        if (fs.existsSync(path.join(ws, "x"))) expect(fs.statSync(path.join(ws, "x")).mode & 0o6000).toBe(0);
        // bwrap's seccomp filter refuses the chmod; elsewhere the bits are cleared after the call.
        expect(r.output).toMatch(level === "bwrap" ? /EPERM|operation not permitted/i : /ledgerloop: cleared the set-uid\/set-gid bits of x/);
      },
    );

    when("pidns", "the server runs in a PID namespace of its own, and close() ends it and its setsid daemon before it resolves", async () => {
      await start();
      const r = await use("daemon", {});
      expect(r.output).toBe("daemon started");
      expect(await until(() => ours(`${mark}-daemon`).length > 0, 15_000)).toBe(true);
      const server = findProcesses((p) => p.argv[0] === process.execPath && p.argv.includes(SERVER) && p.argv.includes(mark));
      expect(server).toHaveLength(1);
      expect(fs.readlinkSync(`/proc/${server[0]}/ns/pid`)).not.toBe(fs.readlinkSync("/proc/self/ns/pid"));
      await set!.close();
      set = null;
      // Not polled: close() resolves once the tree is gone.
      expect(ours(mark)).toEqual([]);
    });

    when(
      "pidns",
      "a runner killed with SIGKILL leaves no process of the server or its daemon",
      async () => {
        const child = spawn(process.execPath, ["--import", "tsx", HOLDER, level, ws, mark], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
        child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
        try {
          expect(await until(() => out.includes("READY"), 60_000), out).toBe(true);
          expect(out).toContain("READY daemon started");
          expect(await until(() => ours(`${mark}-daemon`).length > 0, 15_000)).toBe(true);
          expect(ours(mark).length).toBeGreaterThan(1);
        } finally {
          child.kill("SIGKILL");
        }
        expect(await until(() => ours(mark).length === 0, 5000), `left: ${ours(mark).join(", ")}`).toBe(true);
      },
      90_000,
    );
  });
});
