import fs from "node:fs";
import path from "node:path";
import { nameOfBytes } from "../workspace/byte-names.js";
import { confined } from "../workspace/confined.js";
import { readRegularNoFollow } from "../workspace/confined-fd.js";

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

/** A directory as the last walk saw it; paths are bytes (a name need not be UTF-8). */
interface DirState {
  ino: bigint;
  ctimeNs: bigint;
  subdirs: Buffer[];
  /** Its `.git` entry, and itself when it looks like a bare repository. */
  gits: Buffer[];
}

/** A path as bytes, as the map keys and sets of the guard hold it (latin1 keeps every byte). */
const keyOf = (p: Buffer) => p.toString("latin1");

/**
 * Whether a directory holding these names is a git directory to git's discovery (setup.c
 * is_git_directory: HEAD, plus objects/ and refs/ or a commondir that leads to them): git run
 * there, or below it, takes its config (core.fsmonitor, hooks…) without any `.git` entry.
 */
function looksLikeGitDir(names: Set<string>): boolean {
  return names.has("HEAD") && ((names.has("objects") && names.has("refs")) || names.has("commondir"));
}

/** What of a bare layout git reads to decide it is a repository and what it runs. */
const BARE_CONTROL = ["HEAD", "config", "commondir"];

/** What `after` found and undid. */
export interface GuardReport {
  /** One sentence per thing undone, for the command's feedback. */
  violations: string[];
}

/** Files of a git directory that decide what git runs or where it looks (checked at level `none`). */
const CONTROL_FILES = ["config", "config.worktree", "commondir", "gitdir", "info/attributes", "objects/info/alternates"];

/** The regular file at `p` (the name itself not followed, no FIFO or device opened), capped, or null. */
function readOrNull(p: string): Buffer | null {
  return readRegularNoFollow(p, MAX_CONTROL_BYTES);
}

function lstatOrNull(p: string | Buffer): fs.BigIntStats | null {
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

/** One file the guard keeps at level `none`: where it is (a root ledgerloop knows, and a name beneath it) and what it held. */
interface Kept {
  root: string;
  rel: string;
  was: Buffer | null;
}

const MAX_CONTROL_BYTES = 4 * 1024 * 1024;

/**
 * The bytes of `rel` beneath `root`, or null when there is nothing there. Read by descriptor with no
 * symlink followed, not the name itself nor a directory on the way: a link, a FIFO or a device in
 * its place reads as a marker that differs from any content, so it counts as a change, and the
 * guard itself never opens what it points at (a FIFO would block it; a host file is not its to read).
 */
function readKept(root: string, rel: string): Buffer | null {
  const ws = confined(root, { links: "never" });
  let st: fs.Stats | null;
  try {
    st = ws.lstatOrNull(rel);
  } catch {
    return Buffer.from("\0through a symlink");
  }
  if (!st) return null;
  if (!st.isFile()) return Buffer.from(`\0not a regular file (mode ${st.mode.toString(8)})`);
  try {
    return ws.readFile(rel, { maxBytes: MAX_CONTROL_BYTES });
  } catch (err) {
    return Buffer.from(`\0unreadable: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
  }
}

/** Puts back `was` at `rel` beneath `root` (null: removes what is there), replacing rather than writing through, never through a link. */
function putBack(k: Kept): void {
  const ws = confined(k.root, { links: "never" });
  ws.rm(k.rel, { recursive: true, force: true });
  if (k.was !== null) ws.writeFile(k.rel, k.was, { mkdirs: true });
}

/** Names in the directory `rel` beneath `root` (no link followed), or none. */
function namesIn(root: string, rel: string): string[] {
  try {
    return confined(root, { links: "never" })
      .readdir(rel)
      .map((e) => nameOfBytes(e.name));
  } catch {
    return [];
  }
}

/** Content of the control files and hooks of one git directory, keyed by path. */
function controlSnapshot(gitDir: string): Map<string, Kept> {
  const snap = new Map<string, Kept>();
  const keep = (rel: string) => snap.set(path.join(gitDir, rel), { root: gitDir, rel, was: readKept(gitDir, rel) });
  for (const f of CONTROL_FILES) keep(f);
  const names = namesIn(gitDir, "hooks");
  for (const n of names) keep(`hooks/${n}`);
  snap.set(`${path.join(gitDir, "hooks")}/`, { root: gitDir, rel: "hooks", was: Buffer.from(names.sort().join("\n")) });
  return snap;
}

/**
 * Guards one workspace across the commands of a sandbox. `before` is called before each command,
 * `after` once it (and every process of it) has ended.
 */
export class WorkspaceGuard {
  private dirs = new Map<string, DirState>();
  /** `.git` entries (and bare layouts) that existed when the guard first looked: the user's own repositories. */
  private known: Set<string> | null = null;
  private knownPaths: Buffer[] = [];
  private configBefore: Buffer | null = null;
  private control: Map<string, Kept> | null = null;
  /**
   * Identity of the known `.git` entries before the command (level `none`: they can be moved):
   * inode and birth time, as a freed inode number is soon given to the next file made.
   */
  private inodes = new Map<string, { ino: bigint; birth: bigint }>();

  constructor(
    readonly workspace: string,
    private readonly opts: { detectControlChanges: boolean } = { detectControlChanges: false },
  ) {}

  /**
   * The user's `.git` entries and bare-looking directories (found on first use). Those whose path
   * is not valid UTF-8 are left out: they cannot be named to bwrap or mount.
   */
  gitEntries(): string[] {
    if (!this.known) {
      this.knownPaths = this.scan();
      this.known = new Set(this.knownPaths.map(keyOf));
    }
    return this.knownPaths.filter((p) => Buffer.from(p.toString("utf8")).equals(p)).map((p) => p.toString("utf8"));
  }

  /** Paths the isolating levels bind read-only: git's, plus the files that govern the run. */
  protectPaths(): string[] {
    const entries = this.gitEntries();
    // The workspace root itself laid out as a repository cannot be bound read-only: its control files are.
    const out = gitProtectPaths(
      this.workspace,
      entries.filter((e) => e !== this.workspace),
    );
    if (entries.includes(this.workspace)) {
      for (const f of [...BARE_CONTROL, "hooks", "info"]) if (lstatOrNull(path.join(this.workspace, f))) out.push(path.join(this.workspace, f));
    }
    for (const rel of [CONFIG_FILE_NAME, ".ledgerloop"]) {
      const p = path.join(this.workspace, rel);
      if (lstatOrNull(p)) out.push(p);
    }
    return out;
  }

  /** Records what `after` compares against. */
  before(): void {
    this.gitEntries();
    this.configBefore = readKept(this.workspace, CONFIG_FILE_NAME);
    if (this.opts.detectControlChanges) {
      this.control = new Map();
      this.inodes.clear();
      for (const e of this.gitEntries()) {
        const st = lstatOrNull(e);
        if (st) this.inodes.set(e, { ino: st.ino, birth: st.birthtimeNs });
        const dir = gitDirOf(e);
        if (dir) for (const [k, v] of controlSnapshot(dir)) this.control.set(k, v);
        // A gitfile's own text decides where git looks.
        if (dir !== e)
          this.control.set(e, { root: this.workspace, rel: path.relative(this.workspace, e), was: readKept(this.workspace, path.relative(this.workspace, e)) });
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
    const rel = (p: string | Buffer) => path.relative(this.workspace, typeof p === "string" ? p : p.toString("utf8")) || ".";
    const found = this.scan();
    if (this.inodes.size) {
      // Level `none`: a `.git` moved away (and perhaps replaced by a copy) is put back.
      const byIno = new Map<bigint, string>();
      for (const [dir, st] of this.dirs) byIno.set(st.ino, Buffer.from(dir, "latin1").toString("utf8"));
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
      if (this.known!.has(keyOf(g)) || !lstatOrNull(g)) continue;
      if (path.basename(g.toString("latin1")) !== ".git") {
        // A directory laid out as a repository: it (the root, a folder of the user's) stays; what
        // makes git take it for one goes.
        const moved = BARE_CONTROL.filter((f) => this.quarantine(Buffer.concat([g, Buffer.from(`/${f}`)]), { keepDirs: true }) !== null);
        violations.push(
          `moved away ${moved.join(", ")} of ${rel(g)}, which the command laid out as a git repository (HEAD, objects/, refs/): the user's git there would run what the agent configured (make scratch repositories under /tmp instead)`,
        );
        continue;
      }
      const kept = this.quarantine(g);
      violations.push(
        `moved away ${rel(g)}, which the command created${kept ? ` (kept as ${rel(kept)})` : ""}: a git repository or gitfile inside the workspace would make the user's git run what the agent configured (make scratch repositories under /tmp instead)`,
      );
    }
    if (!sameBytes(readKept(this.workspace, CONFIG_FILE_NAME), this.configBefore)) {
      putBack({ root: this.workspace, rel: CONFIG_FILE_NAME, was: this.configBefore });
      violations.push(
        `restored ${CONFIG_FILE_NAME}, which the command ${this.configBefore ? "changed" : "created"}: the run's own configuration is not the agent's to change`,
      );
    }
    if (this.control) {
      const changed: string[] = [];
      for (const [p, k] of this.control) {
        if (p.endsWith("/")) continue;
        if (!sameBytes(readKept(k.root, k.rel), k.was)) {
          putBack(k);
          changed.push(rel(p));
        }
      }
      // Hooks the command added (the listing above only covers hooks that existed).
      for (const [p, listing] of this.control) {
        if (!p.endsWith("/")) continue;
        const was = new Set((listing.was?.toString("utf8") ?? "").split("\n").filter(Boolean));
        for (const n of namesIn(listing.root, listing.rel)) {
          if (was.has(n)) continue;
          confined(listing.root, { links: "never" }).rm(`${listing.rel}/${n}`, { recursive: true, force: true });
          changed.push(rel(path.join(listing.root, listing.rel, n)));
        }
      }
      if (changed.length) {
        violations.push(
          `undid changes to git's control files (${changed.slice(0, 8).join(", ")}${changed.length > 8 ? ", …" : ""}): commands may not change what the user's git runs`,
        );
      }
    }
  }

  /**
   * Moves a `.git` entry out of git's sight into `.ledgerloop/quarantine/` (not named `.git` there),
   * so that nothing is lost if it was not the agent's after all; removes it when it cannot be moved.
   */
  private quarantine(entry: string | Buffer, opts: { keepDirs?: boolean } = {}): string | null {
    const abs = typeof entry === "string" ? Buffer.from(entry) : entry;
    const prefix = Buffer.from(`${this.workspace}/`);
    if (!abs.subarray(0, prefix.length).equals(prefix)) return null;
    // By descriptor, no symlink followed: a background process may have swapped a directory on
    // the way for a link to the host since the walk, and the host's files are not ours to move.
    const ws = confined(this.workspace, { links: "never" });
    const relBytes = abs.subarray(prefix.length);
    let st: fs.Stats | null;
    try {
      st = ws.lstatOrNull(relBytes);
    } catch {
      return null;
    }
    if (!st || (opts.keepDirs && st.isDirectory())) return null;
    const dir = path.join(this.workspace, ".ledgerloop", "quarantine", `${Date.now()}`);
    const dest = path.join(dir, `${relBytes.toString("utf8").replace(/[\\/]/g, "__")}.removed`);
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      // Like the runtime's state, the quarantine stays out of the user's git.
      const ignore = path.join(this.workspace, ".ledgerloop", ".gitignore");
      if (!fs.existsSync(ignore)) fs.writeFileSync(ignore, "*\n");
      ws.moveOut(relBytes, dest);
      return dest;
    } catch {
      try {
        ws.rm(relBytes, { recursive: true, force: true });
      } catch {
        // refused (a symlink on the way) or gone: nothing of the workspace's to remove
      }
      return null;
    }
  }

  /**
   * Every `.git` entry in the workspace, ignored directories included, `.git` directories and the
   * root `.ledgerloop/` not entered, symlinked directories not followed. Directories whose inode and
   * ctime are unchanged since the last walk are not read again (creating, renaming or removing an
   * entry changes its directory's ctime, which no process can set back).
   */
  private scan(): Buffer[] {
    const root = Buffer.from(this.workspace);
    const next = new Map<string, DirState>();
    const found: Buffer[] = [];
    const stack: Buffer[] = [root];
    while (stack.length) {
      const dir = stack.pop()!;
      const st = lstatOrNull(dir);
      if (!st?.isDirectory()) continue;
      const key = keyOf(dir);
      let state = this.dirs.get(key);
      if (!state || state.ino !== st.ino || state.ctimeNs !== st.ctimeNs) {
        let entries: fs.Dirent<Buffer>[];
        try {
          // Names as bytes: a name that is not UTF-8 would otherwise come back changed and be lost.
          entries = fs.readdirSync(dir, { withFileTypes: true, encoding: "buffer" });
        } catch {
          continue;
        }
        state = { ino: st.ino, ctimeNs: st.ctimeNs, subdirs: [], gits: [] };
        const names = new Set<string>();
        for (const e of entries) {
          const name = e.name.toString("latin1");
          names.add(name);
          const p = Buffer.concat([dir, Buffer.from("/"), e.name]);
          if (name === ".git") state.gits.push(p);
          else if (e.isDirectory() && !(dir === root && name === ".ledgerloop")) state.subdirs.push(p);
        }
        if (looksLikeGitDir(names)) state.gits.push(dir);
      }
      next.set(key, state);
      found.push(...state.gits);
      stack.push(...state.subdirs);
    }
    this.dirs = next;
    return found;
  }
}

function sameBytes(a: Buffer | null, b: Buffer | null): boolean {
  if (a === null || b === null) return a === b;
  return a.equals(b);
}
