import fs from "node:fs";
import path from "node:path";
import ignore, { type Ignore } from "ignore";

const IGNORE_CASE = process.platform === "darwin" || process.platform === "win32";

/**
 * Answers "would walkFiles list this path?" for single paths without walking the tree: the same
 * rules (.git/info/exclude, then each ancestor's .gitignore, the deepest with an opinion deciding;
 * .git/ and the root .ledgerloop/ always hidden). Rules are cached until {@link IgnoreChecker.reset}.
 */
export class IgnoreChecker {
  private readonly cache = new Map<string, Ignore | null>();

  constructor(private readonly workspace: string) {}

  /** Forget cached rules (call when a .gitignore changed). */
  reset(): void {
    this.cache.clear();
  }

  isIgnored(rel: string): boolean {
    const segments = rel.split("/");
    if (segments.includes(".git") || segments[0] === ".ledgerloop") return true;
    // Each ancestor directory, and then the file itself, checked against the rules above it.
    for (let depth = 1; depth <= segments.length; depth++) {
      const target = segments.slice(0, depth).join("/");
      const isDir = depth < segments.length;
      if (this.check(target, isDir, segments.slice(0, depth - 1))) return true;
    }
    return false;
  }

  private check(target: string, isDir: boolean, parentSegments: string[]): boolean {
    const bases = [""];
    for (let i = 1; i <= parentSegments.length; i++) bases.push(parentSegments.slice(0, i).join("/"));
    for (let i = bases.length - 1; i >= 0; i--) {
      const base = bases[i]!;
      const ig = this.rules(base);
      if (!ig) continue;
      const sub = base === "" ? target : target.slice(base.length + 1);
      const r = ig.test(isDir ? `${sub}/` : sub);
      if (r.ignored) return true;
      if (r.unignored) return false;
    }
    const exclude = this.rules("\0exclude");
    return exclude ? exclude.test(isDir ? `${target}/` : target).ignored : false;
  }

  private rules(base: string): Ignore | null {
    if (this.cache.has(base)) return this.cache.get(base)!;
    const file = base === "\0exclude" ? path.join(this.workspace, ".git/info/exclude") : path.join(this.workspace, base, ".gitignore");
    let ig: Ignore | null = null;
    try {
      ig = ignore({ ignorecase: IGNORE_CASE }).add(fs.readFileSync(file, "utf8").replace(/^\uFEFF/, ""));
    } catch {
      ig = null;
    }
    this.cache.set(base, ig);
    return ig;
  }
}
