import { isAlwaysSkipped, isIgnored, makeIgnore, readIgnoreFile, type RuleSet } from "./ignore-rules.js";

/**
 * Answers "would walkFiles list this path?" for single paths without walking the tree: the same
 * rules and precedence (ignore-rules.ts), each directory's .gitignore read once and cached until
 * {@link IgnoreChecker.reset}.
 */
export class IgnoreChecker {
  private readonly cache = new Map<string, RuleSet | null>();

  constructor(private readonly workspace: string) {}

  /** Forget cached rules (call when a .gitignore changed). */
  reset(): void {
    this.cache.clear();
  }

  isIgnored(rel: string): boolean {
    const segments = rel.split("/");
    if (segments.some((_, i) => isAlwaysSkipped(segments.slice(0, i + 1).join("/")))) return true;
    // Each ancestor directory, and then the file itself, against the rules of the directories above it.
    const exclude = this.rules("\0exclude");
    const rules: RuleSet[] = exclude ? [exclude] : [];
    for (let depth = 1; depth <= segments.length; depth++) {
      const dir = segments.slice(0, depth - 1).join("/");
      const own = this.rules(dir);
      if (own) rules.push(own);
      if (isIgnored(rules, segments.slice(0, depth).join("/"), depth < segments.length)) return true;
    }
    return false;
  }

  private rules(base: string): RuleSet | null {
    const hit = this.cache.get(base);
    if (hit !== undefined) return hit;
    const file = base === "\0exclude" ? ".git/info/exclude" : base === "" ? ".gitignore" : `${base}/.gitignore`;
    const text = readIgnoreFile(this.workspace, file);
    const set = text === undefined ? null : { base: base === "\0exclude" ? "" : base, ig: makeIgnore(text) };
    this.cache.set(base, set);
    return set;
  }
}
