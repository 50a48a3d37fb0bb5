import { b, END, GUTTER, rx, type FormatRule } from "./format-rule.js";
import { keyBlockEnd } from "./pem.js";

/**
 * Private keys: armoured blocks, and the bodies of keys whose BEGIN line was cut off (`tail` of a
 * key file, a paste of the middle, a key flattened into an environment variable).
 */

/** Further lines of a key body: base64 only, up to the line's end, a quote or an escaped break. */
const MORE_LINES = b`(?:(?:\r?\n|\\r?\\n)${GUTTER}[ \t]*[A-Za-z0-9+/]{4,100}={0,2}[ \t]*(?=$|[\r\n\\"'\x60])){0,400}`;
/** One line of a wrapped key body: PEM wraps at 64 columns, OpenSSH at 70 (a hex digest is not one). */
const WRAPPED = b`${GUTTER}[ \t]*(?![0-9a-fA-F]{64,70}[ \t]*(?:\r?\n|$))(?:[A-Za-z0-9+/]{64}|[A-Za-z0-9+/]{70})[ \t]*`;

/** Private key rules, armoured blocks first. */
export const KEY_RULES: FormatRule[] = [
  // PEM (RSA, EC, DSA, PKCS#8, encrypted, OpenSSH), SSH2 and PGP armour. The block ends where a
  // key's lines end (pem.ts): a truncated key hides its own lines, not what follows.
  {
    id: "private-key",
    re: /-----BEGIN[A-Z0-9 ]{0,40} (?:PRIVATE|SECRET) KEY(?: BLOCK)?-----|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----/g,
    keywords: ["PRIVATE KEY", "SECRET KEY"],
    span: keyBlockEnd,
  },
  { id: "putty-key", re: rx(b`(Private-Lines: *\d+)(${MORE_LINES})`), keywords: ["Private-Lines"], group: 2, accept: (s) => s.length > 0 },
  { id: "age-key", re: /AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}/g, keywords: ["AGE-SECRET-KEY-1"] },
  // minisign and signify secret keys: a comment line, then the key on the next.
  {
    id: "signing-key",
    re: rx(b`(untrusted comment: [^\n]{0,100}secret key\r?\n${GUTTER}[ \t]*)([A-Za-z0-9+/]{40,}={0,2})`),
    keywords: ["untrusted comment:"],
    group: 2,
  },
  // An OpenSSH key body: base64 of "openssh-key-v1", then its further lines.
  { id: "private-key", re: rx(b`b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/]{0,100}={0,2}${MORE_LINES}`), keywords: ["b3BlbnNzaC1rZXktdjE"] },
  // A DER private key in base64 (PKCS#1, PKCS#8, SEC1): a SEQUENCE whose first element is the
  // INTEGER version (0 or 1). Certificates and public keys start with a SEQUENCE there instead.
  {
    id: "private-key",
    re: rx(b`(?<![A-Za-z0-9+/])(?:MII[A-Za-z0-9+/]{2}[AQgw]IBA|MIG[A-Za-z0-9+/]AgE[AB]|M[A-Za-z0-9+/]{2}CAQ[AE])[A-Za-z0-9+/]{30,}={0,2}${MORE_LINES}`),
    gate: /IBA|AgE|CAQ/,
  },
  // Lines of a key body without anything naming it: three or more full-width lines. A block that
  // says what it is (a certificate, a public key) is public and stays.
  {
    id: "key-body",
    re: rx(
      b`(?:(-----BEGIN [A-Z0-9 ]{1,40}-----[ \t]*\r?\n)|(?<![^\n]))((?:${WRAPPED}\r?\n){2,}${WRAPPED}(?:\r?\n${GUTTER}[ \t]*[A-Za-z0-9+/]{1,69}={0,2}(?=\r?\n|$))?)`,
    ),
    group: 2,
    accept: (_secret, pre) => !pre,
  },
  // The 1Password account secret key.
  { id: "onepassword", re: rx(b`\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}${END}`), keywords: ["A3-"] },
];
