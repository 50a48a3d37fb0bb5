// File names are bytes; ledgerloop's paths are strings (stored in SQLite and PostgreSQL, compared,
// shown to the model). Most names are UTF-8 and map one to one. A name that is not valid UTF-8 must
// still round-trip exactly, or its file would be missing from what a step changed and would survive
// a rewind. So each byte that is not part of a valid UTF-8 sequence becomes one code point of a
// private-use block, U+F780 + (byte - 0x80), which is valid Unicode (stores accept it, unlike the
// lone surrogates of Python's surrogateescape). To keep the mapping one to one, a name that really
// contains a code point of that block has that code point's own bytes escaped the same way.

const ESC_BASE = 0xf780;
const ESC_FIRST = 0xf780;
const ESC_LAST = 0xf7ff;

const decoder = new TextDecoder("utf-8", { fatal: true });

/** True when every byte is ASCII: the common case, which needs no work. */
function isAscii(b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) if (b[i]! >= 0x80) return false;
  return true;
}

/** Length of the valid UTF-8 sequence starting at `i`, or 0 when the byte there does not start one. */
function sequenceLength(b: Uint8Array, i: number): number {
  const c = b[i]!;
  const cont = (k: number) => i + k < b.length && (b[i + k]! & 0xc0) === 0x80;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    const c1 = b[i + 1]!;
    if (c === 0xe0 && c1 < 0xa0) return 0; // overlong
    if (c === 0xed && c1 >= 0xa0) return 0; // a surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const c1 = b[i + 1]!;
    if (c === 0xf0 && c1 < 0x90) return 0; // overlong
    if (c === 0xf4 && c1 >= 0x90) return 0; // above U+10FFFF
    return 4;
  }
  return 0;
}

const escaped = (byte: number) => String.fromCharCode(ESC_BASE + (byte - 0x80));

/** The string ledgerloop uses for a name (or a path) given as bytes; see the note at the top. */
export function nameOfBytes(b: Uint8Array): string {
  if (isAscii(b)) return Buffer.isBuffer(b) ? b.toString("latin1") : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");
  let out = "";
  let i = 0;
  while (i < b.length) {
    const n = sequenceLength(b, i);
    if (n === 0) {
      out += escaped(b[i]!);
      i++;
      continue;
    }
    const ch = n === 1 ? String.fromCharCode(b[i]!) : decoder.decode(b.subarray(i, i + n));
    const cp = ch.codePointAt(0)!;
    if (cp >= ESC_FIRST && cp <= ESC_LAST) for (let k = 0; k < n; k++) out += escaped(b[i + k]!);
    else out += ch;
    i += n;
  }
  return out;
}

/** The bytes of a name (or path) made by {@link nameOfBytes}; a plain string gives its UTF-8. */
export function bytesOfName(s: string): Buffer {
  if (!hasEscapes(s)) return Buffer.from(s, "utf8");
  const parts: Buffer[] = [];
  let run = "";
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c >= ESC_FIRST && c <= ESC_LAST) {
      if (run) parts.push(Buffer.from(run, "utf8"));
      run = "";
      parts.push(Buffer.of(0x80 + (c - ESC_BASE)));
    } else run += ch;
  }
  if (run) parts.push(Buffer.from(run, "utf8"));
  return Buffer.concat(parts);
}

/** True when the string holds an escaped byte (see the note at the top). */
function hasEscapes(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= ESC_FIRST && c <= ESC_LAST) return true;
  }
  return false;
}

/**
 * `root/rel` for the file system: `root` is the user's own path, `rel` a workspace name. A plain
 * string when `rel` has no escaped byte (the common case, and much cheaper for Node than a Buffer
 * path), else the exact bytes.
 */
export function hostPath(root: string, rel: string): string | Buffer {
  if (rel === "" || rel === ".") return root;
  if (!hasEscapes(rel)) return `${root}/${rel}`;
  return Buffer.concat([Buffer.from(root), Buffer.from("/"), bytesOfName(rel)]);
}

/** A name as people and models read it: escaped bytes shown as `\xNN`. */
export function shownName(s: string): string {
  return s.replace(/[\uf780-\uf7ff]/g, (ch) => `\\x${(ch.charCodeAt(0) - ESC_BASE + 0x80).toString(16).padStart(2, "0")}`);
}
