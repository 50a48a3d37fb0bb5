/**
 * A bash parser for the command policy: turns a command line into a syntax tree the way bash would
 * read it, so that the policy sees every command that can run — behind `;`, `&&`, `|`, `$()`,
 * backticks, `<()`, `${x:-$(…)}`, arithmetic, here-documents, `if`/`for`/`while`/`case` — and every
 * redirection.
 *
 * Why not `sh-syntax` (mvdan/sh compiled to WASM, a dependency): its JSON serializes each command
 * node as bare positions (no node type, no arguments), so the tree cannot be walked; and each call
 * boots a fresh Go runtime (~15 ms). The tests use it as an oracle for which inputs are valid bash.
 *
 * Scope: the bash grammar an agent writes in one command line. Function definitions and `coproc`
 * are refused as unsupported (their bodies run later, under conditions the policy cannot follow);
 * extglob patterns are a syntax error as in a non-interactive bash. Anything refused here is a
 * policy denial with a reason, never a silent pass.
 */
import {
  type AndOrNode,
  type CommandNode,
  type ListNode,
  MAX_NESTING,
  type PipelineNode,
  type RedirNode,
  ShellUnsupportedError,
  type Tok,
  type WordNode,
} from "./shell-ast.js";
import { isBlank, isMeta, NAME } from "./shell-lex.js";
import { SimpleCommandParser } from "./shell-simple.js";

export * from "./shell-ast.js";
export { nestedOf } from "./shell-lex.js";

const RESERVED = /(\[\[|\]\]|\{|\}|!|if|then|else|elif|fi|do|done|case|esac|while|until|for|select|in|function|coproc|time)(?=$|[ \t\n;&|()<>])/y;

/** Parses a whole command line into a list of and-or items, or throws ShellSyntaxError/ShellUnsupportedError. */
export function parseShell(src: string, depth = 0): ListNode {
  if (depth > MAX_NESTING) throw new ShellUnsupportedError(`code nested more than ${MAX_NESTING} levels deep`);
  return new Parser(src, depth).parseAll();
}

/** Tokens of an unquoted here-document body: `$…` and backticks expand, quotes are plain characters. */
export function parseHeredocBody(body: string, depth = 0): Tok[] {
  return new Parser(body, depth).parseHeredocBody();
}

class Parser extends SimpleCommandParser {
  protected parseNested(src: string, depth: number): ListNode {
    return parseShell(src, depth);
  }

  protected parseHeredocText(body: string, depth: number): Tok[] {
    return parseHeredocBody(body, depth);
  }

  parseAll(): ListNode {
    const list = this.parseList(new Set(), false);
    this.skipBlanksAndNewlines();
    if (this.pos < this.src.length) this.fail(`unexpected ${this.near()}`);
    this.readHeredocs();
    return list;
  }

  // ---- lists, pipelines, commands ----

  protected peekReserved(): string | null {
    RESERVED.lastIndex = this.pos;
    const m = RESERVED.exec(this.src);
    return m ? m[1]! : null;
  }

  protected isCaseEnd(): boolean {
    return this.starts(";;") || this.starts(";&");
  }

  protected parseList(stop: Set<string>, closeParen: boolean): ListNode {
    const items: ListNode = [];
    for (;;) {
      this.skipBlanksAndNewlines();
      const c = this.at();
      if (c === "") break;
      if (c === ")") {
        if (closeParen) break;
        this.fail("unexpected `)`");
      }
      if (this.isCaseEnd()) break;
      const rw = this.peekReserved();
      if (rw && stop.has(rw)) break;
      if (c === ";" || c === "&" || c === "|") this.fail(`unexpected ${this.near()}`);
      const andOr = this.parseAndOr();
      this.skipBlanks();
      if (this.at() === ";" && !this.isCaseEnd()) {
        this.pos++;
        items.push({ andOr, background: false });
      } else if (this.at() === "&") {
        this.pos++;
        items.push({ andOr, background: true });
      } else {
        items.push({ andOr, background: false });
        if (this.at() !== "\n") break;
      }
    }
    return items;
  }

  protected parseAndOr(): AndOrNode {
    const first = this.parsePipeline();
    const rest: AndOrNode["rest"] = [];
    for (;;) {
      this.skipBlanks();
      const op = this.starts("&&") ? "&&" : this.starts("||") ? "||" : null;
      if (!op) break;
      this.pos += 2;
      this.skipBlanksAndNewlines();
      rest.push({ op, pipe: this.parsePipeline() });
    }
    return { first, rest };
  }

  protected parsePipeline(): PipelineNode {
    this.skipBlanks();
    const start = this.pos;
    let prefixed = false;
    for (;;) {
      const rw = this.peekReserved();
      if (rw === "!" || rw === "time") prefixed = true;
      if (rw === "!") this.pos += 1;
      else if (rw === "time") {
        this.pos += 4;
        this.skipBlanks();
        if (this.starts("-p") && (isMeta(this.at(2)) || this.at(2) === "")) this.pos += 2;
      } else break;
      this.skipBlanks();
    }
    // A bare `!` or `time` is a valid (empty) pipeline.
    if (prefixed && (this.at() === "" || "\n;&)".includes(this.at()))) return { cmds: [], text: this.src.slice(start, this.pos).trim() };
    const cmds = [this.parseCommand()];
    for (;;) {
      this.skipBlanks();
      if (this.at() === "|" && this.at(1) !== "|") {
        this.pos += this.at(1) === "&" ? 2 : 1;
        this.skipBlanksAndNewlines();
        cmds.push(this.parseCommand());
      } else break;
    }
    return { cmds, text: this.src.slice(start, this.pos).trim() };
  }

  protected expectReserved(word: string): void {
    this.skipBlanksAndNewlines();
    if (this.peekReserved() !== word) this.fail(`expected \`${word}\` but found ${this.near()}`);
    this.pos += word.length;
  }

  protected nonEmpty(list: ListNode, what: string): ListNode {
    if (list.length === 0) this.fail(`empty ${what} before ${this.near()}`);
    return list;
  }

  protected parseCommand(): CommandNode {
    this.skipBlanks();
    const start = this.pos;
    const c = this.at();
    if (c === "" || c === "\n" || c === ";" || c === "&" || c === "|" || c === ")") {
      this.fail(`expected a command but found ${this.near()}`);
    }
    const done = (node: { type: CommandNode["type"] } & Record<string, unknown>): CommandNode => {
      const redirs = this.parseTrailingRedirs();
      return { ...node, redirs, text: this.src.slice(start, this.pos).trim() } as unknown as CommandNode;
    };
    if (c === "(") {
      if (this.at(1) === "(") {
        const arith = this.scanArith(this.pos + 2);
        if (arith) {
          this.pos = arith.end;
          return done({ type: "arith", nested: arith.nested });
        }
      }
      this.pos++;
      const body = this.nonEmpty(this.parseList(new Set(), true), "subshell");
      if (this.at() !== ")") this.fail("missing `)`");
      this.pos++;
      return done({ type: "subshell", body });
    }
    const rw = this.peekReserved();
    switch (rw) {
      case "{": {
        this.pos += 1;
        const body = this.nonEmpty(this.parseList(new Set(["}"]), false), "group");
        this.expectReserved("}");
        return done({ type: "group", body });
      }
      case "if": {
        this.pos += 2;
        const clauses: Array<{ cond: ListNode; body: ListNode }> = [];
        let elseBody: ListNode | null = null;
        const cond = this.nonEmpty(this.parseList(new Set(["then"]), false), "condition");
        this.expectReserved("then");
        clauses.push({ cond, body: this.nonEmpty(this.parseList(new Set(["elif", "else", "fi"]), false), "then-branch") });
        for (;;) {
          this.skipBlanksAndNewlines();
          const next = this.peekReserved();
          if (next === "elif") {
            this.pos += 4;
            const c2 = this.nonEmpty(this.parseList(new Set(["then"]), false), "condition");
            this.expectReserved("then");
            clauses.push({ cond: c2, body: this.nonEmpty(this.parseList(new Set(["elif", "else", "fi"]), false), "branch") });
          } else if (next === "else") {
            this.pos += 4;
            elseBody = this.nonEmpty(this.parseList(new Set(["fi"]), false), "else-branch");
            this.expectReserved("fi");
            break;
          } else {
            this.expectReserved("fi");
            break;
          }
        }
        return done({ type: "if", clauses, elseBody });
      }
      case "for":
      case "select": {
        this.pos += rw.length;
        this.skipBlanks();
        if (this.starts("((")) {
          const arith = this.scanArith(this.pos + 2);
          if (!arith) this.fail("unterminated `for ((`");
          this.pos = arith.end;
          this.skipBlanks();
          if (this.at() === ";") this.pos++;
          this.expectReserved("do");
          const body = this.nonEmpty(this.parseList(new Set(["done"]), false), "loop body");
          this.expectReserved("done");
          return done({ type: "arithfor", nested: arith.nested, body });
        }
        NAME.lastIndex = this.pos;
        const m = NAME.exec(this.src);
        if (!m) this.fail(`expected a variable name after \`${rw}\``);
        this.pos += m[0].length;
        let items: WordNode[] | null = null;
        this.skipBlanksAndNewlines();
        if (this.peekReserved() === "in") {
          this.pos += 2;
          items = [];
          for (;;) {
            this.skipBlanks();
            const ch = this.at();
            if (ch === ";") {
              this.pos++;
              break;
            }
            if (ch === "\n" || ch === "") break;
            const w = this.parseWord();
            if (!w) this.fail(`unexpected ${this.near()} in \`for\` list`);
            items.push(w);
          }
        } else if (this.at() === ";") this.pos++;
        this.expectReserved("do");
        const body = this.nonEmpty(this.parseList(new Set(["done"]), false), "loop body");
        this.expectReserved("done");
        return done({ type: "for", name: m[0], items, body });
      }
      case "while":
      case "until": {
        this.pos += 5;
        const cond = this.nonEmpty(this.parseList(new Set(["do"]), false), "loop condition");
        this.expectReserved("do");
        const body = this.nonEmpty(this.parseList(new Set(["done"]), false), "loop body");
        this.expectReserved("done");
        return done({ type: "while", until: rw === "until", cond, body });
      }
      case "case": {
        this.pos += 4;
        this.skipBlanks();
        const word = this.parseWord();
        if (!word) this.fail("expected a word after `case`");
        this.expectReserved("in");
        const items: Array<{ patterns: WordNode[]; body: ListNode }> = [];
        for (;;) {
          this.skipBlanksAndNewlines();
          if (this.peekReserved() === "esac") {
            this.pos += 4;
            break;
          }
          if (this.at() === "") this.fail("missing `esac`");
          if (this.at() === "(") this.pos++;
          const patterns: WordNode[] = [];
          for (;;) {
            this.skipBlanks();
            const w = this.parseWord();
            if (!w) this.fail(`unexpected ${this.near()} in a case pattern`);
            patterns.push(w);
            this.skipBlanks();
            if (this.at() === "|") {
              this.pos++;
              continue;
            }
            if (this.at() === ")") {
              this.pos++;
              break;
            }
            this.fail(`unexpected ${this.near()} in a case pattern`);
          }
          const body = this.parseList(new Set(["esac"]), false);
          this.skipBlanksAndNewlines();
          if (this.starts(";;&")) this.pos += 3;
          else if (this.starts(";;") || this.starts(";&")) this.pos += 2;
          else if (this.peekReserved() !== "esac") this.fail(`expected \`;;\` or \`esac\` but found ${this.near()}`);
          items.push({ patterns, body });
        }
        return done({ type: "case", word, items });
      }
      case "[[": {
        this.pos += 2;
        const words: WordNode[] = [];
        for (;;) {
          this.skipBlanksAndNewlines();
          if (this.at() === "") this.fail("missing `]]`");
          if (this.peekReserved() === "]]") {
            this.pos += 2;
            break;
          }
          const bang = this.at() === "!" && (isBlank(this.at(1)) || this.at(1) === "\n");
          const op = ["&&", "||"].find((o) => this.starts(o)) ?? (["(", ")", "<", ">"].includes(this.at()) || bang ? this.at() : null);
          if (op) {
            words.push({ toks: [...op].map((ch) => ({ k: "ch" as const, c: ch, q: true })), raw: op });
            this.pos += op.length;
            continue;
          }
          const w = this.parseWord();
          if (!w) this.fail(`unexpected ${this.near()} inside \`[[ ]]\``);
          words.push(w);
          if (w.raw === "=~") {
            this.skipBlanks();
            const re = this.parseWord(true);
            if (!re) this.fail("expected a regular expression after `=~`");
            words.push(re);
          }
        }
        return done({ type: "cond", words });
      }
      case "function":
        throw new ShellUnsupportedError("shell function definitions");
      case "coproc":
        throw new ShellUnsupportedError("`coproc`");
      case "then":
      case "else":
      case "elif":
      case "fi":
      case "do":
      case "done":
      case "esac":
      case "}":
      case "]]":
      case "in":
        this.fail(`unexpected \`${rw}\``);
    }
    return this.parseSimple(start);
  }

  protected parseTrailingRedirs(): RedirNode[] {
    const redirs: RedirNode[] = [];
    for (;;) {
      this.skipBlanks();
      const r = this.peekRedir();
      if (!r) break;
      redirs.push(this.parseRedir(r));
    }
    // `{ ls; } foo` is a syntax error in bash too; a closing reserved word (`{ ls; } fi`) is fine.
    const c = this.at();
    const closer = ["}", "fi", "done", "esac", "then", "do", "else", "elif"].includes(this.peekReserved() ?? "");
    if (c !== "" && !isMeta(c) && !closer) this.fail(`unexpected ${this.near()} after a compound command`);
    return redirs;
  }
}
