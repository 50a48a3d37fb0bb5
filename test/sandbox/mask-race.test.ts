import { spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { createSandbox, type ConfiguredSandbox } from "../../src/sandbox/executor.js";
import { unshareArgv, vanishedMask } from "../../src/sandbox/isolation.js";
import { ProcessManager } from "../../src/sandbox/processes.js";
import { McpConnection } from "../../src/mcp/client.js";

// Both isolating levels hide the host's listening unix sockets (and credential files) by mounting
// over their paths, listed just before a command starts. A socket closed in between (another
// program's server stopping) made bwrap stop before running anything ("Can't create file at …",
// exit 1) and the unshare level refuse to start (exit 125): a command, a background process or an
// MCP server failed at random for what some other program did. Seen in CI as a service that would
// not restart while the attack suite opened and closed its test socket.

const report = detectIsolation();
const isRoot = process.getuid?.() === 0;
let tmp: string;
const servers: net.Server[] = [];
const socks: string[] = [];

beforeAll(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-mask-race-")));
  fs.mkdirSync(path.join(tmp, "ws"));
});

afterAll(async () => {
  await Promise.all(servers.map((srv) => new Promise((r) => srv.close(r))));
  for (const s of socks) fs.rmSync(s, { force: true });
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A listening host socket outside the directories the sandbox replaces (/tmp, /run, /dev): one it must mask by path. */
async function hostSocket(name: string): Promise<string> {
  const sock = path.join("/var/tmp", `ll-mask-race-${process.pid}-${name}.sock`);
  fs.rmSync(sock, { force: true });
  const server = net.createServer((c) => c.end("host daemon\n"));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(sock, () => resolve());
  });
  servers.push(server);
  socks.push(sock);
  return sock;
}

/**
 * A sandbox whose bwrap, the first time it is asked to mount `target` (by default a new listening
 * host socket), removes it first (the host daemon closing it at the worst moment, a user deleting a
 * file), then runs the real bwrap.
 */
async function racingSandbox(
  name: string,
  opts: { target?: string; workspace?: string; protectedPaths?: string[] } = {},
): Promise<{ sb: ConfiguredSandbox; calls: () => number }> {
  const target = opts.target ?? (await hostSocket(name));
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  const wrapper = path.join(dir, "bwrap");
  const mark = path.join(dir, "masked-calls");
  fs.writeFileSync(
    wrapper,
    [
      "#!/bin/sh",
      `case " $* " in *" ${target} "*)`,
      `  echo x >> '${mark}'`,
      `  [ "$(wc -l < '${mark}')" -eq 1 ] && rm -f '${target}';;`,
      "esac",
      `exec '${report.tools.bwrap}' "$@"`,
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  const sb = createSandbox({
    level: "bwrap",
    report: { ...report, tools: { ...report.tools, bwrap: wrapper } },
    workspace: opts.workspace ?? path.join(tmp, "ws"),
    session: true,
    ...(opts.protectedPaths ? { protectedPaths: opts.protectedPaths } : {}),
  });
  const calls = () => (fs.existsSync(mark) ? fs.readFileSync(mark, "utf8").split("\n").filter(Boolean).length : 0);
  return { sb, calls };
}

describe("vanishedMask", () => {
  const argv = ["bwrap", "--ro-bind", "/", "/", "--ro-bind", "/dev/null", "/var/tmp/gone.sock", "--tmpfs", "/root/.aws", "--", "bash", "-c", "x"];

  it("names a mask of the argv whose path is gone, from bwrap's own first line", () => {
    expect(vanishedMask(argv, "bwrap: Can't create file at /var/tmp/gone.sock: Read-only file system\n")).toBe("/var/tmp/gone.sock");
  });

  it("names a hidden directory that is gone, and nothing for a path the argv does not mask or other output", () => {
    expect(vanishedMask(argv, "bwrap: Can't mkdir /root/.aws: Read-only file system")).toBe("/root/.aws");
    // Gone between the bind and its read-only remount.
    expect(
      vanishedMask(
        argv,
        'bwrap: Can\'t bind mount /oldroot/dev/null on /newroot/var/tmp/gone.sock: Unable to remount destination "/newroot/var/tmp/gone.sock" with correct flags: No such file or directory',
      ),
    ).toBe("/var/tmp/gone.sock");
    expect(vanishedMask(argv, "bwrap: Can't create file at /var/tmp/other.sock: Read-only file system")).toBeNull();
    // A protected workspace path deleted before its read-only bind; the root's bind is no such path.
    const prot = ["bwrap", "--ro-bind", "/", "/", "--ro-bind", "/w/keep.json", "/w/keep.json"];
    expect(vanishedMask(prot, "bwrap: Can't find source path /w/keep.json: No such file or directory")).toBe("/w/keep.json");
    expect(vanishedMask(prot, "bwrap: Can't find source path /: No such file or directory")).toBeNull();
    expect(vanishedMask(argv, "bwrap: Can't find source path /var/tmp/gone.sock: No such file or directory")).toBeNull();
    // Those words after other output are not bwrap failing first.
    expect(vanishedMask(argv, "starting\nbwrap: Can't create file at /var/tmp/gone.sock: Read-only file system")).toBeNull();
    expect(vanishedMask(argv, "bash: x: command not found")).toBeNull();
  });
});

describe.skipIf(!report.levels.bwrap.ok)("bwrap: a host socket closed while a command starts", () => {
  /** Runs `command` in the racing sandbox: it must run once, ok, and bwrap must have been asked to mount the target once. */
  async function runsOnce(raced: { sb: ConfiguredSandbox; calls: () => number }, cwd: string, command: string, bwrapSaid: RegExp) {
    try {
      const r = await raced.sb.exec({ command, cwd, timeoutMs: 30_000 });
      expect(r.stderr).not.toMatch(bwrapSaid);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe("ran\n");
      // Asked to mount it once; the second start no longer lists it.
      expect(raced.calls()).toBe(1);
    } finally {
      await raced.sb.closeSession?.();
    }
  }

  it("a command is started again and runs once", async () => {
    await runsOnce(await racingSandbox("exec"), path.join(tmp, "ws"), "echo ran >> runs.txt; cat runs.txt", /Can't create file/);
  }, 60_000);

  it("a protected workspace file deleted while a command starts: the command is started again", async () => {
    const ws = path.join(tmp, "ws-protected");
    fs.mkdirSync(ws);
    fs.writeFileSync(path.join(ws, "keep.json"), "{}\n");
    const raced = await racingSandbox("protected", { target: path.join(ws, "keep.json"), workspace: ws, protectedPaths: ["keep.json"] });
    await runsOnce(raced, ws, "echo ran", /Can't find source path/);
  }, 60_000);

  it("a background process is started again and becomes ready", async () => {
    const { sb, calls } = await racingSandbox("background");
    const pm = new ProcessManager(sb, path.join(tmp, "ws"));
    try {
      const r = await pm.start({ name: "svc", command: "echo svc up; sleep 30", readyPattern: "svc up", readyTimeoutMs: 20_000 });
      expect(r).toMatchObject({ ok: true, name: "svc" });
      expect(calls()).toBe(1);
    } finally {
      await pm.stopAll();
      await sb.closeSession?.();
    }
  }, 60_000);
});

// The least an MCP server says: its name on initialize and one tool, newline-delimited JSON-RPC on stdio.
const TINY_MCP_SERVER = `
const rl = require("node:readline").createInterface({ input: process.stdin });
const say = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\\n");
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") say(m.id, { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "tiny", version: "1" } });
  else if (m.method === "tools/list") say(m.id, { tools: [{ name: "ping", description: "answers", inputSchema: { type: "object", properties: {} } }] });
});
`;

describe.skipIf(!report.levels.bwrap.ok)("bwrap: a host socket closed while an MCP server starts", () => {
  it("the server is started again and lists its tools", async () => {
    const { sb, calls } = await racingSandbox("mcp");
    const ws = path.join(tmp, "ws");
    fs.writeFileSync(path.join(ws, "tiny-mcp.cjs"), TINY_MCP_SERVER);
    const conn = new McpConnection("tiny", { command: "node", args: ["tiny-mcp.cjs"], risk: "read" }, { sandbox: sb, workspace: ws, allowNetwork: false });
    try {
      expect((await conn.listTools()).map((t) => t.name)).toEqual(["ping"]);
      expect(calls()).toBe(1);
    } finally {
      await conn.close();
      await sb.closeSession?.();
    }
  }, 60_000);
});

describe.skipIf(!report.levels.unshare.ok || !isRoot)("unshare: a hidden path that vanished before its mount", () => {
  it("is skipped instead of refusing the command (a protected one too); a path still there is hidden", () => {
    const ws = path.join(tmp, "ws");
    const present = path.join("/var/tmp", `ll-mask-race-${process.pid}-present`);
    fs.writeFileSync(present, "secret\n");
    socks.push(present);
    const input = {
      command: `cat '${present}'; echo ran`,
      cwd: ws,
      workspace: ws,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      allowNetwork: false,
      // Listed, then deleted before the command's mounts, as the first hidden path.
      protect: [path.join(ws, `gone-${process.pid}.json`)],
      writable: [],
      // The first was listed, then deleted before the command's mounts.
      hidden: [path.join("/var/tmp", `ll-mask-race-${process.pid}-gone`), present],
      uid: { kind: "self" as const, uid: 0, gid: 0, home: "/root", reason: "test" },
      seccompFd: null,
      tools: report.tools,
      disableUserns: false,
    };
    const argv = unshareArgv(input);
    const ran = spawnSync(argv[0]!, argv.slice(1), { cwd: ws, encoding: "utf8" });
    expect(ran.stderr).toBe("");
    expect(ran.stdout).toBe("ran\n");
    expect(ran.status).toBe(0);
  });
});
