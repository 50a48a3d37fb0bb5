/**
 * Whether a glob in a command can read a credential store.
 *
 * A literal path is resolved and compared with the secret list, but a glob (`~/.aw?/credentials`,
 * `~/.ss[h]/id_rsa`, `/root/.ssh/*`) names no path until bash expands it. It is judged twice: by its
 * pattern (could it match a secret path, or a path below one, whether or not that exists here?) and
 * by expanding it against the file system as bash would (so a symlink a match goes through is
 * followed like any other path). Either one reaching a secret makes the read a secret read.
 */
import fs from "node:fs";
import path from "node:path";
import picomatch from "picomatch";

/** A secret location as path segments; null stands for any one name (the pid in /proc/<pid>/environ). */
export interface SecretPattern {
  segs: Array<string | null>;
  /** How the finding names it (`~/.ssh`). */
  name: string;
}

/** One segment of a glob: a matcher for a name, or `**` (any number of directories). */
type GlobSeg = ((name: string) => boolean) | "**";

const MAX_EXPANDED = 2000;

/** A glob as segment matchers: `dir` (a real path, matched literally) followed by the pattern segments `rest`. */
export function globSegments(dir: string, rest: readonly string[]): GlobSeg[] {
  const lit = dir
    .split("/")
    .filter((s) => s !== "")
    .map(
      (s): GlobSeg =>
        (name: string) =>
          name === s,
    );
  return [
    ...lit,
    ...rest.map((s): GlobSeg => {
      if (s === "**") return "**";
      // dot: true on purpose: GLOBIGNORE, zsh's GLOB_DOTS and the like make `*` match dot files, and a
      // pattern that could reach a credential store is judged by what it could reach.
      const m = picomatch(s, { dot: true });
      return (name: string) => m(name);
    }),
  ];
}

/**
 * True when the glob can match `secret` itself or a path below it. A glob that ends above the
 * secret (`~/.*` against `~/.config/gh`) matches only an ancestor, as a literal `~/.config` would.
 */
export function globCanReach(glob: GlobSeg[], secret: Array<string | null>): boolean {
  const go = (i: number, j: number): boolean => {
    if (j === secret.length) return true; // the rest of the pattern lies below the secret
    if (i === glob.length) return false;
    const g = glob[i]!;
    if (g === "**") return go(i + 1, j) || go(i, j + 1);
    const s = secret[j] ?? null;
    return (s === null || g(s)) && go(i + 1, j + 1);
  };
  return go(0, 0);
}

/** The first secret the glob `dir`/`rest` can reach, by name, or null. */
export function secretPatternHit(dir: string, rest: readonly string[], secrets: readonly SecretPattern[]): string | null {
  const glob = globSegments(dir, rest);
  for (const s of secrets) if (globCanReach(glob, s.segs)) return s.name;
  return null;
}

/**
 * What bash would expand the glob `dir`/`rest` to on this file system now (absolute paths, links
 * not resolved), or null when the expansion is too large to list (`**`, huge directories).
 */
export function expandGlob(dir: string, rest: readonly string[]): string[] | null {
  const segs = rest;
  let paths = [dir];
  let seen = 0;
  for (const seg of segs) {
    if (seg === "**") return null;
    const literal = !/(^|[^\\])[*?[]/.test(seg);
    const next: string[] = [];
    for (const dir of paths) {
      if (literal) {
        const p = path.join(dir, seg.replace(/\\(.)/g, "$1"));
        if (fs.existsSync(p) || isLink(p)) next.push(p);
        continue;
      }
      let names: string[];
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      seen += names.length;
      if (seen > MAX_EXPANDED) return null;
      const m = picomatch(seg, { dot: true });
      for (const n of names) if (m(n)) next.push(path.join(dir, n));
    }
    paths = next;
    if (paths.length === 0) return [];
  }
  return paths;
}

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * The secret locations a glob is checked against: each home-relative store under the given home,
 * under /root, and under any /home/<user> or /Users/<user>; plus the system's own secret files.
 */
export function secretPatterns(home: string, homeStores: readonly string[]): SecretPattern[] {
  const split = (p: string) => p.split("/").filter((s) => s !== "");
  const out: SecretPattern[] = [];
  const homes: Array<Array<string | null>> = [split(home), ["root"], ["home", null], ["Users", null]];
  for (const h of homes) for (const s of homeStores) out.push({ segs: [...h, ...split(s)], name: `~/${s}` });
  for (const f of ["shadow", "gshadow", "sudoers"]) out.push({ segs: ["etc", f], name: "the system's password or sudo files" });
  out.push({ segs: ["proc", null, "environ"], name: "another process's environment" });
  return out;
}
