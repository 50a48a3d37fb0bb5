import { lstatSync, readdirSync } from "node:fs";
import type { Dirent, Stats } from "node:fs";
import path from "node:path";
import { excludeRules, isAlwaysSkipped, isIgnored, withGitignore, type RuleSet } from "./ignore-rules.js";

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

const YIELD_EVERY_DIRS = 64;

/**
 * Lists every non-ignored regular file and symlink of the workspace with its lstat, sorted by path.
 * Entries that vanish or cannot be stat'ed mid-walk are left out, like an unreadable directory.
 */
export async function walkRevisionEntries(workspace: string): Promise<RevWalkEntry[]> {
  const out: RevWalkEntry[] = [];
  let dirsRead = 0;
  const rootRules: RuleSet[] = excludeRules(workspace);

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
    const rules = entries.some((e) => e.name === ".gitignore" && e.isFile()) ? withGitignore(workspace, dirRel, inherited) : inherited;
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
