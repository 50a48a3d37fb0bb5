/**
 * Attack suite, git part three (issue 32, finding 9 and the bare layout of finding 1): ways to give
 * the user's git a repository of the agent's without a `.git` entry the guard could see by name.
 * - a directory laid out as a bare repository (HEAD, objects/, refs/, a config with core.worktree
 *   and core.fsmonitor): git's discovery takes the directory itself for a git directory;
 * - a `.git` under a directory whose name is not valid UTF-8 (read as a string, the name came back
 *   changed and the walk never found what was under it).
 * Each case runs the hostile command in the sandbox, then the user's git ON THE HOST in that folder.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { detectIsolation } from "../../src/sandbox/detect.js";
import { createSandbox, type ConfiguredSandbox } from "../../src/sandbox/executor.js";
import { LEVELS } from "../../src/sandbox/isolation.js";

const report = detectIsolation();
const hasGit = spawnSync("git", ["--version"]).status === 0;

let area: string;
let ws: string;
let marker: string;

/** The user's git on the host, in the folder `dir` (shell text, so a name need not be UTF-8), as a prompt and a commit run it. */
function userGitIsSafe(dir: string): boolean {
  const git = (args: string) =>
    spawnSync("sh", ["-c", `cd ${dir} 2>/dev/null || exit 0; git ${args}`], { cwd: ws, encoding: "utf8", env: { ...process.env, GIT_TERMINAL_PROMPT: "0" } });
  git("status --short");
  git("-c user.name=t -c user.email=t@t commit -q --allow-empty -m probe");
  return !fs.existsSync(marker);
}

/** Shell text: an executable at `script` that touches the marker, and a bare layout in `dir` whose config runs it. */
function bareLayout(dir: string, script: string, worktree: string): string {
  return (
    `printf '#!/bin/sh\\ntouch ${marker}\\nexit 1\\n' > ${script}; chmod +x ${script}; ` +
    `mkdir -p ${dir}/objects ${dir}/refs && echo 'ref: refs/heads/main' > ${dir}/HEAD && ` +
    `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = ${worktree}\\n\\tfsmonitor = ${script}\\n' > ${dir}/config`
  );
}

/** Shell text: a repository with the planted fsmonitor under a directory named with bytes \xff\xfe. */
function oddNamedRepo(script: string): string {
  return (
    `printf '#!/bin/sh\\ntouch ${marker}\\nexit 1\\n' > ${script}; chmod +x ${script}; ` +
    `d=$(printf '\\377\\376'); mkdir -p "$d/x" && git init -q "$d/x" && printf '[core]\\n\\tfsmonitor = ${script}\\n' >> "$d/x/.git/config"`
  );
}
const ODD = `"$(printf '\\377\\376')/x"`;

beforeEach(() => {
  area = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-attack-layout-")));
  ws = path.join(area, "ws");
  fs.mkdirSync(ws);
  marker = path.join(area, `PWNED-${crypto.randomBytes(3).toString("hex")}`);
});

afterEach(() => {
  fs.rmSync(area, { recursive: true, force: true });
});

function initRepo(): void {
  const g = (...a: string[]) => spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...a], { cwd: ws });
  g("init", "-q");
  fs.writeFileSync(path.join(ws, "a.txt"), "a\n");
  g("add", "a.txt");
  g("commit", "-qm", "init");
}

describe.skipIf(!hasGit)("the attacks work without the sandbox (so the cases below can fail)", () => {
  it("a bare layout in a subfolder runs its fsmonitor for the user's git there", () => {
    initRepo();
    spawnSync("sh", ["-c", bareLayout("sub", path.join(area, "fsmon.sh"), path.join(ws, "sub"))], { cwd: ws });
    expect(userGitIsSafe("sub")).toBe(false);
  });

  it("a repository under a directory named with invalid UTF-8 runs its fsmonitor", () => {
    initRepo();
    spawnSync("sh", ["-c", oddNamedRepo(path.join(area, "fsmon.sh"))], { cwd: ws });
    expect(userGitIsSafe(ODD)).toBe(false);
  });
});

describe.each(LEVELS)("level %s", (level) => {
  const probe = report.levels[level];
  describe.skipIf(!probe.ok || !hasGit)(probe.ok ? (hasGit ? "available" : "SKIPPED: git is not installed") : `SKIPPED: ${probe.detail}`, () => {
    let sb: ConfiguredSandbox;
    beforeAll(() => {
      sb = createSandbox({ level });
    });
    const run = (command: string) => sb.exec({ command, cwd: ws, workspace: ws, timeoutMs: 20_000 });
    // The script sits outside the workspace (in the test's area) so that only the layout is in question.
    const script = () => path.join(ws, "planted-fsmon.sh");

    it("a bare layout in a subfolder of the user's repository: HEAD and config moved away, the folder kept", async () => {
      initRepo();
      fs.mkdirSync(path.join(ws, "sub"));
      fs.writeFileSync(path.join(ws, "sub/keep.txt"), "mine\n");
      const r = await run(bareLayout("sub", script(), path.join(ws, "sub")));
      expect(userGitIsSafe("sub"), "the user's git in sub/ ran the agent's fsmonitor").toBe(true);
      expect(r.violations?.join("\n")).toMatch(/moved away HEAD, config of sub, which the command laid out as a git repository/);
      expect(fs.readFileSync(path.join(ws, "sub/keep.txt"), "utf8")).toBe("mine\n");
      expect(fs.existsSync(path.join(ws, "sub/HEAD"))).toBe(false);
    });

    it("a bare layout deeper down, found from a folder below it", async () => {
      initRepo();
      await run(`mkdir -p a/b/c && ${bareLayout("a/b", script(), path.join(ws, "a/b"))}`);
      expect(userGitIsSafe("a/b/c")).toBe(true);
    });

    it("a bare layout at the root of a workspace that is not a repository: the root's HEAD and config moved away", async () => {
      const r = await run(bareLayout(".", script(), ws));
      expect(userGitIsSafe(".")).toBe(true);
      expect(fs.existsSync(path.join(ws, "HEAD"))).toBe(false);
      expect(fs.existsSync(path.join(ws, "config"))).toBe(false);
      // The directories stay (they may be the user's); without HEAD they are no repository.
      expect(fs.existsSync(path.join(ws, "objects"))).toBe(true);
      expect(r.violations?.join("\n")).toMatch(/moved away HEAD, config of \./);
    });

    it("a .git under a directory whose name is not valid UTF-8 is moved away", async () => {
      initRepo();
      const r = await run(oddNamedRepo(script()));
      expect(userGitIsSafe(ODD)).toBe(true);
      const odd = Buffer.concat([Buffer.from(`${ws}/`), Buffer.from([0xff, 0xfe]), Buffer.from("/x/.git")]);
      expect(fs.existsSync(odd)).toBe(false);
      expect(r.violations?.join("\n")).toMatch(/moved away .*x\/\.git, which the command created/);
      // The user's own repository is untouched.
      expect(spawnSync("git", ["log", "--format=%s", "-1"], { cwd: ws, encoding: "utf8" }).stdout.trim()).toMatch(/^(init|probe)$/);
    });

    it("a bare layout that was there before the first command is the user's: left alone", async () => {
      initRepo();
      spawnSync("git", ["init", "-q", "--bare", "fixtures/repo.git"], { cwd: ws });
      const r = await run("echo hi");
      expect(r.violations ?? []).toEqual([]);
      expect(fs.existsSync(path.join(ws, "fixtures/repo.git/HEAD"))).toBe(true);
    });
  });
});
