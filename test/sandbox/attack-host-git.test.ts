/**
 * Attack suite, host side: ledgerloop's OWN git (history for retrieval, doctor, the collection's
 * identity, git_commit, a worker's clone) runs on the host as the runner's user, over a workspace
 * the agent wrote. Class covered: "no ledgerloop step executes agent-controlled content on the
 * host". Every configuration key git documents as naming a program is planted in every place git
 * reads configuration or attributes from, and every ledgerloop git path is driven: nothing planted
 * may run. The first block proves each planting works against plain git, so the rest can fail.
 *
 * The keys are listed here from git-config(1), not imported from the code under test, so a key the
 * code forgets is a failing case, not a silently shared omission.
 */
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { materialise } from "../../src/queue/materialise.js";
import { repositoryIdentity } from "../../src/retrieval/collection-naming.js";
import { gitHead, gitRun, readLog } from "../../src/retrieval/git-log.js";
import { describeHistory } from "../../src/retrieval/history-doctor.js";
import { createLexicalSearcher } from "../../src/retrieval/lexical.js";
import { createLocalSandbox } from "../../src/sandbox/executor.js";
import { namesProgram } from "../../src/workspace/host-git.js";
import { gitCommitTool } from "../../src/agent/tools/git-commit.js";
import { cli } from "../helpers/cli.js";

const hasGit = spawnSync("git", ["--version"]).status === 0;

/** Program-naming keys (git-config(1)); `X` is a subsection, "a=b" a subsection that holds "=". */
const PLANTED_KEYS = [
  "core.fsmonitor",
  "core.hooksPath",
  "core.sshCommand",
  "core.gitProxy",
  "core.askPass",
  "core.editor",
  "core.pager",
  "core.alternateRefsCommand",
  "sequence.editor",
  "credential.helper",
  "credential.https://example.com.helper",
  "diff.external",
  "diff.evil.command",
  "diff.evil.textconv",
  "difftool.evil.cmd",
  "mergetool.evil.cmd",
  "filter.evil.clean",
  "filter.evil.smudge",
  "filter.evil.process",
  "filter.a=b.clean",
  "filter.a=b.process",
  "merge.evil.driver",
  "gpg.program",
  "gpg.ssh.program",
  "pager.log",
  "pager.status",
  "alias.log",
  "remote.origin.uploadpack",
  "remote.origin.receivepack",
  "uploadPack.packObjectsHook",
  "submodule.evil.update",
  "interactive.diffFilter",
  "trailer.evil.command",
  "web.browser",
  "man.evil.cmd",
  "sendemail.toCmd",
];

let area: string;
let ws: string;
let marker: string;
let script: string;

const git = (cwd: string, ...args: string[]) =>
  spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    encoding: "utf8",
    timeout: 20_000,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0" },
  });

/** Config text setting every planted key to the marker script (a `!` alias runs a shell). */
function evilConfig(extra = ""): string {
  const sections = new Map<string, string[]>();
  for (const key of PLANTED_KEYS) {
    const first = key.indexOf(".");
    const last = key.lastIndexOf(".");
    const header = first === last ? `[${key.slice(0, first)}]` : `[${key.slice(0, first)} "${key.slice(first + 1, last)}"]`;
    const value = key.startsWith("alias.") || key === "submodule.evil.update" ? `!${script}` : key === "core.hooksPath" ? path.dirname(script) : script;
    sections.set(header, [...(sections.get(header) ?? []), `\t${key.slice(last + 1)} = ${value}`]);
  }
  const body = [...sections].map(([h, lines]) => `${h}\n${lines.join("\n")}`).join("\n");
  return `${body}\n[filter "evil"]\n\trequired = true\n[filter "a=b"]\n\trequired = true\n${extra}`;
}

const ATTRIBUTES = "* filter=evil diff=evil merge=evil\n*.txt filter=a=b\n";

function ran(): string {
  return fs.existsSync(marker) ? fs.readFileSync(marker, "utf8") : "";
}

beforeEach(() => {
  area = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ll-attack-hostgit-")));
  ws = path.join(area, "ws");
  fs.mkdirSync(ws);
  marker = path.join(area, `RAN-${crypto.randomBytes(3).toString("hex")}`);
  script = path.join(area, "hooks", "evil.sh");
  fs.mkdirSync(path.dirname(script));
  fs.writeFileSync(script, `#!/bin/sh\necho "$0 $*" >> ${marker}\nexit 1\n`, { mode: 0o755 });
  // Each hook name a commit runs, in the hooksPath the planted config names.
  for (const h of ["pre-commit", "post-commit", "commit-msg", "prepare-commit-msg", "post-index-change", "reference-transaction", "fsmonitor-watchman"]) {
    fs.copyFileSync(script, path.join(path.dirname(script), h));
    fs.chmodSync(path.join(path.dirname(script), h), 0o755);
  }
});

afterEach(() => fs.rmSync(area, { recursive: true, force: true }));

/** A committed repository at `dir` with a file. */
function initRepo(dir: string): void {
  git(dir, "init", "-q", "-b", "main");
  fs.writeFileSync(path.join(dir, "a.txt"), "a\n");
  git(dir, "add", "a.txt");
  git(dir, "commit", "-qm", "init");
}

/** Makes `dir` look like a bare repository (no .git entry), with a partial-clone remote and the planted config. */
function plantBareLayout(dir: string): void {
  fs.mkdirSync(path.join(dir, "refs/heads"), { recursive: true });
  fs.mkdirSync(path.join(dir, "objects"), { recursive: true });
  fs.writeFileSync(path.join(dir, "HEAD"), "ref: refs/heads/main\n");
  // A commit the object store lacks: git asks the promisor remote for it.
  fs.writeFileSync(path.join(dir, "refs/heads/main"), `${"1".repeat(40)}\n`);
  fs.writeFileSync(
    path.join(dir, "config"),
    `[core]\n\trepositoryformatversion = 1\n\tbare = false\n\tworktree = .\n[extensions]\n\tpartialClone = origin\n[remote "origin"]\n\turl = ${area}\n\tpromisor = true\n${evilConfig()}`,
  );
}

/** Every ledgerloop step that starts git on the host, in `workspace`. */
async function driveLedgerloopGit(workspace: string): Promise<string[]> {
  await gitHead(workspace);
  await gitRun(workspace, ["rev-parse", "--show-prefix"]);
  await readLog({ cwd: workspace, range: "HEAD", maxCommits: 50, deadline: Date.now() + 10_000, onBatch: () => {} });
  await describeHistory(workspace);
  await repositoryIdentity(workspace);
  const ctx = {
    workspace,
    sandbox: createLocalSandbox(),
    searcher: createLexicalSearcher(workspace),
    commandTimeoutMs: 10_000,
    testTimeoutMs: 10_000,
    outputCapBytes: 16_384,
  };
  fs.writeFileSync(path.join(workspace, "new.txt"), `n ${Math.random()}\n`);
  const first = await gitCommitTool.run({ message: "agent commit" }, ctx);
  fs.writeFileSync(path.join(workspace, "new.txt"), `m ${Math.random()}\n`);
  const second = await gitCommitTool.run({ message: "agent commit 2", paths: ["new.txt"] }, ctx);
  return [first.output, second.output];
}

describe.skipIf(!hasGit)(`ledgerloop's own git runs nothing the workspace names${hasGit ? "" : " — SKIPPED: git is not installed"}`, () => {
  describe("each planting works against plain git (controls)", () => {
    it("a bare layout at a plain folder's root makes git run the planted fsmonitor", () => {
      plantBareLayout(ws);
      git(ws, "status");
      expect(ran()).not.toBe("");
    });

    it("a planted .git/config and .gitattributes make git add run the filter", () => {
      initRepo(ws);
      fs.appendFileSync(path.join(ws, ".git/config"), evilConfig());
      fs.writeFileSync(path.join(ws, ".gitattributes"), ATTRIBUTES);
      fs.writeFileSync(path.join(ws, "b.txt"), "b\n");
      git(ws, "add", "-A");
      expect(ran()).not.toBe("");
    });
  });

  it("a bare layout at the workspace root (no .git): ledgerloop finds no repository and runs nothing", async () => {
    plantBareLayout(ws);
    fs.writeFileSync(path.join(ws, ".gitattributes"), ATTRIBUTES);
    await driveLedgerloopGit(ws);
    expect((await gitHead(ws)).head).toBeNull();
    expect(ran()).toBe("");
  });

  it("a bare layout in a subfolder of a git workspace: git is pinned to the workspace's own repository", async () => {
    initRepo(ws);
    plantBareLayout(path.join(ws, "sub"));
    await driveLedgerloopGit(path.join(ws, "sub"));
    await driveLedgerloopGit(ws);
    expect(ran()).toBe("");
    // ...and it still works: the commits went to the real repository.
    expect(git(ws, "log", "--format=%s").stdout).toContain("agent commit");
  });

  it("every program key in .git/config, an included file, an includeIf file and the worktree config, with attributes in the tree and info/", async () => {
    initRepo(ws);
    const inc = path.join(ws, "included.cfg");
    fs.writeFileSync(inc, evilConfig());
    fs.writeFileSync(path.join(ws, "cond.cfg"), evilConfig());
    fs.appendFileSync(
      path.join(ws, ".git/config"),
      `${evilConfig()}[include]\n\tpath = ${inc}\n[includeIf "gitdir:${ws}/"]\n\tpath = ${path.join(ws, "cond.cfg")}\n[extensions]\n\tworktreeConfig = true\n`,
    );
    fs.writeFileSync(path.join(ws, ".git/config.worktree"), evilConfig());
    fs.writeFileSync(path.join(ws, ".gitattributes"), ATTRIBUTES);
    fs.mkdirSync(path.join(ws, ".git/info"), { recursive: true });
    fs.writeFileSync(path.join(ws, ".git/info/attributes"), ATTRIBUTES);
    fs.writeFileSync(path.join(ws, "a.txt"), "changed\n");
    await driveLedgerloopGit(ws);
    expect(ran()).toBe("");
    expect(git(ws, "log", "--format=%s", "-1").stdout.trim()).toBe("agent commit 2");
  });

  it("a worker's clone of a repository whose config and attributes name programs runs none of them", async () => {
    initRepo(ws);
    fs.writeFileSync(path.join(ws, ".gitattributes"), ATTRIBUTES);
    git(ws, "add", ".gitattributes");
    git(ws, "commit", "-qm", "attrs");
    // The clone's own config is git's; the planted one is on the source, where a local clone reads it.
    fs.appendFileSync(path.join(ws, ".git/config"), evilConfig());
    const root = path.join(area, "worker");
    const m = await materialise({ kind: "repo", repo: ws } as never, { root, thread: "t1", commit: null, empty: false });
    expect(fs.readFileSync(path.join(m.dir, "a.txt"), "utf8")).toBe("a\n");
    expect(ran()).toBe("");
  });

  it("the CLI's search, index and doctor over a workspace whose root is a planted bare layout run nothing", () => {
    plantBareLayout(ws);
    fs.writeFileSync(path.join(ws, "code.ts"), "export const health = 1;\n");
    for (const args of [
      ["index", "-w", ws, "--embedder", "hashed"],
      ["search", "health", "-w", ws],
      ["doctor", "-w", ws],
    ]) {
      const r = cli(args, { timeoutMs: 120_000 });
      expect(r.signal, `${args[0]}: ${r.stderr}`).toBeNull();
    }
    expect(ran()).toBe("");
  }, 300_000);
});

describe.skipIf(!hasGit)("git_commit takes paths literally and commits only the workspace's", () => {
  it("pathspec magic (:(top), :/) stages nothing outside the workspace, and the user's staged work elsewhere stays uncommitted", async () => {
    const repo = path.join(area, "mono");
    fs.mkdirSync(path.join(repo, "pkg"), { recursive: true });
    fs.mkdirSync(path.join(repo, "other"), { recursive: true });
    fs.writeFileSync(path.join(repo, "other/lib.ts"), "v1\n");
    initRepo(repo);
    git(repo, "add", "-A");
    git(repo, "commit", "-qm", "base");
    fs.writeFileSync(path.join(repo, "other/lib.ts"), "v2 (the user's edit)\n");
    fs.writeFileSync(path.join(repo, "private.key"), "untracked private\n");
    fs.writeFileSync(path.join(repo, "other/staged.ts"), "staged by the user\n");
    git(repo, "add", "other/staged.ts");
    const wsPkg = path.join(repo, "pkg");
    fs.writeFileSync(path.join(wsPkg, "mine.ts"), "agent\n");
    const ctx = {
      workspace: wsPkg,
      sandbox: createLocalSandbox(),
      searcher: createLexicalSearcher(wsPkg),
      commandTimeoutMs: 10_000,
      testTimeoutMs: 10_000,
      outputCapBytes: 16_384,
    };
    for (const magic of [":(top)", ":/", ":(top,glob)**"]) {
      const r = await gitCommitTool.run({ message: `magic ${magic}`, paths: [magic] }, ctx);
      expect(r.status, r.output).toBe("error");
    }
    const ok = await gitCommitTool.run({ message: "pkg only" }, ctx);
    expect(ok.status, ok.output).toBe("ok");
    const files = git(repo, "log", "--name-only", "--format=", "-1").stdout.trim().split("\n");
    expect(files).toEqual(["pkg/mine.ts"]);
    // The user's own staged file is still staged, not committed by the agent.
    expect(git(repo, "diff", "--cached", "--name-only").stdout.trim()).toBe("other/staged.ts");
    expect(git(repo, "ls-files", "private.key").stdout.trim()).toBe("");
  });
});

describe("the code's list of program keys covers git's documented ones", () => {
  it.each(PLANTED_KEYS)("%s", (key) => {
    expect(namesProgram(key)).toBe(true);
  });
  it("and leaves ordinary keys alone", () => {
    for (const k of ["user.email", "core.autocrlf", "remote.origin.url", "filter.lfs.required", "diff.renames", "core.quotepath"])
      expect(namesProgram(k)).toBe(false);
  });
});
