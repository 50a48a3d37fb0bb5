// Every git process ledgerloop itself starts on the host (history for retrieval, doctor, the
// git_commit tool, a worker's clone) is started here, and nothing here lets content the agent could
// have written decide what runs. The workspace is hostile to the runner: a command can plant a bare
// repository layout at its root, a `.gitattributes` naming a filter, or (through a hole elsewhere) a
// repository config naming a program. So:
//
// - the repository is located by ledgerloop, never by git's discovery: the workspace's own `.git`
//   entry (a directory or a gitfile, never a symlink), else the nearest `.git` above the workspace
//   (outside it, the user's); `GIT_DIR`/`GIT_WORK_TREE` pin it, so a bare layout planted at the root
//   or in a folder is never read as a repository;
// - system and global configuration are not read (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL`);
// - every configuration key git documents as naming a program (hooks, fsmonitor, filters, diff and
//   merge drivers, textconv, pagers, editors, credential helpers, ssh, upload-pack, …) is overridden
//   with a harmless value through `GIT_CONFIG_COUNT` (command-line scope, above every file; keys
//   travel apart from values, so a subsection holding "=" cannot split one), both a fixed list and
//   every such key the repository's own configuration (includes followed) actually sets;
// - no transport runs (`protocol.allow=never`, `GIT_ALLOW_PROTOCOL` empty, no lazy fetch), so a
//   partial-clone promisor or `remote.*.uploadpack` in a planted config never starts a process;
// - pathspecs are literal (`:(top)` is a file name, not magic) and replace objects are ignored;
// - the runner's own `GIT_*` variables are dropped: none of them describes this repository.
import { execFile, spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import fs from "node:fs";
import { readRegularNoFollow } from "./confined-fd.js";
import path from "node:path";

/** Where a workspace's repository is, as ledgerloop located it. */
export interface HostRepo {
  gitDir: string;
  workTree: string;
}

/** A located repository, or why there is none to use. */
export type RepoLookup = HostRepo | { gitDir: null; reason: string };

/** Narrows a {@link RepoLookup} to a repository. */
export function isRepo(r: RepoLookup): r is HostRepo {
  return r.gitDir !== null;
}

/**
 * Configuration keys that name a program git may run (git-config(1)), lower-cased as git lists them;
 * `*` stands for a subsection (driver, tool, remote, URL…). Matched on the section and key only.
 */
export const PROGRAM_KEYS: readonly string[] = [
  "core.fsmonitor",
  "core.hookspath",
  "core.sshcommand",
  "core.gitproxy",
  "core.askpass",
  "core.editor",
  "core.pager",
  "core.alternaterefscommand",
  "sequence.editor",
  "credential.helper",
  "credential.*.helper",
  "diff.external",
  "diff.*.command",
  "diff.*.textconv",
  "difftool.*.cmd",
  "difftool.*.path",
  "mergetool.*.cmd",
  "mergetool.*.path",
  "filter.*.clean",
  "filter.*.smudge",
  "filter.*.process",
  "merge.*.driver",
  "gpg.program",
  "gpg.*.program",
  "pager.*",
  "alias.*",
  "remote.*.uploadpack",
  "remote.*.receivepack",
  "remote.*.vcs",
  "uploadpack.packobjectshook",
  "submodule.*.update",
  "interactive.difffilter",
  "trailer.*.command",
  "trailer.*.cmd",
  "web.browser",
  "browser.*.cmd",
  "browser.*.path",
  "man.viewer",
  "man.*.cmd",
  "man.*.path",
  "guitool.*.cmd",
  "sendemail.*",
  "sendemail.*.*",
  "instaweb.*",
  "hook.*.command",
  "ssh.variant",
];

/** What a program key is set to instead: a value under which git runs nothing. */
function harmless(key: string): string {
  const k = key.toLowerCase();
  if (k === "core.fsmonitor") return "false";
  if (k === "core.hookspath") return "/dev/null";
  if (k === "ssh.variant") return "simple";
  if (/^submodule\..+\.update$/.test(k)) return "none";
  if (/^pager\./.test(k)) return "false";
  return "";
}

/** Settings every host git call carries whatever the repository says (command-line scope). */
const FIXED: Array<[string, string]> = [
  ["core.fsmonitor", "false"],
  ["core.hookspath", "/dev/null"],
  ["core.sshcommand", ""],
  ["core.askpass", ""],
  ["core.pager", "cat"],
  ["core.editor", ""],
  ["core.attributesfile", "/dev/null"],
  ["core.alternaterefscommand", ""],
  ["credential.helper", ""],
  ["diff.external", ""],
  ["gpg.program", ""],
  ["commit.gpgsign", "false"],
  ["tag.gpgsign", "false"],
  ["log.showsignature", "false"],
  ["protocol.allow", "never"],
  ["uploadpack.packobjectshook", ""],
  ["gc.auto", "0"],
  ["maintenance.auto", "false"],
  ["core.untrackedcache", "false"],
  ["safe.bareRepository", "explicit"],
];

const KEY_PATTERNS = PROGRAM_KEYS.map((k) => {
  // Section and key are case-insensitive; a subsection is anything (dots included) between them.
  const [section, ...rest] = k.split(".");
  const last = rest.pop()!;
  const mid = rest.length ? "\\..+" : "";
  return new RegExp(`^${section}${mid}\\.${last === "*" ? "[^.]+" : last}$`, "i");
});

/** True when git documents `key` (as `git config --list` names it) as naming a program to run. */
export function namesProgram(key: string): boolean {
  return KEY_PATTERNS.some((re) => re.test(key));
}

function lstatOrNull(p: string): fs.Stats | null {
  try {
    return fs.lstatSync(p);
  } catch {
    return null;
  }
}

/** The git directory a gitfile names (relative targets from its directory), or null. */
function gitfileTarget(entry: string): string | null {
  const text = readRegularNoFollow(entry, 64 * 1024)?.toString("utf8");
  if (text === undefined) return null;
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(text);
  return m ? path.resolve(path.dirname(entry), m[1]!) : null;
}

/**
 * The repository a workspace belongs to: its own `.git` (directory or gitfile; a symlinked `.git` is
 * refused), else the nearest `.git` of a directory above it. Nothing inside the workspace but that
 * one entry is ever taken for a repository.
 */
export function locateRepo(workspace: string): RepoLookup {
  const ws = path.resolve(workspace);
  for (let dir = ws; ; dir = path.dirname(dir)) {
    const entry = path.join(dir, ".git");
    const st = lstatOrNull(entry);
    if (st?.isSymbolicLink()) return { gitDir: null, reason: `${entry} is a symlink, which ledgerloop's git does not follow` };
    if (st?.isDirectory()) return { gitDir: entry, workTree: dir };
    if (st?.isFile()) {
      const target = gitfileTarget(entry);
      if (target && lstatOrNull(target)?.isDirectory()) return { gitDir: target, workTree: dir };
      return { gitDir: null, reason: `${entry} is a gitfile that names no git directory` };
    }
    if (dir === path.dirname(dir)) return { gitDir: null, reason: "not a git repository" };
  }
}

/** The runner's environment less everything git or ssh would read, plus a fixed locale. */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(GIT_|SSH_ASKPASS|EDITOR$|VISUAL$|PAGER$|LESS)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, LC_ALL: "C", GIT_TERMINAL_PROMPT: "0" };
}

function withConfig(env: NodeJS.ProcessEnv, pairs: Array<[string, string]>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env, GIT_CONFIG_COUNT: String(pairs.length) };
  pairs.forEach(([k, v], i) => {
    out[`GIT_CONFIG_KEY_${i}`] = k;
    out[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return out;
}

/** Options of {@link hostGitEnv}. */
export interface HostGitEnvOptions {
  /**
   * Allow git's transports and the user's global configuration (credentials): only for cloning a
   * repository the user named (a worker's `--repo`), never for a workspace's own repository.
   */
  network?: boolean;
}

/** The pinned environment of the no-repository case (a clone): no discovery, only the fixed overrides. */
export function cloneEnv(opts: HostGitEnvOptions = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...baseEnv(), GIT_CEILING_DIRECTORIES: "/", GIT_NO_REPLACE_OBJECTS: "1", GIT_LITERAL_PATHSPECS: "1" };
  if (!opts.network) Object.assign(env, { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_ALLOW_PROTOCOL: "", GIT_NO_LAZY_FETCH: "1" });
  const fixed = opts.network ? FIXED.filter(([k]) => k !== "protocol.allow" && k !== "credential.helper") : FIXED;
  return withConfig(env, fixed);
}

/**
 * The environment under which git, started in `repo`, reads only that repository and runs nothing
 * its configuration names. Lists the repository's configuration first (reading it runs nothing) to
 * neutralise every program key it sets, whatever the spelling of its subsection.
 */
export async function hostGitEnv(repo: HostRepo): Promise<NodeJS.ProcessEnv> {
  const env: NodeJS.ProcessEnv = {
    ...baseEnv(),
    GIT_DIR: repo.gitDir,
    GIT_WORK_TREE: repo.workTree,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_ALLOW_PROTOCOL: "",
    GIT_NO_LAZY_FETCH: "1",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_LITERAL_PATHSPECS: "1",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_PAGER: "cat",
    GIT_EDITOR: ":",
  };
  const pairs: Array<[string, string]> = [...FIXED];
  const listed = await run("git", ["config", "--list", "--name-only", "-z"], { env: withConfig(env, FIXED), cwd: repo.workTree, timeoutMs: 5000 });
  if (listed.exitCode === 0) {
    for (const key of listed.stdout.split("\0")) {
      const k = key.trim();
      if (k && namesProgram(k)) pairs.push([k, harmless(k)]);
      // A filter marked required fails every add once its programs are gone: it becomes optional.
      const filter = /^filter\.(.+)\.required$/i.exec(k);
      if (filter) pairs.push([k, "false"]);
    }
  }
  return withConfig(env, pairs);
}

/** What one git process did. */
export interface GitResult {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** The process could not start (git missing): its error message. */
  spawnError?: string;
}

function run(file: string, args: string[], o: { env: NodeJS.ProcessEnv; cwd: string; timeoutMs: number }): Promise<GitResult> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: o.cwd, env: o.env, timeout: o.timeoutMs, maxBuffer: 32 * 1024 * 1024, encoding: "utf8" }, (err, stdout, stderr) => {
      if (!err) return resolve({ exitCode: 0, stdout, stderr, timedOut: false });
      const e = err as NodeJS.ErrnoException & { code?: unknown; killed?: boolean };
      if (typeof e.code === "string") return resolve({ exitCode: null, stdout: "", stderr: "", timedOut: false, spawnError: e.message });
      resolve({ exitCode: typeof e.code === "number" ? e.code : null, stdout, stderr, timedOut: e.killed === true });
    });
  });
}

/** Options of {@link hostGit}. */
export interface HostGitOptions {
  /** Directory git starts in (inside the work tree); the work tree's root by default. */
  cwd?: string;
  timeoutMs?: number;
  /** Extra command-line settings for this call (`-c k=v` before the subcommand). */
  config?: Array<[string, string]>;
}

/** Runs git in a located repository under {@link hostGitEnv}; never throws. */
export async function hostGit(repo: HostRepo, args: string[], opts: HostGitOptions = {}): Promise<GitResult> {
  const env = await hostGitEnv(repo);
  const extra = (opts.config ?? []).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
  return run("git", ["--no-pager", ...extra, ...args], { env, cwd: opts.cwd ?? repo.workTree, timeoutMs: opts.timeoutMs ?? 60_000 });
}

/** Starts a long git read (a log) in a located repository under {@link hostGitEnv}; stdout and stderr piped. */
export async function spawnHostGit(repo: HostRepo, args: string[], cwd?: string): Promise<ChildProcessByStdio<null, Readable, Readable>> {
  const env = await hostGitEnv(repo);
  return spawn("git", ["--no-pager", ...args], { cwd: cwd ?? repo.workTree, env, stdio: ["ignore", "pipe", "pipe"] });
}

/** Runs git with no repository (a clone into a fresh directory) under {@link cloneEnv}; never throws. */
export function cloneGit(args: string[], o: { cwd?: string; timeoutMs?: number; network?: boolean } = {}): Promise<GitResult> {
  return run("git", ["--no-pager", ...args], { env: cloneEnv({ network: o.network }), cwd: o.cwd ?? "/", timeoutMs: o.timeoutMs ?? 600_000 });
}

/** The user's own identity from their global git configuration (their file, never the workspace's). */
export async function userIdentity(): Promise<{ name: string; email: string } | null> {
  const env = { ...baseEnv(), GIT_CONFIG_NOSYSTEM: "1", GIT_CEILING_DIRECTORIES: "/" };
  const get = async (key: string) => {
    const r = await run("git", ["config", "--global", "--get", key], { env: withConfig(env, FIXED), cwd: "/", timeoutMs: 5000 });
    return r.exitCode === 0 ? r.stdout.trim() : "";
  };
  const [name, email] = [await get("user.name"), await get("user.email")];
  return name && email ? { name, email } : null;
}

/** The line of git's stderr that says why it stopped (its `fatal:` line, else the last one), at most 300 characters. */
export function gitComplaintOf(stderr: string): string {
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  return (lines.findLast((l) => l.startsWith("fatal:")) ?? lines.at(-1) ?? "").slice(0, 300);
}
