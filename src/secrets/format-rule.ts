/**
 * The shape of a credential-format rule (rules.ts lists them). Every pattern must stay linear on
 * adversarial input: bounded or literal-anchored quantifiers only, no nested unbounded repetition.
 * `keywords` (any one must occur, case-sensitive) let most rules skip a text without running their
 * regex at all.
 */
export interface FormatRule {
  /** Short name shown in the replacement: `[REDACTED]:<id>`. */
  id: string;
  re: RegExp;
  /** Literal substrings one of which every match contains (a cheap pre-check). */
  keywords?: string[];
  /** A pre-check regex starting with a literal, for a rule whose own regex starts with a class. */
  gate?: RegExp;
  /**
   * When the match carries context that must stay (`AccountKey=` of a connection string, the user
   * of a URL, the `mysql -p` before a password): group 1 is that leading context, group 2 the
   * secret. Default: the whole match.
   */
  group?: 2;
  /**
   * Whether a match really is a secret (for shapes that ordinary prose can also take); `pre` is
   * group 1 of a `group: 2` rule, "" when it did not take part.
   */
  accept?: (secret: string, pre: string) => boolean;
  /**
   * For a secret whose extent no linear regex can bound (a key block): `re` matches its start, and
   * this gives where it ends (exclusive), from the end of that match.
   */
  span?: (text: string, from: number) => number;
}

/** Raw template strings, so that regex sources are written once, without doubled backslashes. */
export const b = String.raw;

/** A token ends at a character that cannot continue it (letters, digits, - and _). */
export const END = b`(?![A-Za-z0-9_-])`;

/** A line-number gutter (`read_file`'s `12| `, `grep -n`'s `12:`, `cat -n`'s tab), optional. */
export const GUTTER = b`(?:\d{1,7}(?:[|:] ?|\t))?`;

/** A global regex from a raw source. */
export const rx = (source: string, flags = "g"): RegExp => new RegExp(source, flags);
