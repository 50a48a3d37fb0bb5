/**
 * The simple-command level of the bash parser (shell-parse.ts has the lists and compound commands):
 * blanks and comments, simple commands with their assignments, redirections, and the bodies of the
 * here-documents they open. Extends the word level (shell-lex.ts).
 */
import { type AssignNode, type CommandNode, type HeredocNode, type RedirNode, ShellUnsupportedError, type Tok, type WordNode } from "./shell-ast.js";
import { isBlank, Lexer } from "./shell-lex.js";

interface PendingHeredoc {
  node: HeredocNode;
  delim: string;
  strip: boolean;
}

/** The parser below the command-list grammar, which a subclass (shell-parse.ts) supplies. */
export abstract class SimpleCommandParser extends Lexer {
  private pending: PendingHeredoc[] = [];

  /** Tokens of an unquoted here-document body, read by a parser of its own. */
  protected abstract parseHeredocText(body: string, depth: number): Tok[];

  // ---- blanks, comments, here-documents ----

  protected skipBlanks(): void {
    for (;;) {
      const c = this.at();
      if (isBlank(c)) this.pos++;
      else if (c === "\\" && this.at(1) === "\n") this.pos += 2;
      else if (c === "#") {
        while (this.pos < this.src.length && this.at() !== "\n") this.pos++;
      } else return;
    }
  }

  protected skipBlanksAndNewlines(): void {
    for (;;) {
      this.skipBlanks();
      if (this.at() !== "\n") return;
      this.pos++;
      this.readHeredocs();
    }
  }

  /** Reads the bodies of here-documents opened on the line that just ended. */
  protected readHeredocs(): void {
    const list = this.pending;
    this.pending = [];
    for (const h of list) {
      let body = "";
      while (this.pos < this.src.length) {
        let eol = this.src.indexOf("\n", this.pos);
        if (eol < 0) eol = this.src.length;
        const line = this.src.slice(this.pos, eol);
        const check = h.strip ? line.replace(/^\t+/, "") : line;
        this.pos = Math.min(eol + 1, this.src.length);
        if (check === h.delim) break;
        body += `${check}\n`;
      }
      h.node.body = body;
      if (!h.node.quoted) h.node.toks = this.parseHeredocText(body, this.depth);
    }
  }

  protected parseSimple(start: number): CommandNode {
    const assigns: AssignNode[] = [];
    const words: WordNode[] = [];
    const redirs: RedirNode[] = [];
    for (;;) {
      this.skipBlanks();
      const c = this.at();
      if (c === "") break;
      const r = this.peekRedir();
      if (r) {
        redirs.push(this.parseRedir(r));
        continue;
      }
      if (c === "\n" || c === ";" || c === "&" || c === "|" || c === ")") break;
      if (c === "(") {
        if (words.length === 1 && assigns.length === 0) {
          const save = this.pos;
          this.pos++;
          this.skipBlanks();
          if (this.at() === ")") throw new ShellUnsupportedError("shell function definitions");
          this.pos = save;
        }
        this.fail("unexpected `(`");
      }
      const w = this.parseWord();
      if (!w) this.fail(`unexpected ${this.near()}`);
      if (words.length === 0) {
        const a = this.asAssignment(w);
        if (a) {
          assigns.push(a);
          continue;
        }
      }
      words.push(w);
    }
    if (words.length === 0 && assigns.length === 0 && redirs.length === 0) this.fail(`expected a command but found ${this.near()}`);
    return { type: "simple", assigns, words, redirs, text: this.src.slice(start, this.pos).trim() };
  }

  /** `NAME=…`, `NAME+=…`, `NAME[i]=…` (unquoted name), else null. `NAME=(…)` reads the array here. */
  protected asAssignment(w: WordNode): AssignNode | null {
    const t = w.toks;
    let i = 0;
    let name = "";
    while (i < t.length) {
      const tk = t[i]!;
      if (tk.k !== "ch" || tk.q || !/[A-Za-z0-9_]/.test(tk.c) || (name === "" && /[0-9]/.test(tk.c))) break;
      name += tk.c;
      i++;
    }
    if (!name) return null;
    let index: WordNode | null = null;
    const tk0 = t[i];
    if (tk0 && tk0.k === "ch" && !tk0.q && tk0.c === "[") {
      let depth = 0;
      const start = i + 1;
      let j = i;
      for (; j < t.length; j++) {
        const x = t[j]!;
        if (x.k === "ch" && !x.q && x.c === "[") depth++;
        else if (x.k === "ch" && !x.q && x.c === "]" && --depth === 0) break;
      }
      if (j >= t.length) return null;
      index = { toks: t.slice(start, j), raw: "" };
      i = j + 1;
    }
    const plus = t[i];
    if (plus && plus.k === "ch" && !plus.q && plus.c === "+") i++;
    const eq = t[i];
    if (!eq || eq.k !== "ch" || eq.q || eq.c !== "=") return null;
    const value: WordNode = { toks: t.slice(i + 1), raw: w.raw.slice(w.raw.indexOf("=") + 1) };
    let array: WordNode[] | null = null;
    if (value.toks.length === 0 && this.at() === "(") {
      this.pos++;
      array = [];
      for (;;) {
        this.skipBlanksAndNewlines();
        if (this.at() === ")") {
          this.pos++;
          break;
        }
        const el = this.parseWord();
        if (!el) this.fail(`unexpected ${this.near()} in an array assignment`);
        array.push(el);
      }
    }
    return { name, value, array, index, raw: w.raw };
  }

  // ---- redirections ----

  protected peekRedir(): { len: number; op: string; fd: number | null; fdVar: string | null } | null {
    let i = this.pos;
    let fd: number | null = null;
    let fdVar: string | null = null;
    const m = /^[0-9]+(?=[<>])/.exec(this.src.slice(i, i + 12));
    if (m) {
      fd = Number(m[0]);
      i += m[0].length;
    } else {
      const v = /^\{([A-Za-z_][A-Za-z0-9_]*)\}(?=[<>])/.exec(this.src.slice(i, i + 80));
      if (v) {
        fdVar = v[1]!;
        i += v[0].length;
      }
    }
    const rest = this.src.slice(i, i + 3);
    const ops = fd === null && fdVar === null ? ["&>>", "&>"] : [];
    ops.push("<<<", "<<-", "<<", "<>", "<&", ">>", ">|", ">&", "<", ">");
    for (const op of ops) {
      if (!rest.startsWith(op)) continue;
      // `<(…)` and `>(…)` are process substitutions, not redirections.
      if ((op === "<" || op === ">") && this.src[i + 1] === "(" && fd === null && fdVar === null) return null;
      return { len: i - this.pos + op.length, op, fd, fdVar };
    }
    return null;
  }

  protected parseRedir(r: { len: number; op: string; fd: number | null; fdVar: string | null }): RedirNode {
    const start = this.pos;
    this.pos += r.len;
    this.skipBlanks();
    // `cat <2>&1`: bash reads `2>` as the next redirection, leaving this one without a target.
    if (this.peekRedir()) this.fail(`expected a file name after \`${r.op}\` but found ${this.near()}`);
    let target: WordNode | null;
    const c = this.at();
    if ((c === "<" || c === ">") && this.at(1) === "(") {
      const toks: Tok[] = [];
      this.parseProcSub(toks);
      target = this.parseWordInto(toks, this.pos - 2, false);
    } else target = this.parseWord();
    if (!target) this.fail(`expected a file name after \`${r.op}\` but found ${this.near()}`);
    const node: RedirNode = { op: r.op, fd: r.fd, fdVar: r.fdVar, target, heredoc: null, raw: "" };
    if (r.op === "<<" || r.op === "<<-") {
      let delim = "";
      let quoted = false;
      for (const t of target.toks) {
        if (t.k === "ch") {
          delim += t.c;
          if (t.q) quoted = true;
        } else delim += t.raw;
      }
      if (/['"\\]/.test(target.raw)) quoted = true;
      node.heredoc = { body: "", quoted, toks: [] };
      this.pending.push({ node: node.heredoc, delim, strip: r.op === "<<-" });
    }
    node.raw = this.src.slice(start, this.pos);
    return node;
  }
}
