import { createRequire } from "node:module";
import type ignore from "ignore";
import type { Ignore } from "ignore";
import { confined } from "./confined.js";

// The one implementation of "is this path gitignored here?", shared by the one walker (walk.ts:
// the files the agent sees, command feedback, revisions) and the single-path check (ignore-check.ts).

// git matches ignore rules case-insensitively where it probes the file system as such (core.ignorecase);
// the platform is the stand-in for that probe.
export const IGNORE_CASE = process.platform === "darwin" || process.platform === "win32";

/** The rules of one ignore file and the directory they are relative to ("" for the root). */
export interface RuleSet {
  base: string;
  ig: Ignore;
}

// Loaded on the first ignore file met: a workspace without one (and every search of it) never pays
// for the package, which costs a tenth of a search's start-up.
let ignoreFactory: typeof ignore | undefined;

export function makeIgnore(text: string): Ignore {
  ignoreFactory ??= createRequire(import.meta.url)("ignore") as typeof ignore;
  return ignoreFactory({ ignorecase: IGNORE_CASE }).add(text.replace(/^\uFEFF/, ""));
}

const MAX_IGNORE_FILE_BYTES = 1 << 20;

/**
 * The text of an ignore file in the workspace, or undefined when there is none to read (absent, a
 * directory, a symlink, a FIFO, larger than 1 MiB, no permission). Read through the confined reader
 * with no link followed: the file is the agent's, so a link to a host file or a FIFO that would block
 * the walk are not ignore rules.
 */
export function readIgnoreFile(workspace: string, rel: string): string | undefined {
  try {
    // Sync: an async readFile is four thread-pool round trips, which dominates a walk.
    return confined(workspace, { links: "never" }).readFile(rel, { maxBytes: MAX_IGNORE_FILE_BYTES }).toString("utf8");
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
  const exclude = readIgnoreFile(workspace, ".git/info/exclude");
  return exclude === undefined ? [] : [{ base: "", ig: makeIgnore(exclude) }];
}

/** `rules` plus the .gitignore of `dirRel`, when it has one. */
export function withGitignore(workspace: string, dirRel: string, rules: RuleSet[]): RuleSet[] {
  const text = readIgnoreFile(workspace, dirRel === "" ? ".gitignore" : `${dirRel}/.gitignore`);
  return text === undefined ? rules : [...rules, { base: dirRel, ig: makeIgnore(text) }];
}
