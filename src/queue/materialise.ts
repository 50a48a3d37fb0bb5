import fs from "node:fs";
import path from "node:path";
import { LedgerloopError, errorMessage } from "../errors.js";
import { cloneGit, hostGit, isRepo, locateRepo } from "../workspace/host-git.js";
import type { RunSource } from "./run-queue.js";

// A worker's copy of a run's files. A `workspace` source is a directory every worker can read and
// write (a shared volume): used as it is. A `repo` source is cloned into the worker's own directory
// at the commit the run was pinned to; the revisions the run recorded are put on top by the worker
// (from the PostgreSQL revision store), so no file system is shared between machines.

export class MaterialiseError extends LedgerloopError {
  constructor(message: string, opts?: { cause?: unknown }) {
    super("WORKSPACE_UNAVAILABLE", message, opts);
  }
}

/**
 * git for a worker's clone, started the host-safe way (workspace/host-git.ts): the clone itself may
 * use the network and the user's credentials (the repository is the one the user submitted); every
 * later call is pinned to the clone, with nothing its configuration names run.
 */
async function git(args: string[], cwd?: string, timeoutMs = 600_000): Promise<string> {
  const r = cwd
    ? await (async () => {
        const repo = locateRepo(cwd);
        if (!isRepo(repo)) throw new Error(repo.reason);
        return hostGit(repo, ["-c", "advice.detachedHead=false", ...args], { cwd, timeoutMs });
      })()
    : await cloneGit(args, { timeoutMs, network: true });
  if (r.exitCode === 0) return r.stdout;
  throw new Error((r.spawnError ?? (r.stderr || `git exited with ${r.exitCode}`)).trim().split("\n").at(-1));
}

export interface Materialised {
  dir: string;
  /** The commit a repo source is at (null for a workspace source). */
  commit: string | null;
}

/**
 * Makes the run's files available under `root` (repo sources) and returns their directory.
 * `commit`: the commit the run was pinned to by an earlier worker, if any. `empty`: leave the
 * work tree empty (index at the commit) because a recorded revision will be written into it.
 * Every failure is a MaterialiseError naming the source and the cause.
 */
export async function materialise(source: RunSource, o: { root: string; thread: string; commit: string | null; empty: boolean }): Promise<Materialised> {
  if (source.kind === "workspace") {
    const dir = path.resolve(source.path);
    try {
      if (!fs.statSync(dir).isDirectory()) throw new Error("not a directory");
      fs.accessSync(dir, fs.constants.R_OK | fs.constants.W_OK | fs.constants.X_OK);
    } catch (err) {
      throw new MaterialiseError(`workspace ${dir} of run ${o.thread} is not usable on this worker: ${errorMessage(err)}`, { cause: err });
    }
    return { dir: fs.realpathSync(dir), commit: null };
  }
  const dir = path.join(o.root, o.thread);
  // A fresh clone each time this worker takes the run: whatever an earlier holding left is not trusted.
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(o.root, { recursive: true });
  const repo = /^[a-z][a-z0-9+.-]*:\/\//i.test(source.repo) || /^[^/]+@[^:]+:/.test(source.repo) ? source.repo : path.resolve(source.repo);
  try {
    await git(["clone", "--quiet", "--no-checkout", repo, dir]);
    let commit = o.commit;
    if (!commit) commit = (await git(["rev-parse", "--verify", `${source.ref ?? "HEAD"}^{commit}`], dir)).trim();
    else
      await git(["cat-file", "-e", `${commit}^{commit}`], dir).catch(() => {
        throw new Error(`commit ${commit} (pinned when the run started) is no longer in ${source.repo}`);
      });
    if (o.empty) {
      // HEAD and the index at the commit, the work tree empty: the revision written next is then
      // what `git status` compares with the commit.
      await git(["update-ref", "--no-deref", "HEAD", commit], dir);
      await git(["read-tree", commit], dir);
    } else {
      await git(["checkout", "--quiet", "--detach", commit], dir);
    }
    return { dir: fs.realpathSync(dir), commit };
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new MaterialiseError(`cannot materialise run ${o.thread} from ${source.repo}${source.ref ? ` at ${source.ref}` : ""}: ${errorMessage(err)}`, {
      cause: err,
    });
  }
}
