import { generatedValue, genericKeyName } from "./generic.js";

/**
 * Secrets recognised by the name they are assigned to rather than by their shape: `password=…`,
 * `DB_PASSWORD=…` (a `.env` or `env` listing), `"client_secret": "…"`, `api_key: …`,
 * `export TOKEN=…`, `--password …`. The key stays, the value is replaced.
 *
 * What counts as a secret-looking key: one of its words (split at `_ . -` and camelCase) is
 * password/passwd/pwd/pass/passphrase/secret/token/auth/authorization/credential(s)/creds/cookie, or
 * `key` preceded by a word naming the kind of key (api, access, private, signing, client, …), or any
 * `KEY` word in an UPPER_SNAKE environment name (STRIPE_KEY). A key whose last word says it holds
 * something else (…_ID, …_NAME, …_FILE, …_PATH, …_URL, …_TYPE, …_COUNT, …) is not secret-looking.
 *
 * Values that are left alone, because they are not secrets and hiding them would garble code and
 * docs the model reads: empty values, `null`/`none`/`true`/`false`/`undefined`, references
 * (`${VAR}`, `$VAR`, `{{ var }}`, `<your-token>`, `%s`), masks (`xxxx`, `****`), the well-known
 * placeholders `changeme`, `password`, `secret`, `example`, `placeholder`, and code: a call
 * (`getToken()`), a command substitution (`$(cat f)`), the key's own name (`password=password`). In a
 * `key: value` / `key = value` form with a lowercase key (source code as much as YAML), an unquoted
 * value that is a plain identifier or member chain (`token: string`, `secret: config.secret`) is
 * code and stays; one with a digit or a symbol (`password: hunter2`) is hidden. Known gap, kept for
 * the sake of code: a letters-only unquoted YAML value (`password: hunter`).
 */

/** Words that make a key secret-looking on their own. */
const SECRET_WORDS = new Set([
  "password",
  "passwd",
  "pwd",
  "pass",
  "passphrase",
  "secret",
  "secrets",
  "token",
  "auth",
  "authorization",
  "credential",
  "credentials",
  "creds",
  "cookie",
  "apikey",
  "privatekey",
  "secretkey",
  "accesskey",
]);

/** Words that, followed by `key`, name a secret key. */
const KEY_KINDS = new Set([
  "api",
  "access",
  "secret",
  "private",
  "signing",
  "sign",
  "encryption",
  "encrypt",
  "decrypt",
  "master",
  "account",
  "client",
  "auth",
  "license",
  "service",
  "app",
  "consumer",
  "shared",
  "storage",
  "session",
  "subscription",
  "admin",
  "deploy",
  "webhook",
  "hmac",
  "jwt",
  "ssh",
  "gpg",
  "pgp",
  "crypto",
  "cipher",
  "aes",
  "root",
  "write",
  "read",
]);

/** A last word that says the value is about the secret, not the secret. */
const NOT_SECRET_LAST = new Set([
  "id",
  "ids",
  "name",
  "names",
  "file",
  "files",
  "path",
  "paths",
  "dir",
  "url",
  "uri",
  "type",
  "types",
  "length",
  "len",
  "size",
  "count",
  "counts",
  "counter",
  "timeout",
  "ttl",
  "expiry",
  "expires",
  "expiration",
  "expired",
  "header",
  "field",
  "prefix",
  "suffix",
  "env",
  "var",
  "pattern",
  "regex",
  "hint",
  "label",
  "placeholder",
  "policy",
  "version",
  "format",
  "mode",
  "enabled",
  "required",
  "ref",
  "source",
  "provider",
  "store",
  "manager",
  "helper",
  "cmd",
  "command",
  "sock",
  "socket",
  "agent",
  "endpoint",
  "host",
  "port",
  "user",
  "username",
  "email",
  "region",
  "scope",
  "scopes",
  "kind",
  "index",
  "idx",
  "limit",
  "limits",
  "bytes",
  "usage",
  "budget",
  "method",
  "methods",
  "location",
  "min",
  "max",
  "rotation",
  "strategy",
  "flow",
  "lifetime",
  "handler",
  "class",
  "style",
  "reset",
  "input",
  "confirm",
  "confirmation",
  "policy",
  "rules",
  "rule",
  "validation",
  "strength",
  "changed",
  "visible",
  "shown",
]);

const PLACEHOLDERS = new Set([
  "",
  "null",
  "nil",
  "none",
  "undefined",
  "true",
  "false",
  "yes",
  "no",
  "on",
  "off",
  "changeme",
  "change_me",
  "change-me",
  "password",
  "secret",
  "example",
  "placeholder",
  "redacted",
  "todo",
  "tbd",
  "dummy",
  "required",
  "optional",
  "string",
  "str",
]);

const REF = /^(?:\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{[^}]*\}\}|<[^<>]*>|%\(?[A-Za-z_]*\)?[sd]|%[A-Za-z_]+%|[x*•.#-]{3,}|\[REDACTED.*)$/i;
const IDENTIFIER_LIKE = /^[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*(?:\[\]|<[^<>]*>|\[[\w$, .]*\]|\?|!)?[;,]?$/;

/** The words of a key: split at `_ . -` and camelCase boundaries, lowercased. */
export function keyWords(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[\s_.-]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

// Keys repeat (the same field on every line of a log): their verdict is cached, boundedly.
const verdicts = new Map<string, boolean>();

/**
 * True when a key (a variable, field or flag name) looks like it holds a secret. `env`: the key is
 * assigned as an environment variable (`NAME=value`, an env map), where any KEY word counts
 * (STRIPE_KEY); in code, `DOCUMENT_KEY = "#document"` names a map key, not a credential.
 */
export function isSecretKey(key: string, env = false): boolean {
  const id = env ? `env:${key}` : key;
  let v = verdicts.get(id);
  if (v === undefined) {
    v = classify(key, env);
    if (verdicts.size > 4096) verdicts.clear();
    verdicts.set(id, v);
  }
  return v;
}

function classify(key: string, env: boolean): boolean {
  const words = keyWords(key);
  if (!words.length) return false;
  if (NOT_SECRET_LAST.has(words[words.length - 1]!)) return false;
  const envStyle = env && /^[A-Z][A-Z0-9_]*$/.test(key) && key.length > 1;
  return words.some((w, i) => SECRET_WORDS.has(w) || (w === "key" && (envStyle || (i > 0 && KEY_KINDS.has(words[i - 1]!)))));
}

/** True when a field of a structure holds a credential by its name: a secret-looking name, or a loose one with a generated value. */
export function isSecretField(key: string, value: string): boolean {
  return isSecretKey(key, true) || (genericKeyName(keyWords(key)) && generatedValue(value));
}

/** True when a value is a placeholder or reference that hides nothing. */
export function isPlaceholderValue(value: string): boolean {
  const v = value.trim();
  if (PLACEHOLDERS.has(v.toLowerCase()) || REF.test(v) || /redacted/i.test(v)) return true;
  // "your-api-key", "<token>_here", and the name of another secret (`apiKey: "OPENAI_API_KEY"`).
  if (/^your[-_ ]/i.test(v) || /[-_ ]here$/i.test(v)) return true;
  return /^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)$/.test(v) && isSecretKey(v, true);
}

/** A character of a key: letters, digits, `_ . -`. */
function keyChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 45;
}
const QUOTES = "\"'`";

// A word that can end a secret-looking key, followed (after the rest of the key and an optional
// closing quote) by a separator. The key itself is found by walking back in code, bounded, so that
// a long run of word characters costs linear time.
const HINT = /(?:pass|pwd|secret|token|key|auth|cred|cookie|api|access)(?=[A-Za-z0-9_.-]{0,40}["'`]?[ \t]*(?:[:=]|[ \t]\S))/gi;

const MAX_KEY = 80;
const MAX_NAME = 64;
const MAX_VALUE = 4096;

/** Replaces the values of secret-looking assignments with `replacement`; keys and layout stay. */
export function redactKeyValues(text: string, replacement: string): string {
  HINT.lastIndex = 0;
  let out = "";
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = HINT.exec(text))) {
    const hit = assignmentAt(text, m.index);
    if (!hit) continue;
    out += text.slice(last, hit.start) + replacement;
    last = hit.end;
    HINT.lastIndex = hit.end;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** The span of the secret value assigned to the key around `at`, or null. */
function assignmentAt(text: string, at: number): { start: number; end: number } | null {
  let ks = at;
  while (ks > 0 && at - ks < MAX_KEY && keyChar(text.charCodeAt(ks - 1))) ks--;
  if (ks > 0 && keyChar(text.charCodeAt(ks - 1))) return null;
  let ke = at;
  while (ke < text.length && ke - at < MAX_KEY && keyChar(text.charCodeAt(ke))) ke++;
  let rawKey = text.slice(ks, ke);
  const flag = /^--?[A-Za-z]/.test(rawKey);
  rawKey = rawKey.replace(/^-+/, "");
  // A name this long is a message id or a sentence in snake case, not a setting.
  if (!rawKey || rawKey.length > MAX_NAME) return null;
  // A key that names a credential only loosely (`mapbox_key`) takes only a generated-looking value.
  const loose = !isSecretKey(rawKey, true);
  if (loose && !genericKeyName(keyWords(rawKey))) return null;

  let i = ke;
  const openQuote = ks > 0 && QUOTES.includes(text[ks - 1]!) ? text[ks - 1]! : "";
  // `cond ? "PASS" : "FAIL"` is a ternary, not a quoted key.
  if (openQuote && /\?\s*$/.test(text.slice(Math.max(0, ks - 4), ks - 1))) return null;
  if (openQuote && text[i] === openQuote) i++;
  const spaceBefore = text[i] === " " || text[i] === "\t";
  while (text[i] === " " || text[i] === "\t") i++;
  let sep = "";
  if (text.startsWith(":=", i)) sep = ":=";
  else if (text.startsWith("=>", i)) sep = "=>";
  else if (text[i] === "=" && text[i + 1] !== "=")
    sep = "="; // `==` compares, it does not assign
  else if (text[i] === ":" && text[i + 1] !== ":") sep = ":";
  else if (flag && spaceBefore) sep = " ";
  if (!sep) return null;
  i += sep.trim().length;
  const spaceAfter = text[i] === " " || text[i] === "\t";
  while (text[i] === " " || text[i] === "\t") i++;
  if (i >= text.length || text[i] === "\n" || text[i] === "\r") return null;
  const exported = /(?:^|[\s;])(?:export|set|setenv|env)[ \t]+$/.test(text.slice(Math.max(0, ks - 12), ks));
  // Strong context: a flag, an export, or `k=v` without spaces (shell, .env, query strings, kwargs).
  const strong = flag || exported || (sep === "=" && !spaceBefore && !spaceAfter);
  if (!loose && !strong && !isSecretKey(rawKey)) return null;

  const q = text[i]!;
  if (QUOTES.includes(q)) {
    const end = closingQuote(text, i + 1, q);
    if (end < 0) return null;
    const value = text.slice(i + 1, end);
    if (loose) return generatedValue(value) ? { start: i + 1, end } : null;
    if (isPlaceholderValue(value) || value.toLowerCase() === rawKey.toLowerCase()) return null;
    if (q === "`" && value.includes("${")) return null; // a template that builds the value from code
    // Not a credential: a one-to-three character string, or text padded with spaces (a model's
    // token in a logprobs listing).
    if (!strong && (value.length < 4 || value !== value.trim())) return null;
    return { start: i + 1, end };
  }
  let end = i;
  while (end < text.length && end - i < MAX_VALUE && !valueStop(text.charCodeAt(end))) end++;
  while (end > i && ",;)]}".includes(text[end - 1]!) && !/[([{]/.test(text.slice(i, end - 1))) end--;
  const value = text.slice(i, end);
  if (loose) return generatedValue(value) ? { start: i, end } : null;
  if (!value || isPlaceholderValue(value) || value.toLowerCase() === rawKey.toLowerCase()) return null;
  // A call, a command substitution, or code cut short by a quote (`os.environ["X"]`).
  if (/[()]/.test(value) || value.startsWith("$") || /[[{]$/.test(value)) return null;
  if (strong) return { start: i, end };
  // Otherwise (`k: v`, `k = v`) the text may as well be source code: leave what reads as code, a
  // path, or a small number.
  if (IDENTIFIER_LIKE.test(value) && !(/\d/.test(value) && value.length >= 6 && !/[.:>]/.test(value))) return null;
  if (/[<>{}[\]|]/.test(value) || /^(?:\+\+|--|!|~|&|\*|\.\.\.|\.?\.?\/|~\/)/.test(value) || /^\d{1,5}[,;]?$/.test(value)) return null;
  return { start: i, end };
}

/** Whitespace, a quote or `&` (the next field of a query string) ends an unquoted value. */
function valueStop(c: number): boolean {
  return c <= 32 || c === 34 || c === 39 || c === 96 || c === 38;
}

function closingQuote(text: string, from: number, q: string): number {
  for (let j = from; j < text.length && j - from < MAX_VALUE; j++) {
    const c = text[j]!;
    if (c === "\\") j++;
    else if (c === q) return j;
    else if (c === "\n") return -1;
  }
  return -1;
}
