/**
 * Where a private key block that starts at a BEGIN line ends. A regex cannot say it linearly and
 * safely: "up to the END line, else to the end of the text" ate whatever followed a truncated key
 * (a `head` of the file, a paste), closing quotes of serialised JSON included. Here the block is
 * what a key can hold and nothing else: armour headers (`Proc-Type:`, `Version:`) and one blank line
 * after them, then lines of base64, then the END line if it comes next. Anything else (a blank
 * line after the body, a quote, prose) ends it. Line breaks may be real or escaped (`\n` in a JSON
 * or code string), lines may carry a line-number gutter, and a key flattened onto one line has its
 * chunks separated by spaces.
 */

const END_LINE = /(?:-----END[A-Z0-9 ]{0,40} (?:PRIVATE|SECRET) KEY(?: BLOCK)?-----|---- END SSH2 ENCRYPTED PRIVATE KEY ----)/y;
const ARMOUR = /[A-Za-z][A-Za-z0-9-]{0,40}: [^\r\n\\]{0,200}/y;
const QUOTES = "\"'`";
/** A chunk of a key flattened onto one line: long enough not to be a word of prose. */
const MIN_FLAT_CHUNK = 16;

function isB64(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47 || c === 61;
}

/** Length of the line break at `i` (real `\n`/`\r\n`, or escaped `\\n`/`\\r\\n`), 0 if none. */
function lineBreakAt(text: string, i: number): number {
  if (text[i] === "\n") return 1;
  if (text[i] === "\r" && text[i + 1] === "\n") return 2;
  if (text[i] === "\\") {
    if (text[i + 1] === "n") return 2;
    if (text[i + 1] === "r" && text[i + 2] === "\\" && text[i + 3] === "n") return 4;
  }
  return 0;
}

function spacesAt(text: string, i: number): number {
  let j = i;
  while (text[j] === " " || text[j] === "\t") j++;
  return j - i;
}

// Line numbers printed before each line (`read_file`'s `12| `, `grep -n`'s `12:`, `cat -n`'s tab).
const GUTTER = /\d{1,7}(?:[|:] ?|\t)[ \t]*/y;

function gutterEnd(text: string, i: number): number {
  GUTTER.lastIndex = i;
  return GUTTER.test(text) ? GUTTER.lastIndex : i;
}

function endLineAt(text: string, i: number): number {
  END_LINE.lastIndex = i;
  return END_LINE.test(text) ? END_LINE.lastIndex : -1;
}

/** The end (exclusive) of the key block whose BEGIN line ends at `from`. */
export function keyBlockEnd(text: string, from: number): number {
  let end = from;
  let i = from;
  let body = false;
  let blankUsed = false;
  for (;;) {
    // A key flattened onto the BEGIN line, or the END line on the same line.
    const sp = spacesAt(text, i);
    const brk = lineBreakAt(text, i + sp);
    if (!brk) {
      const e = endLineAt(text, i + sp);
      if (e >= 0) return e;
      let j = i + sp;
      while (j < text.length && isB64(text.charCodeAt(j))) j++;
      if (!sp || j - (i + sp) < MIN_FLAT_CHUNK) return end;
      end = i = j;
      body = true;
      continue;
    }
    const start = i + sp + brk;
    const lead = gutterEnd(text, start + spacesAt(text, start));
    const e = endLineAt(text, lead);
    if (e >= 0) return e;
    if (lineBreakAt(text, lead) || lead >= text.length) {
      // A blank line: allowed once, between the armour headers and the body (PGP, encrypted PEM).
      if (body || blankUsed || lead >= text.length) return end;
      blankUsed = true;
      i = lead;
      continue;
    }
    if (!body && !blankUsed) {
      ARMOUR.lastIndex = lead;
      if (ARMOUR.test(text)) {
        end = i = ARMOUR.lastIndex;
        continue;
      }
    }
    let j = lead;
    while (j < text.length && isB64(text.charCodeAt(j))) j++;
    if (j === lead) return end;
    // The line must be all base64 up to its end (a break, a space, the END line, the text's end).
    const after = j + spacesAt(text, j);
    // A quote closes the string the key was in: this line is the key's last.
    if (after === j && j < text.length && QUOTES.includes(text[j]!)) return j;
    if (!(after >= text.length || lineBreakAt(text, after) || endLineAt(text, after) >= 0 || (after > j && j - lead >= MIN_FLAT_CHUNK))) return end;
    end = i = j;
    body = true;
  }
}
