/**
 * Secret handling shared by everything that stores or sends text: the ledger, checkpoints, logs and
 * model prompts all pass through one redactor, so a secret that reaches one of them reaches none.
 *
 * Three passes, in order: values known to be secret (the environment's, the workspace's `.env`),
 * credential formats (secrets/rules.ts), secret-looking assignments (secrets/key-value.ts); then
 * base64 runs whose decoded text the same passes would change (secrets/base64.ts).
 */
import { redactBase64 } from "./secrets/base64.js";
import { isPlaceholderValue, isSecretField, redactKeyValues } from "./secrets/key-value.js";
import { FORMAT_RULES } from "./secrets/rules.js";

/** Environment variable names that look like they hold credentials. */
export const SECRET_NAME = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|PRIVATE|SESSION|COOKIE|CERT)/i;

/** Names that match SECRET_NAME but are known to carry no secret. */
const NOT_SECRET = new Set(["SSH_AUTH_SOCK", "XAUTHORITY", "KEYTIMEOUT", "GPG_AGENT_INFO"]);

export const REDACTED = "[REDACTED]";

/** The text without an API key a server echoed back (a key shorter than 6 characters is too short to be one, and is left). */
export function withoutKey(text: string, key: string | undefined): string {
  return key && key.length >= 6 ? text.split(key).join(REDACTED) : text;
}

export { isSecretKey, isPlaceholderValue } from "./secrets/key-value.js";
export { secretValuesFromDotenv } from "./secrets/dotenv.js";

/** True when an environment variable of this name must not reach a command or a log. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name) && !NOT_SECRET.has(name.toUpperCase());
}

/**
 * The replacement of a match: the label, then the match's own line breaks, so that a redacted PEM
 * block or wrapped base64 keeps the line numbers of everything after it (search previews, diffs).
 */
function replacementFor(match: string, label: string): string {
  let n = 0;
  for (let i = match.indexOf("\n"); i >= 0; i = match.indexOf("\n", i + 1)) n++;
  return n ? label + "\n".repeat(n) : label;
}

// All the rules' keywords in one scan: one pass over the text tells which rules can match at all
// (replacements only remove keywords, so the set found before them stays a superset). The scan
// tries every position and prefers the longest keyword there; the shorter keywords that are
// prefixes of it ("gl" of "glc_") are counted as present too.
const KEYWORD_LIST = [...new Set(FORMAT_RULES.flatMap((r) => r.keywords ?? []))].sort((a, b) => b.length - a.length);
const KEYWORDS = new RegExp(KEYWORD_LIST.map(escapeRegExp).join("|"), "g");
const PREFIXES = new Map(KEYWORD_LIST.map((k) => [k, KEYWORD_LIST.filter((p) => p !== k && k.startsWith(p))]));

function keywordsIn(text: string): Set<string> {
  const present = new Set<string>();
  KEYWORDS.lastIndex = 0;
  for (let m = KEYWORDS.exec(text); m; m = KEYWORDS.exec(text)) {
    present.add(m[0]);
    for (const p of PREFIXES.get(m[0])!) present.add(p);
    KEYWORDS.lastIndex = m.index + 1;
  }
  return present;
}

/** Hides every credential of a known format (see rules.ts). */
function redactFormats(text: string): string {
  const present = keywordsIn(text);
  let out = text;
  for (const rule of FORMAT_RULES) {
    if (rule.keywords && !rule.keywords.some((k) => present.has(k))) continue;
    if (rule.gate && !rule.gate.test(out)) continue;
    const label = `${REDACTED}:${rule.id}`;
    if (rule.span) {
      out = replaceSpans(out, rule.re, rule.span, label);
      continue;
    }
    rule.re.lastIndex = 0;
    out = out.replace(rule.re, (m: string, ...groups: unknown[]) => {
      if (rule.group) {
        const pre = (groups[0] as string | undefined) ?? "";
        const secret = groups[1] as string;
        if (rule.accept && !rule.accept(secret, pre)) return m;
        return pre + replacementFor(secret, label) + m.slice(pre.length + secret.length);
      }
      if (rule.accept && !rule.accept(m, "")) return m;
      return replacementFor(m, label);
    });
  }
  return out;
}

/** Replaces each secret that `re` finds the start of and `span` the end of. */
function replaceSpans(text: string, re: RegExp, span: (text: string, from: number) => number, label: string): string {
  let out = "";
  let last = 0;
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const end = Math.max(span(text, m.index + m[0].length), m.index + m[0].length);
    out += text.slice(last, m.index) + replacementFor(text.slice(m.index, end), label);
    last = re.lastIndex = end;
  }
  return last === 0 ? text : out + text.slice(last);
}

// `user:password` alone, as base64 carries it in a Basic header or a Docker `auth` field: the
// password has a digit or a symbol (prose with a colon has spaces, and is not this).
const USER_PASSWORD = /^[\w.@+-]{1,100}:(?=[^\s:]*[^A-Za-z\s:])[^\s:]{4,200}\s?$/;

/** Formats and key/value assignments, without the base64 pass (used on decoded base64 too). */
function redactPlain(text: string, known: RegExp | null): string {
  let out = text;
  if (known) out = out.replace(known, (m) => replacementFor(m, REDACTED));
  out = redactFormats(out);
  return redactKeyValues(out, REDACTED);
}

export interface Redactor {
  /** The text with every known secret value and every credential-shaped token replaced. */
  redact(text: string): string;
  /** A deep copy of a JSON-like value with all its strings redacted. */
  redactDeep<T>(value: T): T;
  /**
   * A text about to be stored, whatever it holds: JSON has its string values redacted and keeps
   * its structure (re-serialised only when a value changed), other text is redacted as text.
   */
  redactStored(text: string): string;
  /** Adds values to hide (e.g. an API key the runtime was given). */
  addSecrets(values: Iterable<string>): void;
}

/** Secret values found in an environment: the values of secret-looking names (6+ chars). */
export function secretValuesFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value && value.length >= 6 && isSecretName(name)) out.push(value);
  }
  return out;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Builds a redactor hiding the given values plus the built-in credential formats. */
export function createRedactor(secrets: Iterable<string> = []): Redactor {
  const values = new Set<string>();
  let known: RegExp | null = null;
  const rebuild = () => {
    // Longest first so that a secret containing another is replaced whole.
    const list = [...values].sort((a, b) => b.length - a.length).map(escapeRegExp);
    known = list.length ? new RegExp(list.join("|"), "g") : null;
  };
  const redactor: Redactor = {
    redact(text: string): string {
      if (!text) return text;
      const out = redactPlain(text, known);
      return redactBase64(out, `${REDACTED}:base64`, (decoded) => USER_PASSWORD.test(decoded) || redactPlain(decoded, known) !== decoded);
    },
    redactDeep<T>(value: T): T {
      return walk(value, (s) => redactor.redact(s)) as T;
    },
    redactStored(text: string): string {
      const json = parseJson(text);
      if (json === undefined) return redactor.redact(text);
      let changed = false;
      const out = walk(
        json.value,
        (s) => {
          const r = redactor.redact(s);
          if (r !== s) changed = true;
          return r;
        },
        () => (changed = true),
      );
      return changed ? JSON.stringify(out) : text;
    },
    addSecrets(more: Iterable<string>) {
      let changed = false;
      for (const v of more) {
        if (v && v.length >= 6 && !values.has(v)) {
          values.add(v);
          changed = true;
        }
      }
      if (changed) rebuild();
    },
  };
  redactor.addSecrets(secrets);
  return redactor;
}

// A string under a secret-looking field name (`{ "password": "…" }`, an `env` map of a tool call)
// is hidden whole: the name is in the structure, not in the string the text rules see.
function walk(value: unknown, fn: (s: string) => string, hid: () => void = () => {}): unknown {
  if (typeof value === "string") return fn(value);
  if (Array.isArray(value)) return value.map((v) => walk(v, fn, hid));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (typeof v === "string" && v && isSecretField(k, v) && !isPlaceholderValue(v) && !v.startsWith(REDACTED)) {
        out[k] = REDACTED;
        hid();
      } else out[k] = walk(v, fn, hid);
    }
    return out;
  }
  return value;
}

/** The value of a text that is a JSON array, object or string; undefined for any other text. */
function parseJson(text: string): { value: unknown } | undefined {
  const first = /\S/.exec(text)?.[0];
  if (first !== "[" && first !== "{" && first !== '"') return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** The process-wide redactor, seeded from the environment at start-up. */
export const defaultRedactor: Redactor = createRedactor(secretValuesFromEnv());
