import { readFileSync } from "node:fs";
import path from "node:path";
import ignore, { type Ignore } from "ignore";

// The one implementation of "is this path gitignored here?", shared by the one walker (walk.ts:
// the files the agent sees, command feedback, revisions) and the single-path check (retrieval/ignore-check.ts).

// git matches ignore rules case-insensitively where it probes the file system as such (core.ignorecase);
// the platform is the stand-in for that probe.
export const IGNORE_CASE = process.platform === "darwin" || process.platform === "win32";

/** The rules of one ignore file and the directory they are relative to ("" for the root). */
export interface RuleSet {
  base: string;
  ig: Ignore;
}

export function makeIgnore(text: string): Ignore {
  return ignore({ ignorecase: IGNORE_CASE }).add(text.replace(/^\uFEFF/, ""));
}

/** A file's text, or undefined when it cannot be read (absent, a directory, no permission). */
export function readIfExists(file: string): string | undefined {
  try {
    // Sync: an async readFile is four thread-pool round trips, which dominates a walk.
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** .git holds another repository's internals at any depth; .ledgerloop is this runtime's state at the root. */
export function isAlwaysSkipped(rel: string): boolean {
  const name = rel.slice(rel.lastIndexOf("/") + 1);
  return name === ".git" || rel === ".ledgerloop";
}

/**
 * git's precedence: the deepest .gitignore that has an opinion decides, .git/info/exclude (first in
 * `rules`) comes last. Known gap: `ignore` also tests each path's parents, so a directory excluded by
 * an outer .gitignore but re-included by an inner one (`/.gitignore: sub/x/`, `sub/.gitignore: !x/`)
 * is entered yet its files stay hidden, where git lists them; rare enough not to re-implement the
 * matcher for.
 */
export function isIgnored(rules: RuleSet[], rel: string, isDir: boolean): boolean {
  for (let i = rules.length - 1; i >= 0; i--) {
    const { base, ig } = rules[i]!;
    const sub = base === "" ? rel : rel.slice(base.length + 1);
    const result = ig.test(isDir ? `${sub}/` : sub);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

/**
 * The rules every walk starts from: .git/info/exclude. The user's global excludesFile is left out on
 * purpose: what the agent sees must not depend on whose machine it runs on.
 */
export function excludeRules(workspace: string): RuleSet[] {
  const exclude = readIfExists(path.join(workspace, ".git", "info", "exclude"));
  return exclude === undefined ? [] : [{ base: "", ig: makeIgnore(exclude) }];
}

/** `rules` plus the .gitignore of `dirRel`, when it has one. */
export function withGitignore(workspace: string, dirRel: string, rules: RuleSet[]): RuleSet[] {
  const text = readIfExists(path.join(workspace, dirRel, ".gitignore"));
  return text === undefined ? rules : [...rules, { base: dirRel, ig: makeIgnore(text) }];
}
