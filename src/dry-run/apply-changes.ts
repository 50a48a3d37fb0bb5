import { CliError, PathEscapeError } from "../errors.js";
import { confined, type ConfinedDir } from "../workspace/confined.js";

// Writing a dry run's result into the real workspace. Both sides are the agent's work: the real
// workspace may hold `cache -> /root/.ssh` from an earlier run while the copy has a real `cache/`
// with `authorized_keys` in it. So deletions go first (that link is one of them), no symlink is
// ever written through (a directory on the way must be a real one, made by us if missing), and
// every file is written by the confined writer, atomically, into a directory held by descriptor.

/** What to apply, workspace-relative POSIX paths (as dryRunChanges lists them). */
export interface ApplyPlan {
  created: string[];
  modified: string[];
  deleted: string[];
}

const ancestors = (p: string): string[] => {
  const parts = p.split("/");
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
};

/**
 * Applies `plan` from `copyRoot` to `workspace`. Checks first, before anything is written, that no
 * directory a file goes into is, in the workspace, something else (a symlink or a file) that the
 * plan does not delete; refuses naming it otherwise. Set-id bits are not carried over.
 */
export function applyChanges(workspace: string, copyRoot: string, plan: ApplyPlan): void {
  const ws = confined(workspace, { links: "never" });
  const copy = confined(copyRoot, { links: "never" });
  const deleted = new Set(plan.deleted);
  const writes = [...plan.created, ...plan.modified].sort();

  for (const p of writes) {
    for (const dir of ancestors(p)) {
      if (deleted.has(dir)) break; // removed first; everything beneath it is made afresh
      const st = lstatOrNull(ws, dir);
      if (st === null || st.isDirectory()) continue;
      throw new CliError(
        `not applied: ${dir} is a ${st.isSymbolicLink() ? "symlink" : "file"} in ${workspace} but a directory in the dry run's copy (it holds ${p}); ` +
          `nothing is written through it: move it away and apply again`,
        1,
        "DRY_RUN_CONFLICT",
      );
    }
  }

  // Deepest first, so a directory's content goes before the directory (only files and links are listed).
  for (const p of [...plan.deleted].sort((a, b) => b.length - a.length)) ws.rm(p, { force: true });

  for (const p of writes) {
    for (const dir of ancestors(p)) {
      const st = lstatOrNull(ws, dir);
      if (st?.isDirectory()) continue;
      ws.mkdirp(dir, copy.lstat(dir).mode & 0o777);
    }
    const src = copy.lstat(p);
    const there = lstatOrNull(ws, p);
    // A directory left where the copy has a file or a link: emptied by the deletions above, or refused.
    if (there?.isDirectory()) ws.rmdir(p);
    if (src.isSymbolicLink()) {
      if (there && !there.isDirectory()) ws.rm(p, { force: true });
      ws.symlink(copy.readlink(p), p);
    } else {
      ws.writeFile(p, copy.readFile(p), { mode: src.mode & 0o1777 });
    }
  }
}

function lstatOrNull(c: ConfinedDir, rel: string) {
  try {
    return c.lstatOrNull(rel);
  } catch (err) {
    // A symlink further up (links are never followed here) means nothing is at this path for us.
    if (err instanceof PathEscapeError) return null;
    throw err;
  }
}
