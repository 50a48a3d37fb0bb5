/**
 * Secrets hidden by base64: `base64 creds.txt`, a Kubernetes secret's `data:`, a Docker
 * `auth` field. A long base64 run (one line, or consecutive lines as `base64` wraps them at 76
 * columns) is decoded; when the result is text and holds a secret, the whole run is replaced.
 * Binary results (images, hashes, compressed data) are left as they are: nothing to read there.
 */

// Runs of at least 16 base64 characters, continued over line breaks by further lines of the
// alphabet (the last line of wrapped output can be short). The repetition is linear: each line is
// consumed once, and a failed continuation only gives back its own newline.
const RUN = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?:\r?\n[A-Za-z0-9+/_-]{2,}={0,2})*/g;

/** Shortest run worth decoding (shorter ones cannot hold a credential and its context). */
const MIN_RUN = 24;
/** Share of printable characters a decoded run needs to count as text. */
const TEXT_SHARE = 0.9;

/**
 * Replaces each base64 run whose decoded text `holdsSecret` says holds a secret with `label`,
 * followed by the run's own newlines so that line numbers stay.
 */
export function redactBase64(text: string, label: string, holdsSecret: (decoded: string) => boolean): string {
  if (text.length < MIN_RUN) return text;
  RUN.lastIndex = 0;
  return text.replace(RUN, (run) => {
    const compact = run.replace(/\r?\n/g, "");
    if (compact.length < MIN_RUN) return run;
    const decoded = decodeText(compact);
    if (decoded === null || !holdsSecret(decoded)) return run;
    return label + "\n".repeat(run.length - run.replace(/\n/g, "").length);
  });
}

/** The decoded text of a base64 string, or null when it is not base64 of text. */
function decodeText(b64: string): string | null {
  const body = b64.replace(/=+$/, "");
  if (body.length % 4 === 1) return null; // not a whole number of bytes
  const urlSafe = /[-_]/.test(body);
  if (urlSafe && /[+/]/.test(body)) return null; // two alphabets mixed: not base64
  const buf = Buffer.from(body, urlSafe ? "base64url" : "base64");
  if (buf.length < 12) return null;
  let printable = 0;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i]!;
    if ((c >= 0x20 && c < 0x7f) || c === 0x09 || c === 0x0a || c === 0x0d || c >= 0x80) printable++;
  }
  if (printable / buf.length < TEXT_SHARE) return null;
  const text = buf.toString("utf8");
  // Bytes >= 0x80 that do not form UTF-8 decode to U+FFFD: binary after all.
  let bad = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 0xfffd) bad++;
  return bad / text.length > 1 - TEXT_SHARE ? null : text;
}
