import fs from "node:fs";
import path from "node:path";
import { readRegularNoFollow } from "../workspace/confined-fd.js";
import { isPlaceholderValue, isSecretKey } from "./key-value.js";
import { entropy } from "./generic.js";

/**
 * Values of the workspace's `.env` files, to be hidden wherever they show up later: a `.env` is
 * usually gitignored, so nothing else tells the redactor that `cat .env`, a test log or a stack
 * trace is printing a credential, and a value can travel without its key (`echo $DB_PASSWORD`).
 */

/** `.env`, `.env.local`, `.env.production`, …; not the templates meant to be committed. */
const DOTENV = /^\.env(?:\.[A-Za-z0-9_.-]+)?$/;
const TEMPLATE = /\.(?:example|sample|template|dist|defaults?|tpl)$/i;
const MAX_FILE = 256 * 1024;

/** The `.env*` files directly in `dir` (templates excluded). */
export function dotenvFiles(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((n) => DOTENV.test(n) && !TEMPLATE.test(n)).map((n) => path.join(dir, n));
}

/** KEY=value pairs of a dotenv text (`export`, quotes and trailing comments handled). */
export function parseDotenv(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*[=:]\s*(.*)$/.exec(line);
    if (!m) continue;
    let v = m[2]!.trim();
    const q = v[0];
    if ((q === '"' || q === "'" || q === "`") && v.indexOf(q, 1) > 0) v = v.slice(1, v.indexOf(q, 1));
    else v = v.replace(/\s+#.*$/, "");
    out.push([m[1]!, v]);
  }
  return out;
}

/**
 * The values worth hiding in the workspace's `.env` files: those of secret-looking keys (6+
 * characters), and random-looking ones under any key (16+ characters of high entropy: a key under a
 * name like STRIPE or DATABASE). Ordinary settings (`NODE_ENV=development`, `PORT=3000`, a host
 * name, a path) are not added: hiding them everywhere would blank out ordinary text.
 */
export function secretValuesFromDotenv(dir: string): string[] {
  const out = new Set<string>();
  for (const file of dotenvFiles(dir)) {
    // A link is followed (a .env linked to a shared one is common, and its values are only hidden,
    // never shown); a FIFO the agent put there is never opened, so it cannot block the run.
    const text = readRegularNoFollow(file, MAX_FILE, { follow: true })?.toString("utf8");
    if (text === undefined) continue;
    for (const [key, value] of parseDotenv(text)) {
      if (value.length < 6 || isPlaceholderValue(value)) continue;
      if (isSecretKey(key, true) || looksRandom(value)) out.add(value);
    }
  }
  return [...out];
}

/** 16+ characters, no spaces, not a path or plain URL, and high Shannon entropy. */
export function looksRandom(value: string): boolean {
  if (value.length < 16 || /\s/.test(value) || value.startsWith("/") || /^[a-z][a-z0-9+.-]*:\/\/[^@]*$/i.test(value)) return false;
  return entropy(value) >= 3.5;
}
