/**
 * Where a path written in a command really lands, and whether a command may write there.
 *
 * Paths are resolved the way the kernel does: `..` after a symlink goes to the parent of the
 * symlink's target, and symlinks that already exist are followed (a link inside the workspace that
 * points at `/etc` does not make `/etc` writable). Globs are judged by the directory they expand
 * under and by whether their pattern can match a protected name.
 */
import fs from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import type { PathCandidate, ShellWord } from "./command-parts.js";
import { expandGlob, secretPatternHit, secretPatterns } from "./policy-secret-globs.js";
import { CREDENTIAL_PATHS_IN_HOME } from "./credentials.js";

/** Workspace-relative paths commands may never write, whatever the policy config says. */
export const PROTECTED_ROOTS = [".git", ".ledgerloop", "ledgerloop.config.json"] as const;

/** Devices that are fine to write to (the rest of /dev, /proc and /sys is not). */
const SAFE_DEVICES = new Set(["/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full", "/dev/random", "/dev/urandom"]);

/** Files that git and ledgerloop keep in their protected directories, used to tell whether a `-name` filter can reach them. */
const KNOWN_PROTECTED_NAMES = [
  ".git",
  "hooks",
  "config",
  "HEAD",
  "index",
  "packed-refs",
  "description",
  "ORIG_HEAD",
  "FETCH_HEAD",
  "MERGE_HEAD",
  "COMMIT_EDITMSG",
  "info",
  "exclude",
  "objects",
  "refs",
  "logs",
  "pack",
  "x.pack",
  "x.idx",
  "x.rev",
  "x.lock",
  "x.keep",
  "applypatch-msg",
  "commit-msg",
  "post-update",
  "pre-applypatch",
  "pre-commit",
  "pre-merge-commit",
  "pre-push",
  "pre-rebase",
  "pre-receive",
  "prepare-commit-msg",
  "push-to-checkout",
  "update",
  "post-checkout",
  "post-commit",
  "post-merge",
  "post-rewrite",
  "fsmonitor-watchman",
  "pre-commit.sample",
  ".ledgerloop",
  "state.db",
  "state.db-wal",
  "state.db-shm",
  "state.db-journal",
  "ledgerloop.config.json",
];

export interface WriteKind {
  /** The operation removes the path (rm, mv source, rmdir, unlink). */
  delete?: boolean;
  /** The operation applies to everything below the path too (rm -r, chmod -R, mv of a directory). */
  recursive?: boolean;
}

export type PathClass =
  | { kind: "ok"; path: string }
  | { kind: "outside"; path: string }
  | { kind: "protected"; path: string; rel: string; what: string }
  | { kind: "device"; path: string }
  | { kind: "network"; path: string }
  /** A glob or `find` match that may or may not reach a protected path or `..`. */
  | { kind: "maybe"; path: string; why: string }
  | { kind: "unknown"; path: string; why: string };

const SEVERITY: Record<PathClass["kind"], number> = { ok: 0, unknown: 1, maybe: 2, network: 3, outside: 4, device: 4, protected: 4 };

export interface PathJudgeOptions {
  workspace: string;
  home: string;
  /** Extra absolute directories where writes are fine (below them, not the directories themselves). */
  writable: string[];
  /** Extra workspace-relative paths or globs that commands may not write. */
  protectedPaths: string[];
  followSymlinks: boolean;
}

/** Resolves and classifies paths for one evaluation (one workspace, one home). */
export class PathJudge {
  readonly workspace: string;
  readonly home: string;
  private readonly writable: string[];
  private readonly extraProtected: Array<{ pattern: string; match: (rel: string) => boolean }>;
  private protectedNamesCache: string[] | null = null;
  private secretPatternsCache: ReturnType<typeof secretPatterns> | null = null;

  constructor(private readonly opts: PathJudgeOptions) {
    this.workspace = this.physical("/", opts.workspace);
    this.home = this.physical("/", opts.home);
    this.writable = opts.writable.map((w) => this.physical("/", w));
    this.extraProtected = opts.protectedPaths.map((pattern) => ({
      pattern,
      match: picomatch(pattern.replace(/\/+$/, ""), { dot: true }),
    }));
  }

  /**
   * `rel` resolved against `base` as the kernel would: existing symlinks followed (`keepLast`
   * leaves the final component unresolved, as `rm` and `mv` act on the link itself).
   */
  physical(base: string, rel: string, keepLast = false): string {
    const hops = { n: 0 };
    const walk = (start: string, p: string, last: boolean): string => {
      let cur = p.startsWith("/") ? "/" : start;
      const segs = p.split("/").filter((s) => s !== "" && s !== ".");
      segs.forEach((s, i) => {
        if (s === "..") {
          cur = path.dirname(cur);
          return;
        }
        const next = cur === "/" ? `/${s}` : `${cur}/${s}`;
        // /dev and /proc are judged by name: /dev/stderr → /proc/self/fd/2 → wherever stderr points.
        if (!this.opts.followSymlinks || (last && i === segs.length - 1) || hops.n > 40 || /^\/(dev|proc)\//.test(next)) {
          cur = next;
          return;
        }
        let target: string | null = null;
        try {
          if (fs.lstatSync(next).isSymbolicLink()) target = fs.readlinkSync(next);
        } catch {
          // does not exist (yet): taken as written
        }
        if (target === null) cur = next;
        else {
          hops.n++;
          cur = walk(cur, target, false);
        }
      });
      return cur;
    };
    return walk(base.startsWith("/") ? base : "/", rel, keepLast && !rel.endsWith("/"));
  }

  /** Workspace-relative POSIX path, or null when outside. */
  relInside(abs: string): string | null {
    if (abs === this.workspace) return "";
    return abs.startsWith(`${this.workspace}/`) ? abs.slice(this.workspace.length + 1) : null;
  }

  isInside(abs: string): boolean {
    return this.relInside(abs) !== null;
  }

  /** Why a workspace-relative path is protected, or null. */
  protectedWhy(rel: string, kind: WriteKind): { rel: string; what: string } | null {
    const segs = rel.split("/").filter(Boolean);
    const git = segs.findIndex((s) => s.toLowerCase() === ".git");
    if (git >= 0) return { rel: segs.slice(0, git + 1).join("/"), what: "git's own data (.git/: hooks, config, objects)" };
    if (segs[0] === ".ledgerloop") return { rel: ".ledgerloop", what: "the run's state (.ledgerloop/)" };
    if (rel === "ledgerloop.config.json") return { rel, what: "the sandbox configuration (ledgerloop.config.json)" };
    for (const p of this.extraProtected) {
      if (p.match(rel) || segs.some((_, i) => p.match(segs.slice(0, i + 1).join("/")))) return { rel, what: `a protected path (${p.pattern})` };
    }
    if (kind.recursive || kind.delete) {
      if (rel === "") return { rel: ".", what: "the whole workspace, including .git/ and .ledgerloop/" };
      for (const p of this.extraProtected) {
        if (!/[*?[{]/.test(p.pattern) && p.pattern.startsWith(`${rel}/`) && kind.recursive)
          return { rel, what: `a directory holding the protected path ${p.pattern}` };
      }
    }
    return null;
  }

  private inWritable(abs: string, kind: WriteKind): boolean {
    return this.writable.some((w) => abs.startsWith(`${w}/`) || (abs === w && !kind.delete && !kind.recursive));
  }

  /** Classifies one absolute (already physical) path as a write target. */
  classifyAbs(abs: string, kind: WriteKind): PathClass {
    if (/^\/dev\/(tcp|udp)\//.test(abs)) return { kind: "network", path: abs };
    if (!kind.delete && (SAFE_DEVICES.has(abs) || /^\/dev\/fd\/\d+$/.test(abs) || /^\/proc\/self\/fd\/\d+$/.test(abs))) return { kind: "ok", path: abs };
    if (/^\/(dev|proc|sys)(\/|$)/.test(abs)) return { kind: "device", path: abs };
    const rel = this.relInside(abs);
    if (rel !== null) {
      const p = this.protectedWhy(rel, kind);
      return p ? { kind: "protected", path: abs, ...p } : { kind: "ok", path: abs };
    }
    if (this.inWritable(abs, kind)) return { kind: "ok", path: abs };
    return { kind: "outside", path: abs };
  }

  /** Classifies a word used as a write target, over all its values and all possible working directories; the worst wins. */
  classifyWord(word: ShellWord, cwds: string[] | null, kind: WriteKind): PathClass {
    if (word.below) return this.classifyBelow(word.below, cwds, kind);
    if (!word.candidates) {
      return { kind: "unknown", path: word.text, why: `\`${word.raw}\` is computed at run time` };
    }
    let worst: PathClass = { kind: "ok", path: word.text };
    for (const c of word.candidates) {
      const bases = c.text.startsWith("/") ? ["/"] : cwds;
      if (!bases) {
        worst = pickWorse(worst, { kind: "unknown", path: c.text, why: "the working directory is not known at this point" });
        continue;
      }
      for (const base of bases) {
        let cls = c.glob ? this.classifyGlob(c.text, base, kind) : this.classifyAbs(this.physical(base, c.text, kind.delete), kind);
        // A relative path that climbs out of the workspace is outside even when it lands in /tmp:
        // workspaces often live in /tmp themselves, next to other ones.
        // (Also from an ancestor of the workspace: `cd .. && rm -rf other`.)
        const fromWorkspace = this.isInside(base) || this.workspace.startsWith(`${base === "/" ? "" : base}/`);
        if (cls.kind === "ok" && !c.text.startsWith("/") && fromWorkspace && !this.isInside(cls.path) && !/^\/(dev|proc)\//.test(cls.path)) {
          cls = { kind: "outside", path: cls.path };
        }
        worst = pickWorse(worst, cls);
      }
    }
    return worst;
  }

  private classifyGlob(pattern: string, base: string, kind: WriteKind): PathClass {
    const abs = pattern.startsWith("/");
    const segs = pattern.split("/").filter((s) => s !== "");
    const firstGlob = segs.findIndex((s) => /(^|[^\\])[*?[]/.test(s));
    const prefix = segs.slice(0, firstGlob).map(unescapePm);
    const rest = segs.slice(firstGlob);
    const dir = this.physical(abs ? "/" : base, `${abs ? "/" : ""}${prefix.join("/")}`);
    for (const s of rest) {
      if (s === ".." || (s !== "." && picomatch.isMatch("..", s, { dot: true }) && s.startsWith("."))) {
        return { kind: "maybe", path: `${dir}/${rest.join("/")}`, why: `the pattern \`${s}\` can match \`..\`, the parent directory` };
      }
    }
    if (rest.some((s) => s === ".")) return { kind: "unknown", path: pattern, why: "the pattern contains `.`" };
    // Matches lie strictly below `dir`: judge `dir` as the place written into.
    const container = this.classifyAbs(dir, { delete: false, recursive: false });
    if (container.kind === "outside" && this.inWritable(`${dir}/x`, kind)) return { kind: "ok", path: dir };
    if (container.kind !== "ok") return container.kind === "outside" ? { kind: "outside", path: `${dir}/${rest.join("/")}` } : container;
    const rel = this.relInside(dir);
    if (rel === null) return { kind: "ok", path: dir };
    // Can the pattern reach a protected path below `dir`?
    for (const root of [...PROTECTED_ROOTS, ...this.extraProtected.map((p) => p.pattern).filter((p) => !/[*?[{]/.test(p))]) {
      if (!fs.existsSync(path.join(this.workspace, root))) continue; // a glob only matches what exists
      const rootSegs = root.split("/");
      const relSegs = rel === "" ? [] : rel.split("/");
      if (relSegs.length >= rootSegs.length || relSegs.some((s, i) => s !== rootSegs[i])) continue;
      const below = rootSegs.slice(relSegs.length);
      let matches = true;
      for (let i = 0; i < Math.min(below.length, rest.length); i++) {
        if (rest[i] === "**") break;
        if (!picomatch.isMatch(below[i]!, rest[i]!, { dot: false })) {
          matches = false;
          break;
        }
      }
      if (!matches) continue;
      const reaches = rest.includes("**") || rest.length >= below.length || kind.recursive || kind.delete;
      if (reaches) {
        const p = this.protectedWhy(root, kind)!;
        return {
          kind: "protected",
          path: `${dir}/${rest.join("/")}`,
          rel: `${rel ? `${rel}/` : ""}${rest.join("/")}`,
          what: `${p.what}, which the pattern can match`,
        };
      }
    }
    if (rest.some((s) => picomatch.isMatch(".git", s, { dot: false }))) {
      return { kind: "protected", path: `${dir}/${rest.join("/")}`, rel: rest.join("/"), what: "a .git directory, which the pattern can match" };
    }
    return { kind: "ok", path: dir };
  }

  private classifyBelow(below: { bases: PathCandidate[] | null; names: string[] }, cwds: string[] | null, kind: WriteKind): PathClass {
    if (!below.bases) return { kind: "unknown", path: "{}", why: "the directories `find` searches are computed at run time" };
    let worst: PathClass = { kind: "ok", path: "{}" };
    for (const b of below.bases) {
      const pattern = b.glob ? `${b.text}/**` : `${b.text.replace(/\/+$/, "") || "/"}/**`;
      const bases = b.text.startsWith("/") ? ["/"] : cwds;
      if (!bases) {
        worst = pickWorse(worst, { kind: "unknown", path: b.text, why: "the working directory is not known at this point" });
        continue;
      }
      for (const base of bases) {
        const dir = b.glob ? null : this.physical(base, b.text);
        if (dir) {
          // The start directory itself can be a match too (`find build -delete` removes build/).
          const self = this.classifyAbs(dir, { ...kind, recursive: false });
          const rel = this.relInside(dir);
          if (self.kind !== "ok" && !(self.kind === "outside" && this.inWritable(`${dir}/x`, kind))) {
            worst = pickWorse(worst, self.kind === "protected" && rel === "" ? { kind: "ok", path: dir } : self);
            if (self.kind !== "protected") continue;
          }
          if (rel !== null && this.ancestorOfProtected(rel) && !this.namesExclude(below.names)) {
            worst = pickWorse(worst, {
              kind: "maybe",
              path: dir,
              why: `\`find ${b.text}\` also walks into .git/ and .ledgerloop/; narrow it with -name, or start below the workspace root`,
            });
          }
        } else {
          worst = pickWorse(worst, this.classifyGlob(pattern, base, kind));
        }
      }
    }
    return worst;
  }

  private ancestorOfProtected(rel: string): boolean {
    if (rel === "") return true;
    return [...PROTECTED_ROOTS].some((r) => r.startsWith(`${rel}/`)) || rel.split("/").some((s) => s.toLowerCase() === ".git");
  }

  /** True when `-name` filters cannot match anything git or ledgerloop keeps in their directories. */
  private namesExclude(names: string[]): boolean {
    if (names.length === 0) return false;
    if (!this.protectedNamesCache) {
      const found = new Set<string>(KNOWN_PROTECTED_NAMES);
      const walk = (dir: string, depth: number) => {
        if (depth > 3 || found.size > 2000) return;
        let entries: fs.Dirent[];
        try {
          entries = fs.readdirSync(dir, { withFileTypes: true });
        } catch {
          return;
        }
        for (const e of entries) {
          if (dir.endsWith("/objects") && e.isDirectory()) continue;
          found.add(e.name);
          if (e.isDirectory()) walk(path.join(dir, e.name), depth + 1);
        }
      };
      walk(path.join(this.workspace, ".ledgerloop"), 0);
      walk(path.join(this.workspace, ".git", "hooks"), 0);
      walk(path.join(this.workspace, ".git", "refs"), 0);
      this.protectedNamesCache = [...found];
    }
    // A match must satisfy every -name test; excluded when no protected name satisfies them all.
    return !this.protectedNamesCache.some((n) => names.every((pat) => picomatch.isMatch(n, pat, { dot: true })));
  }

  /** True when `name` is installed in a node_modules/.bin between a working directory and the workspace root. */
  binInWorkspace(name: string, cwds: string[] | null): boolean {
    const starts = cwds ?? [this.workspace];
    return starts.some((c) => {
      let dir = this.physical("/", c);
      for (;;) {
        if (!this.isInside(dir)) return false;
        if (fs.existsSync(path.join(dir, "node_modules", ".bin", name))) return true;
        if (dir === this.workspace) return false;
        dir = path.dirname(dir);
      }
    });
  }

  /** Directories programs are normally installed in (system and per-user tool directories). */
  isSystemBin(abs: string): boolean {
    const dir = path.dirname(abs);
    if (
      [
        "/bin",
        "/usr/bin",
        "/usr/local/bin",
        "/sbin",
        "/usr/sbin",
        "/usr/local/sbin",
        "/opt/homebrew/bin",
        "/snap/bin",
        "/usr/local/go/bin",
        "/usr/lib/go/bin",
      ].includes(dir)
    )
      return true;
    const rel = dir.startsWith(`${this.home}/`) ? dir.slice(this.home.length + 1) : null;
    if (rel === null) return false;
    return (
      [".cargo/bin", "go/bin", ".local/bin", ".bun/bin", ".deno/bin", ".volta/bin", ".pyenv/shims", ".rbenv/shims", ".yarn/bin"].includes(rel) ||
      /^\.nvm\/versions\/node\/[^/]+\/bin$/.test(rel)
    );
  }

  /** Reads that expose credentials: ~/.ssh, ~/.aws, … (of this or any user's home) and /proc/<pid>/environ. */
  secretRead(abs: string): string | null {
    if (/^\/proc\/[^/]+\/environ$/.test(abs)) return "another process's environment";
    if (/^\/etc\/(shadow|gshadow|sudoers)(\/|$)/.test(abs)) return "the system's password or sudo files";
    if (this.isInside(abs)) return null;
    // Another user's credentials are no less secret than this one's (/root/.ssh while HOME is elsewhere).
    const other = /^\/(?:root|(?:home|Users)\/[^/]+)(?=\/|$)/.exec(abs)?.[0];
    for (const home of other && other !== this.home ? [this.home, other] : [this.home]) {
      const rel = abs === home ? "" : abs.startsWith(`${home}/`) ? abs.slice(home.length + 1) : null;
      if (rel === null) continue;
      for (const s of CREDENTIAL_PATHS_IN_HOME) {
        if (rel === s || rel.startsWith(`${s}/`)) return `~/${s}`;
      }
    }
    return null;
  }

  /**
   * {@link secretRead} for a glob (picomatch text, relative to `base` unless absolute): what its
   * pattern could match, or what it matches on disk now, through any symlink. Matches that stay in
   * the workspace are not secrets, as for a literal path.
   */
  secretGlob(base: string, pattern: string): string | null {
    const segs = pattern.split("/").filter((s) => s !== "");
    const firstGlob = segs.findIndex((s) => /(^|[^\\])[*?[]/.test(s));
    const rest = firstGlob < 0 ? [] : segs.slice(firstGlob);
    const dir = this.physical(
      pattern.startsWith("/") ? "/" : base,
      `${pattern.startsWith("/") ? "/" : ""}${segs
        .slice(0, firstGlob < 0 ? segs.length : firstGlob)
        .map(unescapePm)
        .join("/")}`,
    );
    if (!this.isInside(dir)) {
      this.secretPatternsCache ??= secretPatterns(this.home, CREDENTIAL_PATHS_IN_HOME);
      const hit = secretPatternHit(dir, rest, this.secretPatternsCache);
      if (hit) return hit;
    }
    for (const m of expandGlob(dir, rest) ?? []) {
      const s = this.secretRead(this.physical("/", m));
      if (s) return s;
    }
    return null;
  }
}

function pickWorse(a: PathClass, b: PathClass): PathClass {
  return SEVERITY[b.kind] > SEVERITY[a.kind] ? b : a;
}

function unescapePm(s: string): string {
  return s.replace(/\\(.)/g, "$1");
}
