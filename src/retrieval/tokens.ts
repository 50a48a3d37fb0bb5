// Identifier-aware tokenization shared by the n-gram index, the default embedder and the queries, so
// that `user role`, `UserRole`, `user_role` and `userRoles.ts` all meet on the same terms.

const WORD = /[A-Za-z_$][A-Za-z0-9_$]*|[0-9]+(?:\.[0-9]+)*/g;
const MAX_WORD = 64;
/** A query word with its joiners: `trie-router`, `src/utils/url.ts`, `rich.text.Text`, `UserRole`. */
const COMPOUND = /[A-Za-z0-9_$]+(?:[-./][A-Za-z0-9_$]+)*/g;

/**
 * Splits one identifier (or a text: it is cut at every non-alphanumeric first; pieces longer than
 * 64 characters are dropped) into lower-case parts: `getHTTPServer` → get, http, server; `user_role` →
 * user, role; digits stay on the letters before them (`utf8`, `sha256`, `get2` + `fa` from `get2FA`).
 */
export function identifierParts(word: string): string[] {
  const out: string[] = [];
  for (const piece of word.split(/[^A-Za-z0-9]+/)) {
    // Longer pieces are blobs (hashes, base64, a run of one letter) with no meaning as terms, and
    // the acronym split below backtracks quadratically on a long capital run (40k took 1.2 s).
    if (!piece || piece.length > MAX_WORD) continue;
    const spaced = piece.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2");
    for (const p of spaced.split(" ")) if (p) out.push(p.toLowerCase());
  }
  return out;
}

/**
 * Index terms of a text: every identifier lower-cased whole, and, when it splits into several parts,
 * each part too. `UserRole.check` → userrole, user, role, check.
 */
export function indexTerms(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(WORD)) {
    const word = m[0];
    if (word.length > MAX_WORD) continue; // minified blobs and hashes carry no meaning
    const parts = identifierParts(word);
    if (parts.length === 0) continue;
    const whole = parts.join("");
    out.push(whole);
    if (parts.length > 1) for (const p of parts) out.push(p);
  }
  return out;
}

/** The index form of a text: its terms, space-separated and space-padded (so a phrase `" pars"` is a word prefix). */
export function wordsColumn(text: string): string {
  return ` ${indexTerms(text).join(" ")} `;
}

/** English words and commit boilerplate that say nothing about where code lives. */
export const STOPWORDS = new Set(
  (
    "a an and are as at be been being but by can could did do does doing for from had has have having he her " +
    "here his how i if in into is it its itself just me more most my no nor not now of off on once only or " +
    "other our out over own same she should so some such than that the their them then there these they this " +
    "those through to too under until up very was we were what when where which while who whom why will with " +
    "would you your also via after before again all any both each few further per etc e.g i.e it's don't " +
    "doesn't isn't can't won't let's " +
    // Commit-message boilerplate: present in nearly every message, so it would only add noise.
    "fix fixes fixed fixing feat chore bump refactor refactors refactored minor small typo typos wip pr prs " +
    "issue issues closes close closed resolves resolved ref refs co authored signed"
  ).split(/\s+/),
);

/** Suffixes {@link stem} strips, longest first. */
const SUFFIXES = ["ations", "ation", "ments", "ment", "ings", "ing", "ies", "ers", "er", "ed", "es", "s", "y", "e"];

/**
 * A light suffix stripper for prefix matching: `parsing`, `parses`, `parsed`, `parser` and `parse` all
 * become `pars`; `entries`/`entry` → `entr`. At least four letters stay, so short words keep their shape.
 */
export function stem(term: string): string {
  if (term.length <= 4 || /[0-9]/.test(term)) return term;
  for (const suffix of SUFFIXES) {
    if (term.endsWith(suffix) && term.length - suffix.length >= 4) return term.slice(0, -suffix.length);
  }
  return term;
}

/** One query term with how it should match. */
export interface QueryTerm {
  /** Lower-case text to look for. */
  text: string;
  /** `prefix`: any indexed word starting with it (stems, parts); `word`: the whole indexed word. */
  match: "prefix" | "word";
}

/**
 * Terms of a search query: parts of every identifier as stems matched by prefix, plus each compound
 * identifier whole (so `UserRole` ranks chunks naming `UserRole` above those that only say "user").
 */
export function queryTerms(query: string): QueryTerm[] {
  const seen = new Map<string, QueryTerm>();
  const add = (text: string, match: QueryTerm["match"]) => {
    const key = `${match}:${text}`;
    if (!seen.has(key)) seen.set(key, { text, match });
  };
  const termOf = (p: string) => (p.length <= 3 ? p : stem(p));
  for (const m of query.matchAll(COMPOUND)) {
    const compound = m[0];
    if (compound.length > MAX_WORD) continue;
    const parts = identifierParts(compound);
    if (parts.length === 0) continue;
    if (parts.length > 1) {
      // `UserRole`, `user_role`, `trie-router`: the parts side by side (indexed identifiers are followed
      // by their parts, paths are split at / - .), and the identifier whole.
      if (!/[-./]/.test(compound)) add(parts.join(""), "word");
      const content = parts.filter((p) => !STOPWORDS.has(p));
      if (content.length > 1 && content.length === parts.length) add([...parts.slice(0, -1), termOf(parts[parts.length - 1]!)].join(" "), "prefix");
    }
    for (const p of parts) {
      if (STOPWORDS.has(p)) continue;
      if (p.length < 2 && parts.length === 1) continue;
      // Short words as prefixes (`id`, `ui`, `api`) would match half the vocabulary.
      if (p.length <= 3) add(p, "word");
      else add(stem(p), "prefix");
    }
  }
  return [...seen.values()];
}

/** An FTS5 MATCH expression (OR of phrases) for the terms, or null when there is nothing to match. */
export function ftsQuery(terms: QueryTerm[]): string | null {
  const phrases = terms.map((t) => `" ${t.text.replace(/"/g, "")}${t.match === "word" ? " " : ""}"`);
  return phrases.length ? phrases.join(" OR ") : null;
}
