/**
 * The word level of the bash parser: quotes, `$…` expansions, backticks, process substitutions,
 * arithmetic and ANSI-C strings, read into word tokens. The grammar is shell-simple.ts (simple
 * commands, redirections, here-documents) and shell-parse.ts (lists, pipelines, compound commands),
 * which extend this class and parse the command lists nested in words.
 */
import { type ListNode, ShellSyntaxError, ShellUnsupportedError, type Tok, type WordNode } from "./shell-ast.js";

export const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
export const isBlank = (c: string) => c === " " || c === "\t";
export const isMeta = (c: string) => " \t\n;&|()<>".includes(c) && c !== "";

export abstract class Lexer {
  protected pos = 0;

  constructor(
    protected readonly src: string,
    protected readonly depth: number,
  ) {}

  /** A command list up to one of `stop` (or `)` when `closeParen`): the grammar's entry for `$(…)`. */
  protected abstract parseList(stop: Set<string>, closeParen: boolean): ListNode;
  /** Parses code of its own (a backtick substitution's, unescaped) one level deeper. */
  protected abstract parseNested(src: string, depth: number): ListNode;

  protected at(i = 0): string {
    return this.src[this.pos + i] ?? "";
  }
  protected starts(s: string): boolean {
    return this.src.startsWith(s, this.pos);
  }
  protected fail(message: string): never {
    throw new ShellSyntaxError(message, this.pos);
  }
  protected near(): string {
    const c = this.at();
    return c === "" ? "end of input" : c === "\n" ? "newline" : `\`${this.src.slice(this.pos, this.pos + 10).split("\n")[0]}\``;
  }

  parseHeredocBody(): Tok[] {
    const toks: Tok[] = [];
    while (this.pos < this.src.length) {
      const c = this.at();
      if (c === "\\") {
        const n = this.at(1);
        if (n === "\n") {
          this.pos += 2;
          continue;
        }
        if (n === "$" || n === "`" || n === "\\") {
          toks.push({ k: "ch", c: n, q: true });
          this.pos += 2;
          continue;
        }
        toks.push({ k: "ch", c: "\\", q: true });
        this.pos++;
      } else if (c === "$") this.parseDollar(toks, true);
      else if (c === "`") this.parseBacktick(toks, true);
      else {
        toks.push({ k: "ch", c, q: true });
        this.pos++;
      }
    }
    return toks;
  }

  // ---- words ----

  /** Reads one word at the current position, or null when a metacharacter is there. */
  protected parseWord(regex = false): WordNode | null {
    const start = this.pos;
    const toks: Tok[] = [];
    const c = this.at();
    if (!regex && (c === "<" || c === ">") && this.at(1) === "(") {
      this.parseProcSub(toks);
    }
    return this.parseWordInto(toks, start, regex);
  }

  protected parseWordInto(toks: Tok[], start: number, regex: boolean): WordNode | null {
    let parens = 0;
    for (;;) {
      const c = this.at();
      if (c === "") break;
      if (c === "\\") {
        const n = this.at(1);
        if (n === "\n") {
          this.pos += 2;
          continue;
        }
        if (n === "") {
          toks.push({ k: "ch", c: "\\", q: false });
          this.pos++;
          continue;
        }
        toks.push({ k: "ch", c: n, q: true });
        this.pos += 2;
      } else if (c === "'") {
        const end = this.src.indexOf("'", this.pos + 1);
        if (end < 0) this.fail("unterminated single quote");
        for (const ch of this.src.slice(this.pos + 1, end)) toks.push({ k: "ch", c: ch, q: true });
        this.pos = end + 1;
      } else if (c === '"') this.parseDouble(toks);
      else if (c === "$") this.parseDollar(toks, false);
      else if (c === "`") this.parseBacktick(toks, false);
      else if (regex && (c === "(" || c === ")" || c === "|" || c === "<" || c === ">")) {
        if (c === "(") parens++;
        if (c === ")") {
          if (parens === 0) break;
          parens--;
        }
        toks.push({ k: "ch", c, q: false });
        this.pos++;
      } else if (isMeta(c)) break;
      else {
        toks.push({ k: "ch", c, q: false });
        this.pos++;
      }
    }
    if (this.pos === start) return null;
    return { toks, raw: this.src.slice(start, this.pos) };
  }

  protected parseDouble(toks: Tok[]): void {
    this.pos++;
    let closed = false;
    while (this.pos < this.src.length) {
      const c = this.at();
      if (c === '"') {
        this.pos++;
        closed = true;
        break;
      }
      if (c === "\\") {
        const n = this.at(1);
        if (n === "\n") {
          this.pos += 2;
        } else if (n === "$" || n === "`" || n === '"' || n === "\\") {
          toks.push({ k: "ch", c: n, q: true });
          this.pos += 2;
        } else {
          toks.push({ k: "ch", c: "\\", q: true });
          this.pos++;
        }
      } else if (c === "$") this.parseDollar(toks, true);
      else if (c === "`") this.parseBacktick(toks, true);
      else {
        toks.push({ k: "ch", c, q: true });
        this.pos++;
      }
    }
    if (!closed) this.fail("unterminated double quote");
  }

  protected parseDollar(toks: Tok[], q: boolean): void {
    const start = this.pos;
    const n = this.at(1);
    if (n === "'" && !q) {
      this.pos += 2;
      for (const ch of this.decodeAnsiC()) toks.push({ k: "ch", c: ch, q: true });
      return;
    }
    if (n === '"' && !q) {
      this.pos++;
      this.parseDouble(toks);
      return;
    }
    if (n === "(") {
      if (this.at(2) === "(") {
        const arith = this.scanArith(this.pos + 3);
        if (arith) {
          this.pos = arith.end;
          toks.push({ k: "arith", raw: this.src.slice(start, this.pos), nested: arith.nested, q });
          return;
        }
      }
      this.pos += 2;
      const list = this.parseList(new Set(), true);
      if (this.at() !== ")") this.fail("unterminated `$(`");
      this.pos++;
      toks.push({ k: "cmd", raw: this.src.slice(start, this.pos), list, q, backtick: false });
      return;
    }
    if (n === "{") {
      this.parseBracedParam(toks, q);
      return;
    }
    if (n === "[") throw new ShellUnsupportedError("`$[…]` arithmetic");
    NAME.lastIndex = this.pos + 1;
    const m = NAME.exec(this.src);
    if (m) {
      this.pos += 1 + m[0].length;
      toks.push({ k: "param", raw: `$${m[0]}`, name: m[0], op: "", q, nested: [] });
      return;
    }
    if (n !== "" && /[0-9@*#?$!-]/.test(n)) {
      this.pos += 2;
      toks.push({ k: "param", raw: `$${n}`, name: n, op: "", q, nested: [] });
      return;
    }
    toks.push({ k: "ch", c: "$", q });
    this.pos++;
  }

  protected parseBracedParam(toks: Tok[], q: boolean): void {
    const start = this.pos;
    this.pos += 2;
    const contentStart = this.pos;
    const inner: Tok[] = [];
    let depth = 0;
    for (;;) {
      const c = this.at();
      if (c === "") this.fail("unterminated `${`");
      if (c === "}") {
        if (depth === 0) break;
        depth--;
        this.pos++;
      } else if (c === "{") {
        depth++;
        this.pos++;
      } else if (c === "\\") this.pos += 2;
      else if (c === "'" && !q) {
        const end = this.src.indexOf("'", this.pos + 1);
        if (end < 0) this.fail("unterminated single quote");
        this.pos = end + 1;
      } else if (c === '"') this.parseDouble(inner);
      else if (c === "$") this.parseDollar(inner, true);
      else if (c === "`") this.parseBacktick(inner, true);
      else this.pos++;
    }
    const content = this.src.slice(contentStart, this.pos);
    this.pos++;
    const m = /^(!|#(?=[A-Za-z_0-9@*#?$!-]))?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])/.exec(content);
    if (!m) this.fail(`bad substitution \`\${${content}}\``);
    const op = (m[1] ?? "") + content.slice(m[0].length);
    toks.push({ k: "param", raw: this.src.slice(start, this.pos), name: m[2]!, op, q, nested: nestedOf(inner) });
  }

  protected parseBacktick(toks: Tok[], q: boolean): void {
    const start = this.pos;
    this.pos++;
    let inner = "";
    for (;;) {
      const c = this.at();
      if (c === "") this.fail("unterminated backquote");
      if (c === "`") {
        this.pos++;
        break;
      }
      if (c === "\\") {
        const n = this.at(1);
        if (n === "`" || n === "\\" || n === "$" || (q && n === '"')) {
          inner += n;
          this.pos += 2;
          continue;
        }
      }
      inner += c;
      this.pos++;
    }
    let list: ListNode;
    try {
      list = this.parseNested(inner, this.depth + 1);
    } catch (err) {
      if (err instanceof ShellSyntaxError) this.fail(`inside backquotes: ${err.message}`);
      throw err;
    }
    toks.push({ k: "cmd", raw: this.src.slice(start, this.pos), list, q, backtick: true });
  }

  protected parseProcSub(toks: Tok[]): void {
    const start = this.pos;
    const dir = this.at() as "<" | ">";
    this.pos += 2;
    const list = this.parseList(new Set(), true);
    if (this.at() !== ")") this.fail("unterminated process substitution");
    this.pos++;
    toks.push({ k: "proc", raw: this.src.slice(start, this.pos), list, dir });
  }

  /**
   * Scans `((…))` arithmetic from just after the opening parentheses, collecting the command
   * substitutions inside; null (position restored) when this is not arithmetic, e.g. `$( (a); b )`.
   */
  protected scanArith(from: number): { end: number; nested: ListNode[] } | null {
    const save = this.pos;
    this.pos = from;
    const inner: Tok[] = [];
    let depth = 0;
    try {
      for (;;) {
        const c = this.at();
        if (c === "") break;
        if (c === "(") {
          depth++;
          this.pos++;
        } else if (c === ")") {
          if (depth === 0) {
            if (this.at(1) === ")") {
              const end = this.pos + 2;
              this.pos = save;
              return { end, nested: nestedOf(inner) };
            }
            break;
          }
          depth--;
          this.pos++;
        } else if (c === "\\") this.pos += 2;
        else if (c === '"') this.parseDouble(inner);
        else if (c === "$") this.parseDollar(inner, true);
        else if (c === "`") this.parseBacktick(inner, true);
        else this.pos++;
      }
    } catch (err) {
      if (!(err instanceof ShellSyntaxError)) throw err;
    }
    this.pos = save;
    return null;
  }

  protected decodeAnsiC(): string {
    let out = "";
    for (;;) {
      const c = this.at();
      if (c === "") this.fail("unterminated $'…' string");
      this.pos++;
      if (c === "'") return out;
      if (c !== "\\") {
        out += c;
        continue;
      }
      const e = this.at();
      this.pos++;
      const simple: Record<string, string> = {
        a: "\x07",
        b: "\b",
        e: "\x1b",
        E: "\x1b",
        f: "\f",
        n: "\n",
        r: "\r",
        t: "\t",
        v: "\v",
        "\\": "\\",
        "'": "'",
        '"': '"',
        "?": "?",
      };
      if (e in simple) {
        out += simple[e];
      } else if (/[0-7]/.test(e)) {
        let digits = e;
        while (digits.length < 3 && /[0-7]/.test(this.at())) digits += this.src[this.pos++];
        out += String.fromCharCode(parseInt(digits, 8) & 0xff);
      } else if (e === "x" || e === "u" || e === "U") {
        const max = e === "x" ? 2 : e === "u" ? 4 : 8;
        let digits = "";
        while (digits.length < max && /[0-9a-fA-F]/.test(this.at())) digits += this.src[this.pos++];
        if (!digits) out += `\\${e}`;
        else out += String.fromCodePoint(Math.min(parseInt(digits, 16), 0x10ffff));
      } else if (e === "c") {
        const x = this.at();
        this.pos++;
        out += String.fromCharCode(x.toUpperCase().charCodeAt(0) ^ 0x40);
      } else {
        out += `\\${e}`;
      }
    }
  }
}

/** The command lists nested in a sequence of tokens (command and process substitutions, and those inside `${…}` and `$((…))`). */
export function nestedOf(toks: Tok[]): ListNode[] {
  const out: ListNode[] = [];
  for (const t of toks) {
    if (t.k === "cmd" || t.k === "proc") out.push(t.list);
    else if (t.k === "param" || t.k === "arith") out.push(...t.nested);
  }
  return out;
}
