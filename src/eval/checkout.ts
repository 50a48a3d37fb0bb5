import fs from "node:fs";
import path from "node:path";
import { cloneGit, gitComplaintOf, hostGit, type GitResult, type HostRepo } from "../workspace/host-git.js";
import { CliError } from "../errors.js";

// Tasks whose workspace is a git repository at a commit (task.json `repo` + `commit`, or a
// SWE-bench instance). The repository is cloned next to the run, never into its workspace: the
// workspace gets the commit's files and no .git, so nothing the agent does can touch the base the
// diff is taken against. Every git process is started through workspace/host-git.ts: the workspace
// is the agent's and is treated as hostile (no attributes, filters or hooks it plants run).

/** Where a task's files come from when they are a commit of a repository. */
export interface RepoSource {
  /** A URL, or a path (relative to the task folder for task.json). */
  repo: string;
  commit: string;
}

/** True for what git reads as a remote (scheme://, or scp-like user@host:path). */
export function isRemote(repo: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[^/]+@[^:]+:/.test(repo);
}

function failed(what: string, r: GitResult): Error {
  return new Error(`${what}: ${r.spawnError ?? (gitComplaintOf(r.stderr) || `git exited with ${r.exitCode}`)}`);
}

/**
 * Clones `source` into `gitHome` (the runner's, outside the workspace) and writes the files of its
 * commit into `workspace`; returns the repository pinned to that work tree, for the diff later.
 */
export async function checkoutSource(source: RepoSource, gitHome: string, workspace: string): Promise<HostRepo> {
  const repo = isRemote(source.repo) ? source.repo : path.resolve(source.repo);
  fs.rmSync(gitHome, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(gitHome), { recursive: true });
  // The repository is one the user named in the suite (as a worker's --repo): the clone may use
  // the network and the user's credentials; nothing after it does.
  const clone = await cloneGit(["clone", "--quiet", "--no-checkout", repo, gitHome], { network: true });
  if (clone.exitCode !== 0) throw new CliError(`cannot clone ${source.repo}: ${clone.spawnError ?? gitComplaintOf(clone.stderr)}`, 2, "EVAL_SUITE_INVALID");
  fs.mkdirSync(workspace, { recursive: true });
  const pinned: HostRepo = { gitDir: path.join(gitHome, ".git"), workTree: fs.realpathSync(workspace) };
  const has = await hostGit(pinned, ["cat-file", "-e", `${source.commit}^{commit}`]);
  if (has.exitCode !== 0) throw new CliError(`commit ${source.commit} is not in ${source.repo}`, 2, "EVAL_SUITE_INVALID");
  const co = await hostGit(pinned, ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", "--detach", source.commit]);
  if (co.exitCode !== 0) throw failed(`cannot check out ${source.commit} of ${source.repo}`, co);
  return pinned;
}

/**
 * The changes of `paths` in the workspace against the commit, as a patch `git apply` takes (new
 * files included, binary ones as binary patches). Call {@link changedPaths} first: it stages the work tree.
 */
export async function diffAgainst(repo: HostRepo, commit: string, paths: string[]): Promise<string> {
  if (paths.length === 0) return "";
  // Paths are literal (host-git pins GIT_LITERAL_PATHSPECS): a file named like pathspec magic is that file.
  const diff = await hostGit(repo, ["-c", "core.quotepath=false", "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-renames", "--full-index", commit, "--", ...paths]);
  if (diff.exitCode !== 0) throw failed("cannot diff the workspace", diff);
  return diff.stdout;
}

/**
 * The paths added, modified and deleted in the workspace against the commit. Files the repository
 * ignores (its .gitignore: build output, caches) are not changes.
 */
export async function changedPaths(repo: HostRepo, commit: string): Promise<{ added: string[]; modified: string[]; deleted: string[] }> {
  // The runner's own index (in its git home) records the work tree as it is now.
  const add = await hostGit(repo, ["add", "--all", "--", "."]);
  if (add.exitCode !== 0) throw failed("cannot read the workspace's changes", add);
  const r = await hostGit(repo, ["diff", "--cached", "--name-status", "--no-renames", "-z", commit]);
  if (r.exitCode !== 0) throw failed("cannot list the workspace's changes", r);
  const parts = r.stdout.split("\0").filter(Boolean);
  const out = { added: [] as string[], modified: [] as string[], deleted: [] as string[] };
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const [status, file] = [parts[i]!, parts[i + 1]!];
    (status === "A" ? out.added : status === "D" ? out.deleted : out.modified).push(file);
  }
  return out;
}
