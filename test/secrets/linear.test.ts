import { describe, it, expect } from "vitest";
import { createRedactor } from "../../src/secrets.js";

// Inputs built to make a backtracking pattern go quadratic: long runs of the characters a rule
// starts with, separators without values, openers without closers. A quadratic pass over 1 MB takes
// minutes; a linear one takes tens of milliseconds. CPU time, not wall time, is what is bounded.
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
const ADVERSARIAL: Record<string, string> = {
  letters: fill("A"),
  keys: fill("tokenpasswordsecret"),
  "assignments without values": fill("pass="),
  "flags without values": fill("--password "),
  "key colons": fill("key: x\n"),
  "pem openers": fill("-----BEGIN PRIVATE KEY-----"),
  "pem openers between blank lines": fill("-----BEGIN PRIVATE KEY-----\n\n"),
  "pem openers with escaped breaks": fill("-----BEGIN PRIVATE KEY-----\\nAAAA\\n"),
  "pem openers with one body line": fill("-----BEGIN PRIVATE KEY-----\n12| AAAAAAAAAAAAAAAAAAAA AAAA\n"),
  "url openers": fill("a://b:"),
  "base64 lines": fill("QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\n"),
  "token prefixes": fill("ghp_"),
  "jwt openers": fill("eyJaaaaaaaaa."),
  "digits and colons": fill("1234567:"),
  "bearer words": fill("Bearer "),
  quotes: fill('password="'),
  spaces: fill(" "),
  "programs without passwords": fill("mysql redis-cli -a docker login -p sshpass ldapsearch keytool "),
  "netrc fields": fill("machine h login u account a "),
  "default logins": fill("default login u "),
  "wrapped lines": fill("QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\n"),
  "hex lines": fill("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"),
  "key body starts": fill("MIIEvQIBA\\nb3BlbnNzaC1rZXktdjE\n"),
  "loose keys": fill("mapbox_key=a1"),
};

function cpuMs(fn: () => void): number {
  const t = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

describe("redactor cost", () => {
  const r = createRedactor(["a-known-secret-value"]);
  it.each(Object.entries(ADVERSARIAL))(
    "stays linear on 1 MB of %s",
    (_name, text) => {
      expect(cpuMs(() => r.redact(text))).toBeLessThan(3000);
    },
    60_000,
  );
});
