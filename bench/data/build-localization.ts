// Builds a file-localization dataset from a repository's history: each kept commit's message is a
// query, the source files it changed (as they existed in its parent) are the answer, and the
// parent's tree is the corpus. Only ids, messages and paths are written: never the repository's code.
//
//   npx tsx bench/data/build-localization.ts <gitDir> <owner/name> <ts|py> <count> <out.json> [--before <commit|date> [--tuning]]
//
// With --before, only commits committed strictly before the cutoff (a commit's committer date, or a
// date) are considered, so a held-out set can be built from history older than an existing set; with
// --before and --tuning, the set is one more tuning set from older history still (below a held-out
// window), so the ranking's constants are chosen on more queries without touching held-out ones.
import { execFileSync } from "node:child_process";
import fs from "node:fs";

export interface LocalizationQuery {
  id: string;
  commit: string;
  parent: string;
  date: string;
  query: string;
  /** Source files the commit changed, as paths in the parent tree. */
  answers: string[];
}

/** The time window a set built with --before was taken from. */
export interface SetWindow {
  before: string;
  beforeCommit?: string;
  from: string;
  to: string;
}

export interface LocalizationSet {
  repo: string;
  language: "ts" | "py";
  /** The mirror directory name the benchmark looks for under /work/.mirror (or $LEDGERLOOP_MIRRORS). */
  mirror: string;
  built: string;
  rules: string;
  /** Only on held-out sets: every commit was committed strictly before `before` (built with --before). */
  heldOut?: SetWindow;
  /** A tuning set taken from older history (built with --before --tuning): more tuning queries, never held-out ones. */
  window?: SetWindow;
  /** Oldest first, so a benchmark can move one working tree forward through history. */
  queries: LocalizationQuery[];
}

const SOURCE_EXT: Record<"ts" | "py", RegExp> = {
  ts: /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/,
  py: /\.pyi?$/,
};

/** Tests, docs, examples, benchmarks and generated or config files are not what a query is localized to. */
export function isSourcePath(p: string, lang: "ts" | "py"): boolean {
  if (!SOURCE_EXT[lang].test(p)) return false;
  if (/(^|\/)(tests?|__tests__|spec|specs|docs?|examples?|benchmarks?|fixtures?|e2e|playground|scripts|\.github)\//i.test(p)) return false;
  if (/\.(test|spec|bench)\.[a-z]+$/i.test(p) || /(^|\/)(test_[^/]*|[^/]*_test\.py|conftest\.py)$/.test(p)) return false;
  if (/\.d\.ts$/.test(p) || /(^|\/)(vitest|jest|eslint|rollup|vite|tsup|webpack|babel)\.config\.[a-z]+$/.test(p)) return false;
  return true;
}

const DOCISH = /\.(md|mdx|rst|txt|json|ya?ml|toml|lock|svg|png|css|html)$/i;

/** Cleans a commit message into a query: subject plus the first paragraph of the body, no trailers or links. */
export function cleanMessage(subject: string, body: string): string {
  // GitHub cuts long subjects with "…" and continues them in the body with "…".
  if (subject.endsWith("…") && body.startsWith("…")) {
    const nl = body.indexOf("\n");
    subject = subject.slice(0, -1) + body.slice(1, nl < 0 ? undefined : nl);
    body = nl < 0 ? "" : body.slice(nl + 1);
  }
  const firstPara = body
    .split(/\n\s*\n/)[0]!
    .split("\n")
    .filter((l) => !/^\s*([A-Za-z-]+-by|Co-authored-by|Signed-off-by|Closes|Fixes|Refs?|See)\s*:/i.test(l) && !/^\s*[-*]\s*\[.\]/.test(l))
    .join(" ");
  return `${subject} ${firstPara.startsWith("*") || firstPara.startsWith("-") || firstPara.length > 300 ? "" : firstPara}`
    .replace(/https?:\/\/\S+/g, " ")
    .replace(/\(#\d+\)|#\d+/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 500);
}

function git(gitDir: string, args: string[]): string {
  return execFileSync("git", ["--git-dir", gitDir, ...args], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
}

/** A --before argument as a cutoff: a commit (its committer date) or anything Date.parse reads. */
export function resolveCutoff(gitDir: string, before: string): { date: string; commit?: string } {
  let commit = "";
  try {
    commit = git(gitDir, ["rev-parse", "--verify", "--quiet", `${before}^{commit}`]).trim();
  } catch {
    // not a commit: a date
  }
  if (commit) return { date: git(gitDir, ["log", "-1", "--format=%cI", commit]).trim(), commit };
  if (Number.isNaN(Date.parse(before))) throw new Error(`--before ${before}: neither a commit nor a date`);
  return { date: before };
}

/**
 * Scans history (newest first) and keeps the newest `count` qualifying commits; with `before`, only
 * among commits whose committer date is strictly earlier than the cutoff.
 */
export function buildSet(gitDir: string, repo: string, lang: "ts" | "py", count: number, before?: string, tuning = false): LocalizationSet {
  const cutoff = before === undefined ? undefined : resolveCutoff(gitDir, before);
  const cutoffMs = cutoff === undefined ? Infinity : Date.parse(cutoff.date);
  const log = git(gitDir, ["log", "--no-merges", "--format=%H%x00%P%x00%cI%x00%s%x00%b%x1e"]);
  const out: LocalizationQuery[] = [];
  for (const rec of log.split("\x1e")) {
    if (out.length >= count) break;
    const [hash, parents, date, subject, body] = rec.replace(/^\n/, "").split("\x00");
    if (!hash || !parents || parents.includes(" ")) continue;
    if (cutoff && !(Date.parse(date ?? "") < cutoffMs)) continue;
    if (/typo|spelling|codespell|docstring|\[docs?\]|readme|changelog/i.test(subject ?? "")) continue;
    if (
      /^(v?\d+\.\d+|release|bump|chore\(deps|chore: ?(release|format|lint)|merge|revert|format|lint|typo|ci[:(]|build\(deps|docs?[:(]|test[:(]|style[:(])/i.test(
        subject ?? "",
      )
    )
      continue;
    const status = git(gitDir, ["diff-tree", "--no-commit-id", "-r", "--name-status", "--no-renames", parents, hash])
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split("\t") as [string, string]);
    if (status.length === 0 || status.length > 5) continue;
    const answers = status.filter(([s, p]) => (s === "M" || s === "D") && isSourcePath(p, lang)).map(([, p]) => p);
    if (answers.length === 0) continue; // only tests, docs, config or new files
    if (status.every(([, p]) => DOCISH.test(p) && !isSourcePath(p, lang))) continue;
    const query = cleanMessage(subject ?? "", body ?? "");
    if (query.split(" ").filter((w) => /[a-z]{3,}/i.test(w)).length < 3) continue;
    out.push({ id: hash.slice(0, 10), commit: hash, parent: parents, date: date ?? "", query, answers });
  }
  out.reverse();
  const window = cutoff && {
    before: cutoff.date,
    ...(cutoff.commit ? { beforeCommit: cutoff.commit } : {}),
    from: out[0]?.date ?? "",
    to: out[out.length - 1]?.date ?? "",
  };
  return {
    repo,
    language: lang,
    mirror: repo.replace("/", "+"),
    built: new Date().toISOString().slice(0, 10),
    rules:
      "non-merge commits touching at most 5 files; answers are modified or deleted source files " +
      "(tests, docs, examples, benchmarks, configs and .d.ts excluded); release/bump/format/typo/docs/test-only commits skipped; " +
      "query = subject + first body paragraph, trailers, links and issue numbers removed, at most 500 characters" +
      (cutoff
        ? `; ${tuning ? "TUNING set from older history" : "HELD-OUT set"}: only commits committed strictly before ${cutoff.date}` +
          (cutoff.commit ? ` (the committer date of ${cutoff.commit})` : "") +
          `, here ${window!.from} to ${window!.to}`
        : ""),
    ...(window ? (tuning ? { window } : { heldOut: window }) : {}),
    queries: out,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  let before: string | undefined;
  const at = args.indexOf("--before");
  if (at >= 0) [, before] = args.splice(at, 2);
  const tuningAt = args.indexOf("--tuning");
  if (tuningAt >= 0) args.splice(tuningAt, 1);
  const [gitDir, repo, lang, count, outFile] = args;
  if (!gitDir || !repo || (lang !== "ts" && lang !== "py") || !count || !outFile || (at >= 0 && !before) || (tuningAt >= 0 && at < 0)) {
    console.error("usage: build-localization.ts <gitDir> <owner/name> <ts|py> <count> <out.json> [--before <commit|date> [--tuning]]");
    process.exit(2);
  }
  const set = buildSet(gitDir, repo, lang, Number(count), before, tuningAt >= 0);
  fs.writeFileSync(outFile, JSON.stringify(set, null, 2) + "\n");
  console.error(`${set.queries.length} queries from ${repo} → ${outFile}`);
}
