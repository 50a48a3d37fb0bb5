// Read-only access to a workspace's git history through the `git` binary, started the one way
// ledgerloop starts git on the host (workspace/host-git.ts): the repository located by us and pinned,
// nothing it configures run, no transport, no optional locks (nothing written to .git).
import { gitComplaintOf, hostGit, isRepo, locateRepo, spawnHostGit } from "../workspace/host-git.js";

/** One commit as read from `git log`: its files are workspace-relative. */
export interface GitCommit {
  hash: string;
  /** Committer time, seconds since the epoch. */
  ts: number;
  subject: string;
  body: string;
  files: string[];
}

const READ_CONFIG: Array<[string, string]> = [["core.quotePath", "false"]];

/** Runs a short git command in `cwd`; resolves stdout, or why it failed (git's own words, or that it took too long). */
export async function gitRun(cwd: string, args: string[], timeoutMs = 5000): Promise<{ stdout: string } | { error: string; timedOut: boolean }> {
  const repo = locateRepo(cwd);
  if (!isRepo(repo)) return { error: `fatal: ${repo.reason}`, timedOut: false };
  const r = await hostGit(repo, args, { cwd, timeoutMs, config: READ_CONFIG });
  if (r.exitCode === 0) return { stdout: r.stdout };
  if (r.spawnError) return { error: r.spawnError, timedOut: false };
  return { error: r.timedOut ? `git took over ${timeoutMs / 1000} s` : gitComplaint(r.stderr) || `git exited with ${r.exitCode}`, timedOut: r.timedOut };
}

/** Runs a short git command in `cwd`; resolves stdout, or null when git fails or is missing. */
export async function gitOutput(cwd: string, args: string[], timeoutMs = 5000): Promise<string | null> {
  const r = await gitRun(cwd, args, timeoutMs);
  return "stdout" in r ? r.stdout : null;
}

/** The line of git's stderr that says why it stopped (its `fatal:` line, else the last one), at most 300 characters. */
export const gitComplaint = gitComplaintOf;

/** What git says about the workspace: the HEAD commit and whether the clone is shallow; null when not a repository. */
export async function gitHead(cwd: string): Promise<{ head: string; shallow: boolean } | { head: null; reason: string; refused?: true }> {
  const inside = await gitRun(cwd, ["rev-parse", "--is-inside-work-tree"]);
  if ("error" in inside) {
    if (/not a git repository/i.test(inside.error)) return { head: null, reason: "not a git repository" };
    if (/\bENOENT\b/.test(inside.error)) return { head: null, reason: "git is not installed" };
    // A repository git will not read: another user's (safe.directory), a broken config. Its own
    // words say which; ledgerloop does not override that check.
    const allow = /dubious ownership/i.test(inside.error) ? `; \`git config --global --add safe.directory ${cwd}\` lets it` : "";
    return { head: null, reason: `git refuses to read this repository (${inside.error})${allow}`, refused: true };
  }
  if (inside.stdout.trim() !== "true") return { head: null, reason: "not a git work tree" };
  const head = (await gitOutput(cwd, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]))?.trim();
  if (!head) return { head: null, reason: "the repository has no commit yet" };
  const shallow = (await gitOutput(cwd, ["rev-parse", "--is-shallow-repository"]))?.trim() === "true";
  return { head, shallow };
}

/** True when `ancestor` is reachable from `head` (false also when git does not know `ancestor`). */
export async function isAncestor(cwd: string, ancestor: string, head: string): Promise<boolean> {
  return (await gitOutput(cwd, ["merge-base", "--is-ancestor", ancestor, head])) !== null;
}

export interface ReadLogOptions {
  cwd: string;
  /** `HEAD`, or `<old>..<new>` for only the commits since a remembered HEAD. */
  range: string;
  /** Stop (as "complete") on reaching this commit, which is not read. */
  stopAt?: string;
  maxCommits: number;
  /**
   * Stop reading (and stop git) at this time (ms since the epoch); what was read stays. A function is
   * asked again as the read goes on, so a caller can start the clock later (see HistorySource.sync).
   */
  deadline: number | (() => number);
  /** Receives commits in batches, newest first; may be async (the reader waits for it). A throw ends the read as an error. */
  onBatch: (commits: GitCommit[]) => void | Promise<void>;
  /** Asked after each batch: true stops the read (and git) there, as "stopped". */
  shouldStop?: () => boolean;
  batchSize?: number;
}

/** Why a log read stopped. */
export type ReadEnd = "complete" | "count-cap" | "time-cap" | "stopped" | "error";

/**
 * Streams `git log --name-only` (newest first, merges skipped: their diff repeats their parents'),
 * parsing records as they arrive so a huge history is read only as far as the caps allow.
 */
export async function readLog(opts: ReadLogOptions): Promise<{ end: ReadEnd; read: number; error?: string }> {
  const batchSize = opts.batchSize ?? 500;
  const repo = locateRepo(opts.cwd);
  if (!isRepo(repo)) return { end: "error", read: 0, error: repo.reason };
  const child = await spawnHostGit(
    repo,
    [
      "-c",
      "core.quotePath=false",
      "log",
      "-z",
      "--no-merges",
      "--no-renames",
      "--no-ext-diff",
      "--no-textconv",
      "--relative",
      "--name-only",
      `--max-count=${opts.maxCommits}`,
      "--format=%x1e%H%x1f%ct%x1f%s%x1f%b%x1f",
      opts.range,
      "--",
    ],
    opts.cwd,
  );
  return new Promise((resolve) => {
    let buf = "";
    let read = 0;
    let batch: GitCommit[] = [];
    let end: ReadEnd | null = null;
    let stderr = "";
    let paused: Promise<void> = Promise.resolve();
    const deadline = typeof opts.deadline === "number" ? () => opts.deadline as number : opts.deadline;
    // Checked now and then rather than one timer, since the deadline may move.
    const timer = setInterval(() => Date.now() > deadline() && stop("time-cap"), 100);
    const stop = (why: ReadEnd) => {
      if (end) return;
      end = why;
      child.kill("SIGTERM");
    };
    const flush = () => {
      if (batch.length === 0) return;
      const b = batch;
      batch = [];
      // Back-pressure: git waits while a batch is stored, so memory stays bounded.
      child.stdout.pause();
      paused = paused.then(async () => {
        try {
          await opts.onBatch(b);
        } catch (err) {
          // A batch that cannot be stored ends the read (git is stopped) instead of leaving git paused
          // and this promise chain rejected with no one to catch it.
          stderr = err instanceof Error ? err.message : String(err);
          stop("error");
        }
        if (!end && Date.now() > deadline()) stop("time-cap");
        if (!end && opts.shouldStop?.()) stop("stopped");
        child.stdout.resume();
      });
    };
    const take = (rec: string) => {
      const c = parseRecord(rec);
      if (!c || end) return;
      if (c.hash === opts.stopAt) return stop("complete");
      batch.push(c);
      read++;
      if (read >= opts.maxCommits) stop("count-cap");
      if (batch.length >= batchSize || end) flush();
    };
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      buf += chunk;
      let at: number;
      // A record is complete when the next one starts.
      while ((at = buf.indexOf("\x1e", 1)) > 0) {
        take(buf.slice(0, at));
        buf = buf.slice(at);
      }
    });
    child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    child.on("error", (err) => {
      end ??= "error";
      stderr ||= err.message;
    });
    child.on("close", (code) => {
      clearInterval(timer);
      if (!end && buf) take(buf);
      flush();
      if (!end) end = code === 0 ? "complete" : "error";
      const why: ReadEnd = end;
      void paused.then(() => resolve({ end: why, read, ...(why === "error" ? { error: gitComplaint(stderr) || `git log exited with ${code}` } : {}) }));
    });
  });
}

/** One `%x1e`-led record: header fields split by \x1f, then NUL-separated paths. */
function parseRecord(rec: string): GitCommit | null {
  if (!rec.startsWith("\x1e")) return null;
  const headEnd = rec.lastIndexOf("\x1f");
  if (headEnd < 0) return null;
  const [hash, ts, subject, body] = rec.slice(1, headEnd).split("\x1f");
  if (!hash || !/^[0-9a-f]{40,64}$/.test(hash)) return null;
  const files = rec
    .slice(headEnd + 1)
    .split("\0")
    .map((p) => p.replace(/^\n/, ""))
    .filter((p) => p.length > 0);
  return { hash, ts: Number(ts) || 0, subject: subject ?? "", body: body ?? "", files };
}
