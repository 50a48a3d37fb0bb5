/**
 * gitleaks' generic rule, our way: a value assigned to a key that names a credential only loosely
 * (`mapbox_key`, `service_token`, `api`, `webhookSecret`) is hidden when it looks generated: 10 to
 * 150 token characters, letters and digits both, Shannon entropy of at least 3.5 bits a character.
 * Words, paths, versions, dates and identifiers (a word may end in digits) do not pass, so code that merely names a key
 * (`sortKey: "createdAt"`, `key={item.id}`, `cache_key = "v2"`) stays.
 */

/** Words that make a key a candidate (matched against the key's words, not substrings: no "monkey"). */
const GENERIC_WORDS = new Set([
  "key",
  "keys",
  "token",
  "tokens",
  "secret",
  "secrets",
  "api",
  "auth",
  "access",
  "credential",
  "credentials",
  "creds",
  "password",
  "passwd",
  "pwd",
  "apikey",
  "authtoken",
  "accesstoken",
  "secretkey",
  "privatekey",
  "accesskey",
]);

/** A word before `key`/`token` that says it is not a credential (database keys, UI keys, public ones). */
const NOT_CREDENTIAL_BEFORE = new Set([
  "public",
  "pub",
  "primary",
  "foreign",
  "sort",
  "partition",
  "hash",
  "cache",
  "idempotency",
  "dedup",
  "dedupe",
  "lookup",
  "bucket",
  "schema",
  "sequence",
  "natural",
  "hot",
  "idx",
  "index",
  "row",
  "unique",
  "composite",
  "cursor",
  "translation",
  "i18n",
  "locale",
  "object",
  "s3",
  "map",
  "dict",
  "react",
  "list",
  "group",
  "shard",
  "routing",
  "message",
  "event",
  "lock",
  "join",
  "search",
  "query",
  "csrf",
  "xsrf",
  "next",
  "page",
  "pagination",
  "continuation",
  "sync",
  "storage_class",
  "keyboard",
]);

/** A last word that says the value describes the credential rather than being it. */
const NOT_CREDENTIAL_LAST = new Set([
  "id",
  "ids",
  "name",
  "names",
  "file",
  "path",
  "dir",
  "url",
  "uri",
  "endpoint",
  "host",
  "type",
  "version",
  "format",
  "hash",
  "digest",
  "checksum",
  "fingerprint",
  "sha",
  "md5",
  "algorithm",
  "alg",
  "length",
  "size",
  "count",
  "prefix",
  "suffix",
  "header",
  "field",
  "label",
  "expiry",
  "expires",
  "ttl",
  "timeout",
  "region",
  "scope",
  "scopes",
  "mode",
  "level",
]);

/** True when a key, given as its words, may hold a generated credential. */
export function genericKeyName(words: string[]): boolean {
  if (!words.length || NOT_CREDENTIAL_LAST.has(words[words.length - 1]!)) return false;
  return words.some((w, i) => GENERIC_WORDS.has(w) && !(i > 0 && NOT_CREDENTIAL_BEFORE.has(words[i - 1]!)) && !words.includes("public"));
}

/** Shannon entropy of a string, in bits per character. */
export function entropy(value: string): number {
  const counts = new Map<string, number>();
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / value.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** True when a value looks generated rather than written: a token a key-name rule may hide. */
export function generatedValue(value: string): boolean {
  if (value.length < 10 || value.length > 150 || !/^[\w.=+/~-]+$/.test(value)) return false;
  if (!/\d/.test(value) || !/[A-Za-z]/.test(value)) return false;
  // Paths and file names (`uploads/2024/a1.png`, `./v2/x`), dotted versions and dates.
  if (/^(?:\.{0,2}\/|~\/)/.test(value) || /\.[a-z]{2,4}$/.test(value) || /^v?\d+(?:[.-]\d+)+(?:[-+.][\w.]+)?$/i.test(value)) return false;
  // Code: identifiers joined by dots, underscores or dashes (`require_hash.sha256`, `user_v2`).
  if (value.split(/[._-]/).every((seg) => /^(?:[A-Za-z]+\d*|\d+)?$/.test(seg))) return false;
  return entropy(value) >= 3.5;
}
