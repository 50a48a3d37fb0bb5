import fs from "node:fs";
import path from "node:path";
import { ConfigError, errorMessage } from "../errors.js";
import { loadTrajectory } from "../models/scripted.js";
import { cloneGit, gitComplaintOf, hostGit, isRepo, locateRepo } from "../workspace/host-git.js";
import type { RunSource } from "./run-queue.js";

// What `submit` checks before it queues anything: what a worker would otherwise find out ~15 s
// later, after taking the run (a missing workspace, an unreachable repository, an unknown ref or
// model, a scripted file that is not there). Each failure is one ConfigError naming the flag.
// Checked from the submitting machine: a workspace or repository it reaches may still be out of a
// worker's reach, which the worker reports (and releases the run) as before.

/** A repository given as a URL (scheme://, or scp-like user@host:path) rather than a local path. */
export function isRemoteRepo(repo: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[^/]+@[^:]+:/.test(repo);
}

/** A ref that names a commit by its hash (which ls-remote cannot list). */
const COMMIT_HASH = /^[0-9a-f]{7,64}$/i;

/**
 * Checks a run's source and returns it as workers should see it: a workspace or a local
 * repository path made absolute (a worker started elsewhere would read a relative one against its own cwd).
 */
export async function checkSource(source: RunSource, o: { timeoutMs?: number } = {}): Promise<RunSource> {
  if (source.kind === "workspace") {
    const dir = path.resolve(source.path);
    let st: fs.Stats;
    try {
      st = fs.statSync(dir);
    } catch {
      throw new ConfigError(`--workspace ${dir} does not exist on this machine; give a directory every worker can read and write`);
    }
    if (!st.isDirectory()) throw new ConfigError(`--workspace ${dir} is not a directory`);
    return { kind: "workspace", path: dir };
  }
  const remote = isRemoteRepo(source.repo);
  const repo = remote ? source.repo : path.resolve(source.repo);
  if (!remote && !fs.existsSync(repo)) throw new ConfigError(`--repo ${repo} does not exist on this machine`);
  // ls-remote reads the repository's refs the way a worker's clone would (the user's credentials,
  // git's transports), without fetching anything and without running anything a repository names.
  const refs = await cloneGit(["ls-remote", "--", repo], { network: true, timeoutMs: o.timeoutMs ?? 30_000 });
  if (refs.exitCode !== 0) {
    const why = refs.timedOut
      ? `no answer within ${Math.round((o.timeoutMs ?? 30_000) / 1000)} s`
      : (refs.spawnError ?? (gitComplaintOf(refs.stderr) || `git exited with ${refs.exitCode}`));
    throw new ConfigError(`--repo ${source.repo} is not reachable from this machine: ${why}`);
  }
  const names = refs.stdout
    .split("\n")
    .map((l) => l.split("\t")[1]?.trim())
    .filter((n): n is string => Boolean(n));
  if (!names.includes("HEAD") && !source.ref) throw new ConfigError(`--repo ${source.repo} has no HEAD (an empty repository?); give --ref`);
  if (source.ref && !(await refResolves(repo, remote, source.ref, names))) {
    throw new ConfigError(`--ref ${source.ref} is not a branch, tag or commit of ${source.repo}`);
  }
  return { kind: "repo", repo, ...(source.ref ? { ref: source.ref } : {}) };
}

async function refResolves(repo: string, remote: boolean, ref: string, names: string[]): Promise<boolean> {
  const full = [ref, `refs/heads/${ref}`, `refs/tags/${ref}`, `refs/remotes/${ref}`];
  if (names.some((n) => full.includes(n))) return true;
  if (!COMMIT_HASH.test(ref)) return false;
  // A commit hash: a local repository can be asked (read-only, nothing its config names is run);
  // a remote one cannot without fetching it, so its worker is the one to find out.
  if (remote) return true;
  const located = locateRepo(repo);
  if (!isRepo(located)) return false;
  return (await hostGit(located, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`])).exitCode === 0;
}

/**
 * Checks a model spec (`flag` names where it came from) and returns it as workers should see it: a
 * scripted trajectory's path made absolute, after reading and validating the file here.
 */
export function checkModelSpec(spec: string, flag: string): string {
  const colon = spec.indexOf(":");
  const kind = colon === -1 ? spec : spec.slice(0, colon);
  const rest = colon === -1 ? "" : spec.slice(colon + 1).trim();
  if (kind === "scripted" && rest) {
    const file = path.resolve(rest);
    if (!fs.existsSync(file)) throw new ConfigError(`${flag} scripted:${rest}: the trajectory file ${file} does not exist`);
    try {
      loadTrajectory(file);
    } catch (err) {
      throw new ConfigError(`${flag} scripted:${rest}: ${errorMessage(err)}`);
    }
    return `scripted:${file}`;
  }
  // The key and endpoint are the workers' own (their environment), so only the form is checked here.
  if (kind === "openai" && rest) return spec;
  throw new ConfigError(`${flag} "${spec}" is not a model ledgerloop knows: use openai:<model-name> or scripted:<trajectory.json>`);
}
