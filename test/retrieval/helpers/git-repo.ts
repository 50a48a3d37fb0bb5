import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/** A commit for {@link makeRepo}: its message and the files it writes (content replaces the old). */
export interface RepoCommit {
  message: string;
  files: Record<string, string>;
  /** Committer time, seconds since the epoch (default: one day after the previous commit). */
  ts?: number;
}

const ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  HOME: "/nonexistent",
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
};

/** Runs git in `dir` with a neutral identity and config; returns stdout. */
export function git(dir: string, args: string[], input?: string): string {
  return execFileSync("git", args, { cwd: dir, env: ENV, encoding: "utf8", maxBuffer: 256 * 1024 * 1024, ...(input !== undefined ? { input } : {}) });
}

/**
 * Builds history fast with `git fast-import` (thousands of commits in a second), then checks out the
 * last commit's tree into `dir`. Appends to an existing repository's branch when there is one.
 */
export function makeRepo(dir: string, commits: RepoCommit[], opts: { startTs?: number } = {}): void {
  fs.mkdirSync(dir, { recursive: true });
  if (!fs.existsSync(path.join(dir, ".git"))) git(dir, ["init", "-q", "-b", "main"]);
  let parent = "";
  try {
    parent = git(dir, ["rev-parse", "--verify", "--quiet", "refs/heads/main"]).trim();
  } catch {
    parent = "";
  }
  let ts = opts.startTs ?? (parent ? Number(git(dir, ["log", "-1", "--format=%ct"]).trim()) : 1_600_000_000);
  const out: string[] = [];
  commits.forEach((c, i) => {
    ts = c.ts ?? ts + 86400;
    const msg = Buffer.from(c.message, "utf8");
    out.push(`commit refs/heads/main`, `mark :${i + 1}`, `committer t <t@example.com> ${ts} +0000`, `data ${msg.length}`, c.message);
    if (i === 0 && parent) out.push(`from ${parent}`);
    for (const [p, content] of Object.entries(c.files)) {
      out.push(`M 100644 inline ${p}`, `data ${Buffer.byteLength(content)}`, content);
    }
    out.push("");
  });
  git(dir, ["fast-import", "--quiet"], out.join("\n") + "\n");
  git(dir, ["checkout", "-q", "-f", "main"]);
}
