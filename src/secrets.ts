/**
 * Secret handling shared by everything that stores or sends text: the ledger, checkpoints, logs and
 * model prompts all pass through one redactor, so a secret that reaches one of them reaches none.
 */

/** Environment variable names that look like they hold credentials. */
export const SECRET_NAME = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|PRIVATE|SESSION|COOKIE|CERT)/i;

/** Names that match SECRET_NAME but are known to carry no secret. */
const NOT_SECRET = new Set(["SSH_AUTH_SOCK", "XAUTHORITY", "KEYTIMEOUT", "GPG_AGENT_INFO"]);

export const REDACTED = "[REDACTED]";

/** True when an environment variable of this name must not reach a command or a log. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name) && !NOT_SECRET.has(name.toUpperCase());
}

// Formats that identify a credential on their own, wherever they appear.
const PATTERNS: Array<[RegExp, string | ((m: string, ...g: string[]) => string)]> = [
  [/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, `${REDACTED}:pem`],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, `${REDACTED}:github`],
  [/\bgh[pousr]_[A-Za-z0-9]{30,}/g, `${REDACTED}:github`],
  [/\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}/g, `${REDACTED}:sk`],
  [/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, `${REDACTED}:aws`],
  [/\bxox[abprs]-[A-Za-z0-9-]{10,}/g, `${REDACTED}:slack`],
  [/\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, `${REDACTED}:jwt`],
  // user:password@host in URLs: keep the user and host, drop the password.
  [/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+):([^\s@/]+)@/gi, (_m, pre: string) => `${pre}:${REDACTED}@`],
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{16,}/g, (_m, kind: string) => `${kind} ${REDACTED}`],
];

export interface Redactor {
  /** The text with every known secret value and every credential-shaped token replaced. */
  redact(text: string): string;
  /** A deep copy of a JSON-like value with all its strings redacted. */
  redactDeep<T>(value: T): T;
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
      let out = text;
      if (known) out = out.replace(known, REDACTED);
      for (const [re, rep] of PATTERNS) {
        re.lastIndex = 0;
        if (re.test(out)) {
          re.lastIndex = 0;
          out = out.replace(re, rep as string);
        }
      }
      return out;
    },
    redactDeep<T>(value: T): T {
      return walk(value, (s) => redactor.redact(s)) as T;
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

function walk(value: unknown, fn: (s: string) => string): unknown {
  if (typeof value === "string") return fn(value);
  if (Array.isArray(value)) return value.map((v) => walk(v, fn));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = walk(v, fn);
    return out;
  }
  return value;
}

/** The process-wide redactor, seeded from the environment at start-up. */
export const defaultRedactor: Redactor = createRedactor(secretValuesFromEnv());
