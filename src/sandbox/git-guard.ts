import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/**
 * The workspace guard: what no command may leave behind, at any isolation level.
 *
 * The user's git runs on the host (a shell prompt, an editor) with the user's privileges, and it
 * executes what a repository's configuration names (`core.fsmonitor`, hooks, filters…). So every
 * place git would take configuration from must stay out of the agent's reach:
 *
 * - existing `.git` entries (the workspace's own, nested repositories, gitfiles) and the git
 *   directory a gitfile leads to when it lies inside the workspace are bound read-only by the
 *   isolating levels (`protectPaths`); a mount point can be neither written, renamed nor removed,
 *   so `commondir`, worktree config, hooks and "replace `.git` by a copy" all fail the same way;
 * - a `.git` entry a command *creates* anywhere in the workspace (a new repository, a gitfile
 *   pointing elsewhere) would make git in that directory obey the agent: it is removed when the
 *   command ends (`after`), at every level;
 * - the files that govern the run (`ledgerloop.config.json`, `.ledgerloop/`) are read-only where
 *   they exist; a config file a command creates or (at level `none`) changes is restored.
 *
 * At level `none` nothing is mounted: changes to the git control files are found after the command
 * (by content) and undone, which is detection, not prevention. New `.git` entries are found by a walk
 * of every directory (ignored ones too) that re-reads only directories whose ctime changed, so the
 * cost per command is one lstat per directory.
 */

export const CONFIG_FILE_NAME = "ledgerloop.config.json";

/** A directory as the last walk saw it. */
interface DirState {
  ino: bigint;
  ctimeNs: bigint;
  subdirs: string[];
  gits: string[];
}

/** What `after` found and undid. */
export interface GuardReport {
  /** One sentence per thing undone, for the command's feedback. */
  violations: string[];
}

/** Files of a git directory that decide what git runs or where it looks (checked at level `none`). */
const CONTROL_FILES = ["config", "config.worktree", "commondir", "gitdir", "info/attributes", "objects/info/alternates"];

/** Reads `p` or null. */
function readOrNull(p: string): Buffer | null {
  try {
    return fs.readFileSync(p);
  } catch {
    return null;
  }
}

function lstatOrNull(p: string): fs.BigIntStats | null {
  try {
    return fs.lstatSync(p, { bigint: true });
  } catch {
    return null;
  }
}

function inside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/**
 * The git directory a `.git` entry stands for: itself when a directory, the `gitdir:` target of a
 * gitfile, or null. Relative targets are relative to the gitfile's directory, as git reads them.
 */
export function gitDirOf(entry: string): string | null {
  const st = lstatOrNull(entry);
  if (!st) return null;
  if (st.isDirectory()) return entry;
  if (!st.isFile()) return null;
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(readOrNull(entry)?.toString("utf8") ?? "");
  return m ? path.resolve(path.dirname(entry), m[1]!) : null;
}

/**
 * Every path commands must not change for git's sake: each `.git` entry, plus the git directory a
 * gitfile leads to and its `commondir` target when they lie inside the workspace (outside it the
 * host is read-only anyway at the isolating levels).
 */
export function gitProtectPaths(workspace: string, entries: string[]): string[] {
  const out = new Set<string>();
  for (const e of entries) {
    out.add(e);
    const dir = gitDirOf(e);
    if (!dir || dir === e) continue;
    if (inside(workspace, dir) && lstatOrNull(dir)) out.add(dir);
    const common = readOrNull(path.join(dir, "commondir"))?.toString("utf8").trim();
    if (common) {
      const c = path.resolve(dir, common);
      if (inside(workspace, c) && lstatOrNull(c)) out.add(c);
    }
  }
  return [...out];
}

/** Content of the control files and hooks of one git directory, keyed by path. */
function controlSnapshot(gitDir: string): Map<string, Buffer | null> {
  const snap = new Map<string, Buffer | null>();
  for (const f of CONTROL_FILES) snap.set(path.join(gitDir, f), readOrNull(path.join(gitDir, f)));
  const hooks = path.join(gitDir, "hooks");
  let names: string[] = [];
  try {
    names = fs.readdirSync(hooks);
  } catch {
    // no hooks directory
  }
  for (const n of names) snap.set(path.join(hooks, n), readOrNull(path.join(hooks, n)));
  snap.set(`${hooks}/`, Buffer.from(names.sort().join("\n")));
  return snap;
}

/**
 * Guards one workspace across the commands of a sandbox. `before` is called before each command,
 * `after` once it (and every process of it) has ended.
 */
export class WorkspaceGuard {
  private dirs = new Map<string, DirState>();
  /** `.git` entries that existed when the guard first looked: the user's own repositories. */
  private known: Set<string> | null = null;
  private configBefore: Buffer | null = null;
  private control: Map<string, Buffer | null> | null = null;
  /**
   * Identity of the known `.git` entries before the command (level `none`: they can be moved):
   * inode and birth time, as a freed inode number is soon given to the next file made.
   */
  private inodes = new Map<string, { ino: bigint; birth: bigint }>();

  constructor(
    readonly workspace: string,
    private readonly opts: { detectControlChanges: boolean } = { detectControlChanges: false },
  ) {}

  /** The user's `.git` entries (found on first use). */
  gitEntries(): string[] {
    if (!this.known) this.known = new Set(this.scan());
    return [...this.known];
  }

  /** Paths the isolating levels bind read-only: git's, plus the files that govern the run. */
  protectPaths(): string[] {
    const out = gitProtectPaths(this.workspace, this.gitEntries());
    for (const rel of [CONFIG_FILE_NAME, ".ledgerloop"]) {
      const p = path.join(this.workspace, rel);
      if (lstatOrNull(p)) out.push(p);
    }
    return out;
  }

  /** Records what `after` compares against. */
  before(): void {
    this.gitEntries();
    this.configBefore = readOrNull(path.join(this.workspace, CONFIG_FILE_NAME));
    if (this.opts.detectControlChanges) {
      this.control = new Map();
      this.inodes.clear();
      for (const e of this.known!) {
        const st = lstatOrNull(e);
        if (st) this.inodes.set(e, { ino: st.ino, birth: st.birthtimeNs });
        const dir = gitDirOf(e);
        if (dir) for (const [k, v] of controlSnapshot(dir)) this.control.set(k, v);
        // A gitfile's own text decides where git looks.
        if (dir !== e) this.control.set(e, readOrNull(e));
      }
    }
  }

  /** Undoes what the command may not leave behind; says what it undid. Never throws. */
  after(): GuardReport {
    const violations: string[] = [];
    try {
      this.repair(violations);
    } catch (err) {
      violations.push(`could not check or repair the workspace after the command (${(err as Error).message}); check .git and ${CONFIG_FILE_NAME} by hand`);
    }
    return { violations };
  }

  private repair(violations: string[]): void {
    const rel = (p: string) => path.relative(this.workspace, p) || ".";
    const found = this.scan();
    if (this.inodes.size) {
      // Level `none`: a `.git` moved away (and perhaps replaced by a copy) is put back.
      const byIno = new Map<bigint, string>();
      for (const [dir, st] of this.dirs) byIno.set(st.ino, dir);
      for (const [entry, id] of this.inodes) {
        const now = lstatOrNull(entry);
        if (now?.ino === id.ino && now.birthtimeNs === id.birth) continue;
        // Its control files belonged to the entry that is gone: nothing to compare them with.
        for (const k of [...(this.control?.keys() ?? [])]) if (inside(entry, k)) this.control!.delete(k);
        const candidate = byIno.get(id.ino);
        const moved = candidate && lstatOrNull(candidate)?.birthtimeNs === id.birth ? candidate : undefined;
        if (now) this.quarantine(entry);
        if (moved) {
          fs.renameSync(moved, entry);
          violations.push(`moved ${rel(entry)} back from ${rel(moved)}: commands may not move or replace the repository`);
        } else {
          violations.push(`${rel(entry)} was moved or replaced by the command and its original could not be found: check the repository before running git`);
        }
      }
      if (violations.length) this.scan();
    }
    for (const g of found) {
      if (this.known!.has(g) || !lstatOrNull(g)) continue;
      const kept = this.quarantine(g);
      violations.push(
        `moved away ${rel(g)}, which the command created${kept ? ` (kept as ${rel(kept)})` : ""}: a git repository or gitfile inside the workspace would make the user's git run what the agent configured (make scratch repositories under /tmp instead)`,
      );
    }
    const cfg = path.join(this.workspace, CONFIG_FILE_NAME);
    if (!sameFile(cfg, this.configBefore)) {
      restore(cfg, this.configBefore);
      violations.push(`restored ${CONFIG_FILE_NAME}, which the command ${this.configBefore ? "changed" : "created"}: the run's own configuration is not the agent's to change`);
    }
    if (this.control) {
      const changed: string[] = [];
      for (const [p, was] of this.control) {
        if (p.endsWith("/")) continue;
        if (!sameFile(p, was)) {
          restore(p, was);
          changed.push(rel(p));
        }
      }
      // Hooks the command added (the listing above only covers hooks that existed).
      for (const [p, listing] of this.control) {
        if (!p.endsWith("/")) continue;
        const dir = p.slice(0, -1);
        const was = new Set((listing?.toString("utf8") ?? "").split("\n").filter(Boolean));
        let names: string[] = [];
        try {
          names = fs.readdirSync(dir);
        } catch {
          // gone
        }
        for (const n of names) {
          if (was.has(n)) continue;
          fs.rmSync(path.join(dir, n), { recursive: true, force: true });
          changed.push(rel(path.join(dir, n)));
        }
      }
      if (changed.length) {
        violations.push(`undid changes to git's control files (${changed.slice(0, 8).join(", ")}${changed.length > 8 ? ", …" : ""}): commands may not change what the user's git runs`);
      }
    }
  }

  /**
   * Moves a `.git` entry out of git's sight into `.ledgerloop/quarantine/` (not named `.git` there),
   * so that nothing is lost if it was not the agent's after all; removes it when it cannot be moved.
   */
  private quarantine(entry: string): string | null {
    const dir = path.join(this.workspace, ".ledgerloop", "quarantine", `${Date.now()}`);
    const dest = path.join(dir, `${path.relative(this.workspace, entry).replace(/[\\/]/g, "__")}.removed`);
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      // Like the runtime's state, the quarantine stays out of the user's git.
      const ignore = path.join(this.workspace, ".ledgerloop", ".gitignore");
      if (!fs.existsSync(ignore)) fs.writeFileSync(ignore, "*\n");
      fs.renameSync(entry, dest);
      return dest;
    } catch {
      fs.rmSync(entry, { recursive: true, force: true });
      return null;
    }
  }

  /**
   * Every `.git` entry in the workspace, ignored directories included, `.git` directories and the
   * root `.ledgerloop/` not entered, symlinked directories not followed. Directories whose inode and
   * ctime are unchanged since the last walk are not read again (creating, renaming or removing an
   * entry changes its directory's ctime, which no process can set back).
   */
  private scan(): string[] {
    const next = new Map<string, DirState>();
    const found: string[] = [];
    const stack = [this.workspace];
    while (stack.length) {
      const dir = stack.pop()!;
      const st = lstatOrNull(dir);
      if (!st?.isDirectory()) continue;
      let state = this.dirs.get(dir);
      if (!state || state.ino !== st.ino || state.ctimeNs !== st.ctimeNs) {
        let entries: fs.Dirent[];
        try {
          entries = fs.readdirSync(dir, { withFileTypes: true });
        } catch {
          continue;
        }
        state = { ino: st.ino, ctimeNs: st.ctimeNs, subdirs: [], gits: [] };
        for (const e of entries) {
          const p = path.join(dir, e.name);
          if (e.name === ".git") state.gits.push(p);
          else if (e.isDirectory() && !(dir === this.workspace && e.name === ".ledgerloop")) state.subdirs.push(p);
        }
      }
      next.set(dir, state);
      found.push(...state.gits);
      stack.push(...state.subdirs);
    }
    this.dirs = next;
    return found;
  }
}

/** `p` is a regular file (not a symlink to one) holding exactly `was`, or absent when `was` is null. */
function sameFile(p: string, was: Buffer | null): boolean {
  const st = lstatOrNull(p);
  if (!st) return was === null;
  return st.isFile() && sameBytes(readOrNull(p), was);
}

function sameBytes(a: Buffer | null, b: Buffer | null): boolean {
  if (a === null || b === null) return a === b;
  return a.equals(b);
}

/** Puts back `content` at `p` (null: removes it), replacing rather than writing through the old inode. */
function restore(p: string, content: Buffer | null): void {
  fs.rmSync(p, { recursive: true, force: true });
  if (content === null) return;
  fs.mkdirSync(path.dirname(p), { recursive: true });
  const tmp = `${p}.ll-restore-${crypto.randomBytes(4).toString("hex")}`;
  fs.writeFileSync(tmp, content);
  fs.renameSync(tmp, p);
}
