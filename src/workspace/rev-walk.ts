import { lstatSync, readdirSync, readFileSync } from "node:fs";
import type { Dirent, Stats } from "node:fs";
import path from "node:path";
import ignore, { type Ignore } from "ignore";

// The walk behind workspace revisions. It applies the same rules as walkFiles in files.ts (root and
// nested .gitignore, .git/info/exclude, .git/ at any depth and the root .ledgerloop/ never), and a
// test holds the two listings equal for regular files. It differs in one way on purpose: every
// symlink is listed as a link (dangling ones, links to directories, links leading outside), never
// followed, because a revision records the link itself and restore must be able to remove or recreate
// it. walkFiles leaves those out since the agent cannot read through them. And a `.git` or root
// `.ledgerloop` entry is skipped whatever its type (walkFiles lists a `.git` file).

/** One non-ignored workspace entry as {@link walkRevisionEntries} found it (lstat, never followed). */
export interface RevWalkEntry {
  /** Workspace-relative POSIX path. */
  rel: string;
  kind: "file" | "symlink";
  st: Stats;
}

const IGNORE_CASE = process.platform === "darwin" || process.platform === "win32";
const YIELD_EVERY_DIRS = 64;

interface RuleSet {
  base: string;
  ig: Ignore;
}

/**
 * Lists every non-ignored regular file and symlink of the workspace with its lstat, sorted by path.
 * Entries that vanish or cannot be stat'ed mid-walk are left out, like an unreadable directory.
 */
export async function walkRevisionEntries(workspace: string): Promise<RevWalkEntry[]> {
  const out: RevWalkEntry[] = [];
  let dirsRead = 0;
  const exclude = readIfExists(path.join(workspace, ".git", "info", "exclude"));
  const rootRules: RuleSet[] = exclude === undefined ? [] : [{ base: "", ig: makeIgnore(exclude) }];

  async function visit(dirRel: string, inherited: RuleSet[]): Promise<void> {
    if (++dirsRead % YIELD_EVERY_DIRS === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const dirAbs = dirRel === "" ? workspace : path.join(workspace, dirRel);
    let entries: Dirent[];
    try {
      entries = readdirSync(dirAbs, { withFileTypes: true });
    } catch (err) {
      if (dirRel === "") throw err;
      return;
    }
    let rules = inherited;
    if (entries.some((e) => e.name === ".gitignore" && e.isFile())) {
      const text = readIfExists(path.join(dirAbs, ".gitignore"));
      if (text !== undefined) rules = [...inherited, { base: dirRel, ig: makeIgnore(text) }];
    }
    const keyed = entries.map((e) => ({ e, key: e.isDirectory() ? `${e.name}/` : e.name }));
    keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { e } of keyed) {
      const rel = dirRel === "" ? e.name : `${dirRel}/${e.name}`;
      // A `.git` file (worktree or submodule pointer) is git's data as much as the directory is.
      if (isAlwaysSkipped(rel)) continue;
      if (e.isDirectory()) {
        if (isIgnored(rules, rel, true)) continue;
        await visit(rel, rules);
        continue;
      }
      const link = e.isSymbolicLink();
      if (!link && !e.isFile()) continue; // sockets, fifos, devices: not content
      if (isIgnored(rules, rel, false)) continue;
      let st: Stats | undefined;
      try {
        st = lstatSync(path.join(workspace, rel), { throwIfNoEntry: false });
      } catch {
        st = undefined;
      }
      if (!st) continue;
      if (st.isSymbolicLink()) out.push({ rel, kind: "symlink", st });
      else if (st.isFile()) out.push({ rel, kind: "file", st });
    }
  }

  await visit("", rootRules);
  return out;
}

/** .git holds another repository's internals at any depth; .ledgerloop is this runtime's state at the root. */
function isAlwaysSkipped(rel: string): boolean {
  const name = rel.slice(rel.lastIndexOf("/") + 1);
  return name === ".git" || rel === ".ledgerloop";
}

/** git's precedence, as in files.ts: the deepest .gitignore with an opinion decides, info/exclude last. */
function isIgnored(rules: RuleSet[], rel: string, isDir: boolean): boolean {
  for (let i = rules.length - 1; i >= 0; i--) {
    const { base, ig } = rules[i]!;
    const sub = base === "" ? rel : rel.slice(base.length + 1);
    const result = ig.test(isDir ? `${sub}/` : sub);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

function makeIgnore(text: string): Ignore {
  return ignore({ ignorecase: IGNORE_CASE }).add(text.replace(/^\uFEFF/, ""));
}

function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}
