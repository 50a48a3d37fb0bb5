/**
 * From a bash syntax tree to the flat list the policy judges: every simple command that can run
 * (including those inside substitutions, code strings and wrappers such as `env`, `timeout`,
 * `xargs`, `find -exec`, `bash -c`, `eval`), every redirection, and every construct that cannot be
 * judged statically (a program name computed at run time, code from a variable, …) as a problem.
 *
 * The walk also follows, as sets of possibilities, the working directory (`cd`) and variables
 * assigned literal values (`d=build; rm -rf "$d"`, `for f in src/*.ts`), so that paths can be
 * checked where they are knowable; everything else is marked unknown and the policy treats it as such.
 */
import path from "node:path";
import {
  type AssignNode,
  type CommandNode,
  type ListNode,
  MAX_NESTING,
  type PipelineNode,
  type RedirNode,
  ShellSyntaxError,
  ShellUnsupportedError,
  type Tok,
  type WordNode,
  parseShell,
} from "./shell-parse.js";

/** A value a word can take: a plain string, or (glob) a picomatch pattern standing for the paths it matches. */
export interface PathCandidate {
  text: string;
  glob: boolean;
}

/** One argument (or redirection target) after quote removal and brace/tilde expansion. */
export interface ShellWord {
  /** Source text as written. */
  raw: string;
  /** Value after quote removal; run-time expansions appear as written (`$HOME/x`, `$(date)`). */
  text: string;
  /** `text` is exactly what the program receives: no run-time expansion, no glob. */
  literal: boolean;
  /** Has unquoted glob characters: the shell replaces it with matching paths. */
  glob: boolean;
  /** Values it can take when these are statically known (literal text, known variables, globs); else null. */
  candidates: PathCandidate[] | null;
  /** Filled in at run time with a path found below these bases (`find … -exec cmd {}`), optionally filtered by `-name`. */
  below?: { bases: PathCandidate[] | null; names: string[] };
  /** Programs run by command/process substitutions inside this word (`bash <(curl …)`). */
  substitutions: string[];
}

export interface Assignment {
  name: string;
  value: ShellWord;
  text: string;
}

export interface Redirection {
  op: string;
  fd: number | null;
  /** The file (for here-documents: the delimiter). */
  target: ShellWord;
  /** Opens the target for writing (`>`, `>>`, `>|`, `&>`, `<>`, `>& file`). */
  write: boolean;
  /** Opens the target for reading (`<`, `<>`). */
  read: boolean;
  /** Body of a here-document. */
  heredoc: string | null;
  /** Possible working directories the target is relative to; null when unknown. */
  cwd: string[] | null;
  /** Index in `parts` of the command it belongs to; null for compound commands and the like. */
  part: number | null;
  text: string;
}

/** Where a command's standard input comes from. */
export type StdinSource =
  | { kind: "pipe"; upstream: string[]; text: string | null }
  | { kind: "heredoc" | "herestring"; text: string | null }
  | { kind: "file"; word: ShellWord };

export interface CommandPart {
  /** Basename of the program (`rm` for `/usr/bin/rm`); "" for a command of only assignments/redirections. */
  program: string;
  /** The program as a path when written with a `/` (resolved against the working directory when known). */
  path: string | null;
  argv: string[];
  words: ShellWord[];
  /** `NAME=value` given to this command (prefix assignments, `env NAME=value`), or set in the shell when program is "". */
  assignments: Assignment[];
  redirects: Redirection[];
  /** Possible working directories; null when unknown (after `cd "$x"`, in `find -execdir`, …). */
  cwd: string[] | null;
  /** How it was reached, outermost first: `$()`, `bash -c`, `env`, `xargs`, `find -exec`, `stdin of sh`, … */
  via: string[];
  stdin: StdinSource | null;
  /** Source text of this command. */
  text: string;
  /** Its arguments hold another command, which is listed as a part of its own. */
  wrapper: boolean;
}

export interface ParseProblem {
  /** `parse.error`, `parse.unsupported`, `parse.dynamic-program`, `parse.dynamic-code`, `parse.too-complex`, `parse.ifs`. */
  rule: string;
  /** Written for the model. */
  reason: string;
  text: string;
}

export interface ParsedCommandLine {
  parts: CommandPart[];
  redirects: Redirection[];
  /** Not understood: each makes the command not allowed. */
  problems: ParseProblem[];
  /** Strings stored for later evaluation (assigned values, here-strings read into variables) that look like code. */
  latent: Array<{ text: string; where: string }>;
}

export interface ParseOptions {
  /** Absolute working directory the command starts in; relative paths stay unresolved without it. */
  cwd?: string;
  /** The home directory `~` and `$HOME` expand to. */
  home?: string;
}

/** Shells whose `-c` string, script or standard input is shell code. */
export const SHELLS = new Set(["bash", "sh", "dash", "zsh", "ksh", "ash", "mksh", "rbash", "yash", "busybox-sh"]);

const MAX_CANDIDATES = 64;
const STDIN_PATHS = new Set(["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]);
const MAX_CWDS = 8;
const MAX_INPUT = 100_000;

/**
 * Parses a command line as bash would and lists the simple commands it can run and its
 * redirections. Never throws: what it cannot follow is reported in `problems`.
 */
export function parseCommandLine(cmd: string, opts: ParseOptions = {}): ParsedCommandLine {
  // `HOME=/etc; rm -rf ~/x`: once the line may change HOME, `~` and `$HOME` are not the runner's home.
  const homeChanged = /(^|[^$A-Za-z0-9_{])HOME\b/.test(cmd);
  const w = new Walker(homeChanged ? null : (opts.home ?? null));
  const st: State = { cwds: opts.cwd ? [path.resolve(opts.cwd)] : null, vars: new Map() };
  if (cmd.length > MAX_INPUT) {
    w.problem("parse.too-complex", `the command is ${cmd.length} characters long; split it into smaller commands`, cmd.slice(0, 80));
  } else if (cmd.includes("\0")) {
    w.problem("parse.error", "the command contains a NUL byte", "");
  } else {
    w.code(cmd, st, { via: [], stdin: null }, null);
  }
  return { parts: w.parts, redirects: w.redirects, problems: w.problems, latent: w.latent };
}

// ---------------------------------------------------------------------------------------------

interface State {
  cwds: string[] | null;
  /** Variables with statically known values; absent means unknown (maybe empty). */
  vars: Map<string, PathCandidate[]>;
}

interface Cx {
  via: string[];
  stdin: StdinSource | null;
}

const copy = (s: State): State => ({ cwds: s.cwds ? [...s.cwds] : null, vars: new Map(s.vars) });

function unionCwds(a: string[] | null, b: string[] | null): string[] | null {
  if (!a || !b) return null;
  const u = [...new Set([...a, ...b])];
  return u.length > MAX_CWDS ? null : u;
}

function merge(a: State, b: State): State {
  const vars = new Map<string, PathCandidate[]>();
  for (const [k, va] of a.vars) {
    const vb = b.vars.get(k);
    if (!vb) continue;
    const seen = new Set<string>();
    const u = [...va, ...vb].filter((c) => {
      const key = `${c.glob}:${c.text}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (u.length <= MAX_CANDIDATES) vars.set(k, u);
  }
  return { cwds: unionCwds(a.cwds, b.cwds), vars };
}

const isCh = (t: Tok | undefined, c: string): boolean => !!t && t.k === "ch" && !t.q && t.c === c;
const hasGlobChars = (s: string) => /[*?[]/.test(s);
/** Characters picomatch reads as syntax, escaped where the shell took them literally. */
const escapePm = (c: string) => ("\\*?[](){}!+@|".includes(c) ? `\\${c}` : c);
const escapePmText = (s: string) => [...s].map(escapePm).join("");

/** Brace expansion over word tokens (`{a,b}`, `{1..3}`); null past `limit` results. */
function braceExpand(toks: Tok[], limit = 256): Tok[][] | null {
  for (let i = 0; i < toks.length; i++) {
    if (!isCh(toks[i], "{")) continue;
    let depth = 0;
    let close = -1;
    const commas: number[] = [];
    for (let j = i; j < toks.length; j++) {
      const t = toks[j];
      if (isCh(t, "{")) depth++;
      else if (isCh(t, "}")) {
        if (--depth === 0) {
          close = j;
          break;
        }
      } else if (isCh(t, ",") && depth === 1) commas.push(j);
    }
    if (close < 0) continue;
    let alts: Tok[][] | null = null;
    if (commas.length) {
      alts = [];
      let from = i + 1;
      for (const c of [...commas, close]) {
        alts.push(toks.slice(from, c));
        from = c + 1;
      }
    } else {
      const inner = toks.slice(i + 1, close);
      if (inner.every((t) => t.k === "ch" && !t.q)) {
        const s = inner.map((t) => (t as { c: string }).c).join("");
        const num = /^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$/.exec(s);
        const chr = /^([a-zA-Z])\.\.([a-zA-Z])(?:\.\.(-?\d+))?$/.exec(s);
        const seq = (a: number, b: number, step: number, fmt: (n: number) => string): Tok[][] | null => {
          const st = Math.abs(step) || 1;
          if (Math.abs(b - a) / st > limit) return null;
          const out: Tok[][] = [];
          for (let n = a; a <= b ? n <= b : n >= b; n += a <= b ? st : -st) {
            out.push([...fmt(n)].map((c) => ({ k: "ch" as const, c, q: true })));
          }
          return out;
        };
        if (num) alts = seq(Number(num[1]), Number(num[2]), Number(num[3] ?? 1), String);
        else if (chr) alts = seq(chr[1]!.charCodeAt(0), chr[2]!.charCodeAt(0), Number(chr[3] ?? 1), (n) => String.fromCharCode(n));
        if (num || chr) {
          if (!alts) return null;
        }
      }
    }
    if (!alts) continue;
    const prefix = toks.slice(0, i);
    const suffix = toks.slice(close + 1);
    const out: Tok[][] = [];
    for (const a of alts) {
      const sub = braceExpand([...prefix, ...a, ...suffix], limit);
      if (!sub) return null;
      out.push(...sub);
      if (out.length > limit) return null;
    }
    return out;
  }
  return [toks];
}

function literalWord(text: string): ShellWord {
  return { raw: text, text, literal: true, glob: false, candidates: [{ text, glob: false }], substitutions: [] };
}

function dynamicWord(text: string): ShellWord {
  return { raw: text, text, literal: false, glob: false, candidates: null, substitutions: [] };
}

/** Consumes options of a wrapper: returns the index of its first operand, or -1 when an option word is not literal. */
function skipOpts(
  words: ShellWord[],
  start: number,
  spec: { arg?: string[]; long?: string[]; attached?: string[]; numeric?: boolean },
): number {
  let i = start;
  while (i < words.length) {
    const w = words[i]!;
    if (!w.literal) return -1;
    const t = w.text;
    if (t === "--") return i + 1;
    if (!t.startsWith("-") || t === "-") return i;
    if (spec.numeric && /^-\d+$/.test(t)) {
      i++;
      continue;
    }
    if (t.startsWith("--")) {
      const name = t.split("=")[0]!;
      i += spec.long?.includes(name) && !t.includes("=") ? 2 : 1;
      continue;
    }
    if (spec.arg?.includes(t)) {
      i += 2;
      continue;
    }
    // A cluster like -oL or -n10: the rest of the cluster is the value of the first letter that takes one.
    i++;
  }
  return i;
}

class Walker {
  parts: CommandPart[] = [];
  redirects: Redirection[] = [];
  problems: ParseProblem[] = [];
  latent: Array<{ text: string; where: string }> = [];
  private depth = 0;
  private lastMain: CommandPart | null = null;
  /** Files this command line writes with literal content, by absolute path. */
  private readonly written = new Map<string, string>();

  constructor(private readonly home: string | null) {}

  problem(rule: string, reason: string, text: string): void {
    if (!this.problems.some((p) => p.rule === rule && p.reason === reason)) this.problems.push({ rule, reason, text });
  }

  /** Parses and walks a string of shell code (the command line itself, `bash -c`, `eval`, stdin of a shell …). */
  code(src: string, st: State, cx: Cx, what: string | null): State {
    if (this.depth >= MAX_NESTING) {
      this.problem("parse.too-complex", `code is nested more than ${MAX_NESTING} levels deep (${cx.via.join(" → ")})`, src.slice(0, 80));
      return st;
    }
    let list: ListNode;
    try {
      list = parseShell(src, this.depth);
    } catch (err) {
      const where = what ? ` in the code given to ${what}` : "";
      if (err instanceof ShellUnsupportedError) {
        this.problem(
          "parse.unsupported",
          `${err.message}${where} cannot be checked by the command policy; write the commands out directly`,
          src.slice(0, 120),
        );
      } else if (err instanceof ShellSyntaxError) {
        this.problem("parse.error", `bash syntax error${where}: ${err.message}; fix the quoting or split the command`, src.slice(0, 120));
      } else throw err;
      return st;
    }
    this.depth++;
    try {
      return this.list(list, st, cx);
    } finally {
      this.depth--;
    }
  }

  private list(list: ListNode, st: State, cx: Cx): State {
    for (const item of list) {
      if (item.background) {
        this.andOr(item.andOr, copy(st), cx);
        continue;
      }
      const before = st.cwds;
      const after = this.andOr(item.andOr, st, cx);
      // The next item runs whether this one succeeded or not: a `cd` here may have failed.
      st = { cwds: unionCwds(before, after.cwds), vars: after.vars };
    }
    return st;
  }

  private andOr(ao: ListNode[number]["andOr"], st: State, cx: Cx): State {
    let cur = this.pipeline(ao.first, st, cx);
    for (const r of ao.rest) {
      const after = this.pipeline(r.pipe, copy(cur), cx);
      cur = merge(cur, after);
    }
    return cur;
  }

  private pipeline(p: PipelineNode, st: State, cx: Cx): State {
    if (p.cmds.length === 1) return this.command(p.cmds[0]!, st, cx);
    const upstream: string[] = [];
    let text: string | null = null;
    p.cmds.forEach((cmd, i) => {
      const stdin: StdinSource | null = i === 0 ? cx.stdin : { kind: "pipe", upstream: [...upstream], text };
      const before = this.parts.length;
      this.lastMain = null;
      this.command(cmd, copy(st), { via: cx.via, stdin });
      for (const part of this.parts.slice(before)) if (part.program) upstream.push(part.program);
      text = cmd.type === "simple" && this.lastMain ? literalOutput(this.lastMain) : null;
    });
    return st;
  }

  private command(node: CommandNode, st: State, cx: Cx): State {
    if (node.type === "simple") return this.simple(node, st, cx);
    const redirs = this.redirs(node.redirs, st, cx);
    for (const r of redirs) this.redirects.push({ ...r, part: null });
    const stdin = stdinOf(redirs) ?? cx.stdin;
    const inner: Cx = { via: cx.via, stdin };
    switch (node.type) {
      case "subshell":
        this.list(node.body, copy(st), inner);
        return st;
      case "group":
        return this.list(node.body, st, inner);
      case "if": {
        const branches: State[] = [];
        let s = st;
        for (const c of node.clauses) {
          s = this.list(c.cond, s, inner);
          branches.push(this.list(c.body, copy(s), inner));
        }
        branches.push(node.elseBody ? this.list(node.elseBody, copy(s), inner) : s);
        return branches.reduce(merge);
      }
      case "for":
      case "arithfor":
      case "while": {
        const s0 = copy(st);
        const bodies = node.type === "while" ? [node.cond, node.body] : [node.body];
        for (const b of bodies) forgetAssigned(b, s0);
        if (node.type === "for") {
          s0.vars.delete(node.name);
          if (node.items) {
            const all: PathCandidate[] = [];
            let known = true;
            for (const w of node.items) {
              for (const sw of this.expand(w, st, cx)) {
                if (!sw.candidates) known = false;
                else all.push(...sw.candidates);
              }
            }
            if (known && all.length <= MAX_CANDIDATES) s0.vars.set(node.name, all);
          }
        } else if (node.type === "arithfor") {
          for (const l of node.nested) this.list(l, copy(st), { via: [...cx.via, "$()"], stdin: null });
        }
        let s = s0;
        if (node.type === "while") s = this.list(node.cond, s, inner);
        const after = this.list(node.body, copy(s), inner);
        return merge(s, after);
      }
      case "case": {
        this.expand(node.word, st, cx);
        const branches: State[] = [st];
        for (const item of node.items) {
          for (const p of item.patterns) this.expand(p, st, cx);
          branches.push(this.list(item.body, copy(st), inner));
        }
        return branches.reduce(merge);
      }
      case "arith":
        for (const l of node.nested) this.list(l, copy(st), { via: [...cx.via, "$(())"], stdin: null });
        return st;
      case "cond":
        for (const w of node.words) this.expand(w, st, cx);
        return st;
    }
  }

  // ---- words ----

  /** Runs the substitutions in a word (emitting their parts) and returns its expansions. */
  private expand(w: WordNode, st: State, cx: Cx, opts: { assignment?: boolean } = {}): ShellWord[] {
    const before = this.parts.length;
    this.substitutions(w.toks, st, cx);
    const substitutions = this.parts.slice(before).map((p) => p.program).filter(Boolean);
    const alts = opts.assignment ? [w.toks] : braceExpand(w.toks);
    if (!alts) return [{ ...dynamicWord(w.raw), substitutions }];
    return alts.map((toks) => ({ ...this.wordOf(toks, w.raw, st), substitutions }));
  }

  private substitutions(toks: Tok[], st: State, cx: Cx): void {
    for (const t of toks) {
      if (t.k === "cmd") this.list(t.list, copy(st), { via: [...cx.via, t.backtick ? "``" : "$()"], stdin: null });
      else if (t.k === "proc") this.list(t.list, copy(st), { via: [...cx.via, `${t.dir}()`], stdin: null });
      else if (t.k === "param" || t.k === "arith") {
        if (t.k === "param" && /^@[A-Za-z]*P/.test(t.op)) {
          this.problem(
            "parse.unsupported",
            `\`${t.raw}\` (prompt expansion) runs command substitutions stored in a variable; the policy cannot check them`,
            t.raw,
          );
        }
        for (const l of t.nested) this.list(l, copy(st), { via: [...cx.via, "$()"], stdin: null });
      }
    }
  }

  private wordOf(toks: Tok[], raw: string, st: State): ShellWord {
    let text = "";
    let literal = true;
    type C = { plain: string; pat: string; glob: boolean };
    let cands: C[] | null = [{ plain: "", pat: "", glob: false }];
    const add = (pieces: C[] | null) => {
      if (!cands || !pieces) {
        cands = null;
        return;
      }
      const next: C[] = [];
      for (const c of cands) for (const p of pieces) next.push({ plain: c.plain + p.plain, pat: c.pat + p.pat, glob: c.glob || p.glob });
      cands = next.length > MAX_CANDIDATES ? null : next;
    };
    let i = 0;
    // Tilde expansion: `~` or `~/…` at the start of the word, unquoted.
    if (isCh(toks[0], "~")) {
      let j = 1;
      let user = "";
      while (j < toks.length && toks[j]!.k === "ch" && !(toks[j] as { q: boolean }).q && (toks[j] as { c: string }).c !== "/") {
        user += (toks[j] as { c: string }).c;
        j++;
      }
      if (j === toks.length || isCh(toks[j], "/")) {
        if (user === "" && this.home) {
          text += this.home;
          add([{ plain: this.home, pat: escapePmText(this.home), glob: false }]);
        } else {
          text += `~${user}`;
          literal = false;
          add(null);
        }
        i = j;
      }
    }
    // An unquoted `[` is a glob only when a `]` follows.
    const closers = toks.map((t, k) => (isCh(t, "]") ? k : -1)).filter((k) => k >= 0);
    let ownGlob = false;
    let bracket = -1;
    for (; i < toks.length; i++) {
      const t = toks[i]!;
      if (t.k === "ch") {
        text += t.c;
        let syntax = false;
        if (!t.q && bracket >= 0) {
          // Inside `[…]`: `!`/`^` right after the bracket negate, `]` closes.
          syntax = t.c === "]" ? i > bracket + 1 : (t.c === "!" || t.c === "^") && i === bracket + 1;
          if (t.c === "]" && syntax) bracket = -1;
        } else if (!t.q && (t.c === "*" || t.c === "?")) syntax = true;
        else if (!t.q && t.c === "[" && closers.some((k) => k > i + 1)) {
          syntax = true;
          bracket = i;
        }
        add([{ plain: t.c, pat: syntax ? t.c : escapePm(t.c), glob: syntax }]);
        if (syntax) ownGlob = true;
      } else if (t.k === "param") {
        text += t.raw;
        literal = false;
        const values = this.lookup(t, st);
        if (!values || (!t.q && values.some((v) => /\s/.test(v.text) && !v.glob))) add(null);
        else {
          add(
            values.map((v) => {
              const glob = v.glob || (!t.q && hasGlobChars(v.text));
              return { plain: v.text, pat: v.glob || glob ? v.text : escapePmText(v.text), glob };
            }),
          );
        }
      } else if (t.k === "proc") {
        text += t.raw;
        literal = false;
        add([{ plain: "/dev/fd/63", pat: "/dev/fd/63", glob: false }]);
      } else {
        text += t.raw;
        literal = false;
        add(null);
      }
    }
    const finalCands = cands as C[] | null;
    const candidates = finalCands ? finalCands.map((c) => (c.glob ? { text: c.pat, glob: true } : { text: c.plain, glob: false })) : null;
    const glob = ownGlob || !!candidates?.some((c) => c.glob);
    return { raw, text, literal: literal && !ownGlob, glob, candidates, substitutions: [] };
  }

  private lookup(t: Extract<Tok, { k: "param" }>, st: State): PathCandidate[] | null {
    if (t.op !== "") return null;
    const known = st.vars.get(t.name);
    if (known) return known;
    if (t.name === "HOME" && this.home) return [{ text: this.home, glob: false }];
    if (t.name === "PWD" && st.cwds) return st.cwds.map((text) => ({ text, glob: false }));
    return null;
  }

  private redirs(nodes: RedirNode[], st: State, cx: Cx): Array<Omit<Redirection, "part">> {
    const out: Array<Omit<Redirection, "part">> = [];
    for (const r of nodes) {
      let target: ShellWord;
      if (r.heredoc) {
        target = literalWord(r.target.raw);
        this.substitutions(r.heredoc.toks, st, cx);
      } else {
        const exp = this.expand(r.target, st, cx);
        target = exp.length === 1 ? exp[0]! : { ...dynamicWord(r.target.raw), substitutions: exp[0]?.substitutions ?? [] };
      }
      const dup = (r.op === ">&" || r.op === "<&") && target.literal && /^(\d+-?|-)$/.test(target.text);
      const write = [">", ">>", ">|", "&>", "&>>", "<>"].includes(r.op) || (r.op === ">&" && !dup);
      const read = r.op === "<" || r.op === "<>" || (r.op === "<&" && !dup);
      out.push({
        op: r.op,
        fd: r.fd,
        target,
        write,
        read,
        heredoc: r.heredoc ? r.heredoc.body : null,
        cwd: st.cwds,
        text: r.raw.trim(),
      });
    }
    return out;
  }

  // ---- simple commands ----

  private simple(node: Extract<CommandNode, { type: "simple" }>, st: State, cx: Cx): State {
    const assigns = node.assigns.map((a) => this.assignment(a, st, cx));
    const words: ShellWord[] = [];
    for (const w of node.words) words.push(...this.expand(w, st, cx));
    const redirs = this.redirs(node.redirs, st, cx);
    const stdin = stdinOf(redirs) ?? cx.stdin;

    if (words.length === 0) {
      // Assignments and redirections only: the assignments stay in the shell.
      for (const a of assigns) {
        if (a.name === "IFS") {
          this.problem("parse.ifs", "assigning IFS changes how every later word is split, which the policy cannot follow; do not set IFS", a.text);
        }
        setVar(st, a.name, a.value);
        this.noteLatent(a, "an assignment");
      }
      this.emit({ program: "", path: null, argv: [], words: [], assignments: assigns, cwd: st.cwds, via: cx.via, stdin, text: node.text, wrapper: false }, redirs);
      return st;
    }
    for (const a of assigns) this.noteLatent(a, "an assignment");
    return this.run(words, assigns, redirs, st, { via: cx.via, stdin }, node.text);
  }

  private assignment(a: AssignNode, st: State, cx: Cx): Assignment {
    if (a.index) this.substitutions(a.index.toks, st, cx);
    let value: ShellWord;
    if (a.array) {
      const els = a.array.flatMap((w) => this.expand(w, st, cx));
      value = { ...dynamicWord(a.raw.slice(a.raw.indexOf("=") + 1)), substitutions: els.flatMap((e) => e.substitutions) };
      for (const e of els) if (/\$\(|`/.test(e.text)) this.latent.push({ text: e.text, where: `the array ${a.name}` });
    } else {
      value = this.expand(a.value, st, cx, { assignment: true })[0]!;
    }
    return { name: a.name, value, text: a.raw };
  }

  private noteLatent(a: Assignment, where: string): void {
    if (/\$\(|`|\$\{/.test(a.value.text) || /\$\(|`/.test(a.value.raw)) this.latent.push({ text: a.value.text, where: `${where} to ${a.name}` });
  }

  private emit(
    p: Omit<CommandPart, "redirects">,
    redirs: Array<Omit<Redirection, "part">>,
  ): CommandPart {
    const index = this.parts.length;
    const redirects = redirs.map((r) => ({ ...r, part: index }));
    const part: CommandPart = { ...p, redirects };
    this.parts.push(part);
    this.redirects.push(...redirects);
    return part;
  }

  /**
   * Emits one command given as expanded words, then follows it: the command a wrapper runs, the code
   * a shell or `eval` runs, and its effect on the working directory and variables.
   */
  private run(
    words: ShellWord[],
    assigns: Assignment[],
    redirs: Array<Omit<Redirection, "part">>,
    st: State,
    cx: Cx,
    text: string,
  ): State {
    const head = words[0]!;
    if (!head.literal || head.glob) {
      const why = head.glob
        ? "the program name is a glob pattern"
        : head.substitutions.length
          ? "the program name is the output of a command"
          : "the program name comes from a variable or expansion";
      this.problem(
        "parse.dynamic-program",
        `\`${head.raw}\`: ${why}, so the policy cannot tell what would run; write the program name literally`,
        text,
      );
      for (const r of redirs) this.redirects.push({ ...r, part: null });
      return st;
    }
    if (head.text === "") {
      this.problem("parse.dynamic-program", "the program name is empty", text);
      return st;
    }
    const argv0 = head.text;
    const program = argv0.includes("/") ? path.posix.basename(argv0) : argv0;
    let progPath: string | null = null;
    if (argv0.includes("/")) {
      progPath = path.isAbsolute(argv0) ? path.resolve(argv0) : st.cwds?.length === 1 ? path.resolve(st.cwds[0]!, argv0) : argv0;
    }
    const part = this.emit(
      {
        program,
        path: progPath,
        argv: words.map((w) => w.text),
        words,
        assignments: assigns,
        cwd: st.cwds,
        via: cx.via,
        stdin: cx.stdin,
        text,
        wrapper: false,
      },
      redirs,
    );
    this.lastMain = part;
    const out = literalOutput(part);
    for (const r of part.redirects) {
      if (!r.write || (r.fd !== null && r.fd !== 1) || !r.target.literal) continue;
      const key = this.pathKey(r.target.text, st);
      if (key) this.written.set(key, (r.op === ">>" ? (this.written.get(key) ?? "") : "") + (out ?? ""));
      if (key && out === null) this.written.set(key, "");
    }
    if (["read", "mapfile", "readarray"].includes(program) && cx.stdin && cx.stdin.kind !== "file" && cx.stdin.kind !== "pipe") {
      const t = cx.stdin.text;
      if (t && /\$\(|`|\$\{/.test(t)) this.latent.push({ text: t, where: `the input of \`${program}\`` });
    }
    if (program === "eval") {
      // eval runs in this shell: what it assigns or `cd`s carries on.
      const args = words.slice(1);
      if (args.length === 0) return st;
      if (!args.every((w) => w.literal)) {
        const subs = args.flatMap((w) => w.substitutions);
        const from = subs.length ? ` (it includes the output of \`${subs.join("`, `")}\`)` : "";
        this.problem("parse.dynamic-code", `the code given to \`eval\` is computed at run time${from}, so it cannot be checked; write the commands out literally`, text);
        return st;
      }
      part.wrapper = true;
      return this.code(args.map((w) => w.text).join(" "), st, { via: [...cx.via, "eval"], stdin: cx.stdin }, "`eval`");
    }
    if (program === "source" || program === ".") {
      const target = words[1];
      if (target?.literal && STDIN_PATHS.has(target.text)) this.stdinCode(part, cx.stdin, st);
      else if (target) this.writtenScript(part, target, st);
      // A sourced file can change any variable and the directory.
      return { cwds: null, vars: new Map() };
    }
    if (part.path) this.writtenScript(part, head, st);
    this.follow(part, words, st, cx);
    return this.effects(program, words, st);
  }

  /** Emits what a wrapper, shell, `eval`, `find -exec` or `xargs` runs. */
  private follow(part: CommandPart, words: ShellWord[], st: State, cx: Cx): void {
    const prog = part.program;
    const n = words.length;
    const lit = (i: number) => (words[i]?.literal ? words[i]!.text : null);
    const inner = (i: number, label: string, extra: { assigns?: Assignment[]; cwd?: string[] | null; words?: ShellWord[] } = {}) => {
      if (i < 0) {
        this.problem("parse.dynamic-program", `the options of \`${prog}\` are computed at run time, so the command it runs cannot be known`, part.text);
        return;
      }
      const ws = extra.words ?? words.slice(i);
      if (ws.length === 0) return;
      part.wrapper = true;
      const s2 = copy(st);
      if (extra.cwd !== undefined) s2.cwds = extra.cwd;
      this.run(ws, extra.assigns ?? [], [], s2, { via: [...cx.via, label], stdin: cx.stdin }, ws.map((w) => w.raw).join(" "));
    };
    const code = (w: ShellWord | undefined, label: string) => {
      if (!w) return;
      part.wrapper = true;
      if (!w.literal) {
        const from = w.substitutions.length ? ` (it includes the output of \`${w.substitutions.join("`, `")}\`)` : "";
        this.problem(
          "parse.dynamic-code",
          `the code given to \`${label}\` is computed at run time${from}, so it cannot be checked; write the commands out literally`,
          part.text,
        );
        return;
      }
      this.code(w.text, copy(st), { via: [...cx.via, label], stdin: null }, `\`${label}\``);
    };

    switch (prog) {
      case "env": {
        let i = 1;
        let cwd: string[] | null | undefined;
        const assigns: Assignment[] = [];
        for (; i < n; i++) {
          const t = lit(i);
          if (t === null) return inner(-1, "env");
          if (t === "--") continue;
          if (t === "-" || t === "-i" || t === "-0" || t === "-v" || /^--(ignore-environment|null|debug)$/.test(t)) continue;
          if (t === "-u" || t === "--unset") {
            i++;
            continue;
          }
          if (t.startsWith("-u") || t.startsWith("--unset=")) continue;
          if (t === "-C" || t === "--chdir" || t.startsWith("--chdir=") || (t.startsWith("-C") && t.length > 2)) {
            const dirWord = t === "-C" || t === "--chdir" ? words[++i] : literalWord(t.startsWith("-C") ? t.slice(2) : t.slice(8));
            cwd = dirWord ? this.resolveDirs(dirWord, st) : null;
            continue;
          }
          if (t === "-S" || t === "--split-string" || t.startsWith("--split-string=") || (t.startsWith("-S") && t.length > 2)) {
            const s = t === "-S" || t === "--split-string" ? words[i + 1] : literalWord(t.startsWith("-S") ? t.slice(2) : t.slice(15));
            return code(s, "env -S");
          }
          if (t.startsWith("-")) return inner(-1, "env");
          const m = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(t);
          if (m) {
            const a = { name: m[1]!, value: literalWord(t.slice(m[0].length)), text: t };
            assigns.push(a);
            this.noteLatent(a, "`env`");
            continue;
          }
          break;
        }
        // `env $X` could be an assignment or a program: not literal is not knowable.
        for (let k = 1; k < i; k++) if (!words[k]!.literal) return inner(-1, "env");
        if (i < n && !words[i]!.literal) return inner(-1, "env");
        return inner(i, "env", { assigns, cwd });
      }
      case "command": {
        let i = 1;
        for (; i < n; i++) {
          const t = lit(i);
          if (t === null) return inner(-1, prog);
          if (t === "-v" || t === "-V") return;
          if (t === "--") {
            i++;
            break;
          }
          if (!t.startsWith("-")) break;
          if (/[vV]/.test(t)) return;
        }
        return inner(i, "command");
      }
      case "builtin":
        return inner(1, "builtin");
      case "exec":
        return inner(skipOpts(words, 1, { arg: ["-a"] }), "exec");
      case "nohup":
        return inner(skipOpts(words, 1, {}), "nohup");
      case "nice":
        return inner(skipOpts(words, 1, { arg: ["-n"], long: ["--adjustment"], numeric: true }), "nice");
      case "timeout": {
        const i = skipOpts(words, 1, { arg: ["-s", "-k"], long: ["--signal", "--kill-after"] });
        return inner(i < 0 ? -1 : i + 1, "timeout");
      }
      case "stdbuf":
        return inner(skipOpts(words, 1, { arg: ["-i", "-o", "-e"], long: ["--input", "--output", "--error"] }), "stdbuf");
      case "ionice":
        return inner(skipOpts(words, 1, { arg: ["-c", "-n"], long: ["--class", "--classdata"] }), "ionice");
      case "setsid":
        return inner(skipOpts(words, 1, {}), "setsid");
      case "time":
        return inner(skipOpts(words, 1, { arg: ["-f", "-o"], long: ["--format", "--output"] }), "time");
      case "sudo": {
        const i = skipOpts(words, 1, {
          arg: ["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R"],
          long: ["--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout", "--chroot"],
        });
        let j = i;
        while (j >= 0 && j < n && words[j]!.literal && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[j]!.text)) j++;
        return inner(j, "sudo");
      }
      case "doas":
        return inner(skipOpts(words, 1, { arg: ["-u", "-C"] }), "doas");
      case "pkexec":
        return inner(skipOpts(words, 1, { long: ["--user"] }), "pkexec");
      case "su":
      case "runuser": {
        for (let i = 1; i < n; i++) {
          const t = lit(i);
          if (t === "-c" || t === "--command") return code(words[i + 1], `${prog} -c`);
          if (t?.startsWith("--command=")) return code(literalWord(t.slice(10)), `${prog} -c`);
          if (prog === "runuser" && t === "-u") {
            return inner(i + 2 < n && lit(i + 2) === "--" ? i + 3 : i + 2, prog);
          }
        }
        return;
      }
      case "xargs":
        return this.xargs(part, words, st, cx);
      case "find":
        return this.find(part, words, st, cx);
      case "watch": {
        let i = 1;
        let execForm = false;
        for (; i < n; i++) {
          const t = lit(i);
          if (t === null) return inner(-1, "watch");
          if (t === "-x" || t === "--exec") {
            execForm = true;
            continue;
          }
          if (t === "-n" || t === "--interval" || t === "-q" || t === "--equexit") {
            i++;
            continue;
          }
          if (!t.startsWith("-")) break;
        }
        if (execForm) return inner(i, "watch");
        const rest = words.slice(i);
        if (rest.length === 0) return;
        return code({ ...literalWord(rest.map((w) => w.text).join(" ")), literal: rest.every((w) => w.literal) }, "watch");
      }
      case "flock": {
        let i = 1;
        for (; i < n; i++) {
          const t = lit(i);
          if (t === null) return inner(-1, "flock");
          if (t === "-w" || t === "-E" || t === "--timeout" || t === "--conflict-exit-code") {
            i++;
            continue;
          }
          if (!t.startsWith("-")) break;
        }
        // words[i] is the lock file or directory.
        const after = lit(i + 1);
        if (after === "-c" || after === "--command") return code(words[i + 2], "flock -c");
        return inner(i + 1, "flock");
      }
      case "trap": {
        const a1 = lit(1);
        if (n < 3 || a1 === null || a1 === "-l" || a1 === "-p" || a1 === "-" || a1 === "--") {
          if (n >= 3 && words[1] && !words[1].literal) return code(words[1], "trap");
          return;
        }
        return code(words[1], "trap");
      }
      case "npx":
      case "bunx":
      case "uvx":
        return this.packageRunner(part, words, 1, st, cx);
      case "npm":
      case "pnpm":
      case "yarn":
      case "bun":
      case "uv":
      case "poetry":
      case "pipenv":
      case "pdm": {
        const sub = lit(1);
        if (sub === null) return;
        const runners: Record<string, string[]> = {
          npm: ["exec", "x"],
          pnpm: ["exec", "dlx"],
          yarn: ["exec", "dlx"],
          bun: ["x"],
          uv: ["run"],
          poetry: ["run"],
          pipenv: ["run"],
          pdm: ["run"],
        };
        if (runners[prog]!.includes(sub)) return this.packageRunner(part, words, 2, st, cx);
        if (prog === "uv" && sub === "tool" && lit(2) === "run") return this.packageRunner(part, words, 3, st, cx);
        return;
      }
    }
    if (SHELLS.has(prog)) this.shell(part, words, st, cx);
  }

  /** Code a shell reads on stdin, when it is literal (here-document, here-string, `echo … |`). */
  private stdinCode(part: CommandPart, input: StdinSource | null, st: State): void {
    if (input && input.kind !== "file" && input.text !== null) {
      part.wrapper = true;
      this.code(input.text, copy(st), { via: [...part.via, `stdin of ${part.program}`], stdin: null }, `the standard input of \`${part.program}\``);
    }
  }

  /** A script this same command line wrote with literal content (`echo 'x' > s.sh; sh s.sh`) is checked as code. */
  private writtenScript(part: CommandPart, script: ShellWord, st: State): void {
    if (!script.literal) return;
    const key = this.pathKey(script.text, st);
    const content = key ? this.written.get(key) : undefined;
    if (content === undefined) return;
    part.wrapper = true;
    this.code(content, copy(st), { via: [...part.via, `script ${script.text}`], stdin: null }, `the script ${script.text}`);
  }

  private pathKey(p: string, st: State): string | null {
    if (path.isAbsolute(p)) return path.resolve(p);
    return st.cwds?.length === 1 ? path.resolve(st.cwds[0]!, p) : null;
  }

  private packageRunner(part: CommandPart, words: ShellWord[], start: number, st: State, cx: Cx): void {
    const n = words.length;
    for (let i = start; i < n; i++) {
      const w = words[i]!;
      if (!w.literal) {
        this.problem("parse.dynamic-program", `the arguments of \`${part.program}\` are computed at run time, so the command it runs cannot be known`, part.text);
        return;
      }
      const t = w.text;
      if (t === "--") {
        i++;
        if (i < n) this.run(words.slice(i), [], [], copy(st), { via: [...cx.via, part.program], stdin: cx.stdin }, words.slice(i).map((x) => x.raw).join(" "));
        part.wrapper = true;
        return;
      }
      if (t === "-c" || t === "--call" || t.startsWith("--call=")) {
        part.wrapper = true;
        const c = t.startsWith("--call=") ? literalWord(t.slice(7)) : words[i + 1];
        if (!c) return;
        if (!c.literal) {
          this.problem("parse.dynamic-code", `the code given to \`${part.program} -c\` is computed at run time; write it literally`, part.text);
          return;
        }
        this.code(c.text, copy(st), { via: [...cx.via, `${part.program} -c`], stdin: null }, `\`${part.program} -c\``);
        return;
      }
      if (["-p", "--package", "--with", "--from", "--python", "-w", "--env-file", "--directory", "--project", "--workspace", "--filter", "-F", "-C"].includes(t)) {
        i++;
        continue;
      }
      if (t.startsWith("-")) continue;
      part.wrapper = true;
      this.run(words.slice(i), [], [], copy(st), { via: [...cx.via, part.program], stdin: cx.stdin }, words.slice(i).map((x) => x.raw).join(" "));
      return;
    }
  }

  private shell(part: CommandPart, words: ShellWord[], st: State, cx: Cx): void {
    const prog = part.program;
    let codeMode = false;
    let stdinMode = false;
    let i = 1;
    for (; i < words.length; i++) {
      const w = words[i]!;
      if (!w.literal) {
        // A process substitution is a /dev/fd path, never an option: it is the script.
        if (codeMode || w.raw.startsWith("<(")) break;
        this.problem("parse.dynamic-program", `the options of \`${prog}\` are computed at run time, so what it runs cannot be known`, part.text);
        return;
      }
      const t = w.text;
      if (t === "--" || t === "-") {
        i++;
        if (t === "-") stdinMode = true;
        break;
      }
      if (t === "-o" || t === "+o" || t === "-O" || t === "+O" || t === "--rcfile" || t === "--init-file") {
        i++;
        continue;
      }
      if (/^[-+][A-Za-z]+$/.test(t)) {
        if (t.startsWith("-") && t.includes("c")) codeMode = true;
        if (t.startsWith("-") && t.includes("s")) stdinMode = true;
        // -o NAME / -O NAME inside a cluster (`-euo pipefail`) take the next words as their values.
        i += [...t].filter((c) => c === "o" || c === "O").length;
        continue;
      }
      if (t.startsWith("--")) continue;
      break;
    }
    if (codeMode) {
      part.wrapper = true;
      const w = words[i];
      if (!w) {
        this.problem("parse.error", `\`${prog} -c\` needs a command string`, part.text);
        return;
      }
      if (!w.literal) {
        const from = w.substitutions.length ? ` (it includes the output of \`${w.substitutions.join("`, `")}\`)` : "";
        this.problem("parse.dynamic-code", `the code given to \`${prog} -c\` is computed at run time${from}, so it cannot be checked; write the commands out literally`, part.text);
        return;
      }
      this.code(w.text, copy(st), { via: [...part.via, `${prog} -c`], stdin: null }, `\`${prog} -c\``);
      return;
    }
    const script = words[i];
    if (!stdinMode && script && !(script.literal && STDIN_PATHS.has(script.text))) {
      // Runs a script file: judged by the policy from `words`, and read here if this line wrote it.
      this.writtenScript(part, script, st);
      return;
    }
    this.stdinCode(part, part.stdin, st);
  }

  private xargs(part: CommandPart, words: ShellWord[], st: State, cx: Cx): void {
    const withArg = ["-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"];
    const longArg = ["--max-args", "--max-lines", "--max-procs", "--max-chars", "--delimiter", "--eof", "--arg-file", "--process-slot-var"];
    let replace: string | null = null;
    let i = 1;
    for (; i < words.length; i++) {
      const w = words[i]!;
      if (!w.literal) {
        this.problem("parse.dynamic-program", "the options of `xargs` are computed at run time, so the command it runs cannot be known", part.text);
        return;
      }
      const t = w.text;
      if (t === "--") {
        i++;
        break;
      }
      if (!t.startsWith("-")) break;
      if (t === "-I") {
        replace = words[i + 1]?.text ?? null;
        i++;
        continue;
      }
      if (t.startsWith("-I")) {
        replace = t.slice(2);
        continue;
      }
      if (t === "-i" || t === "--replace") {
        replace = "{}";
        continue;
      }
      if (t.startsWith("-i") || t.startsWith("--replace=")) {
        replace = t.startsWith("-i") ? t.slice(2) : t.slice(10);
        continue;
      }
      if (withArg.includes(t) || longArg.includes(t)) i++;
    }
    const inputWord = dynamicWord("(xargs input)");
    let ws = words.slice(i);
    if (ws.length === 0) ws = [literalWord("echo")];
    if (replace) ws = ws.map((w) => (w.text.includes(replace!) ? { ...inputWord, raw: w.raw, text: w.text } : w));
    else ws = [...ws, inputWord];
    part.wrapper = true;
    this.run(ws, [], [], copy(st), { via: [...cx.via, "xargs"], stdin: null }, ws.map((w) => w.raw).join(" "));
  }

  private find(part: CommandPart, words: ShellWord[], st: State, cx: Cx): void {
    const f = analyzeFind(words);
    if (f.problem) {
      this.problem("parse.error", f.problem, part.text);
      return;
    }
    let bases: PathCandidate[] | null = [];
    for (const s of f.starts) {
      if (!s.candidates || !bases) bases = null;
      else bases.push(...s.candidates);
    }
    for (const e of f.execs) {
      const below: ShellWord = { ...dynamicWord("{}"), below: { bases, names: f.names } };
      const ws = e.words.map((w) => (w.text.includes("{}") ? { ...below, raw: w.raw, text: w.text } : w));
      if (ws.length === 0) continue;
      part.wrapper = true;
      const s2 = copy(st);
      if (e.dir) s2.cwds = null;
      this.run(ws, [], [], s2, { via: [...cx.via, e.dir ? "find -execdir" : "find -exec"], stdin: null }, ws.map((w) => w.raw).join(" "));
    }
  }

  private resolveDirs(w: ShellWord, st: State): string[] | null {
    if (!w.candidates || w.candidates.some((c) => c.glob)) return null;
    const out = new Set<string>();
    for (const c of w.candidates) {
      if (path.isAbsolute(c.text)) out.add(path.resolve(c.text));
      else if (!st.cwds) return null;
      else for (const d of st.cwds) out.add(path.resolve(d, c.text));
    }
    return out.size > MAX_CWDS ? null : [...out];
  }

  /** What a builtin does to the shell's state: `cd` and variables. */
  private effects(program: string, words: ShellWord[], st: State): State {
    const args = words.slice(1);
    switch (program) {
      case "cd":
      case "pushd": {
        const ops = args.filter((w) => !(w.literal && /^-[LPe@]+$/.test(w.text)));
        const target = ops[0];
        if (!target) st.cwds = this.home ? [this.home] : null;
        else if (target.literal && target.text === "-") st.cwds = null;
        else st.cwds = this.resolveDirs(target, st);
        return st;
      }
      case "popd":
        st.cwds = null;
        return st;
      case "export":
      case "declare":
      case "typeset":
      case "local":
      case "readonly":
        for (const w of args) {
          const m = /^([A-Za-z_][A-Za-z0-9_]*)(\+?)=/.exec(w.text);
          if (!m) continue;
          const value = w.literal ? literalWord(w.text.slice(m[0].length)) : dynamicWord(w.text.slice(m[0].length));
          if (m[2]) st.vars.delete(m[1]!);
          else setVar(st, m[1]!, value);
          if (/\$\(|`|\$\{/.test(w.text)) this.latent.push({ text: w.text.slice(m[0].length), where: `\`${program} ${m[1]}\`` });
          if (m[1] === "IFS") this.problem("parse.ifs", "assigning IFS changes how every later word is split, which the policy cannot follow; do not set IFS", w.text);
        }
        return st;
      case "unset":
      case "read":
      case "mapfile":
      case "readarray":
      case "getopts":
      case "printf":
        for (const w of args) if (w.literal && /^[A-Za-z_][A-Za-z0-9_]*$/.test(w.text)) st.vars.delete(w.text);
        return st;
    }
    return st;
  }
}

function setVar(st: State, name: string, value: ShellWord): void {
  if (value.literal) st.vars.set(name, [{ text: value.text, glob: false }]);
  else if (value.candidates && !value.candidates.some((c) => c.glob)) st.vars.set(name, value.candidates);
  else st.vars.delete(name);
}

/** Variables assigned (and `cd`) anywhere in a loop body become unknown for the whole loop: it may run many times. */
function forgetAssigned(list: ListNode, st: State): void {
  const visitCmd = (c: CommandNode) => {
    if (c.type === "simple") {
      for (const a of c.assigns) st.vars.delete(a.name);
      const first = c.words[0]?.raw;
      if (first === "cd" || first === "pushd" || first === "popd") st.cwds = null;
      if (first && ["export", "declare", "typeset", "local", "readonly", "read", "unset", "mapfile", "readarray", "printf", "getopts", "eval", "source", "."].includes(first)) {
        // Names are words after the builtin; be conservative and forget them all.
        for (const w of c.words.slice(1)) {
          const m = /^([A-Za-z_][A-Za-z0-9_]*)/.exec(w.raw);
          if (m) st.vars.delete(m[1]!);
        }
        if (first === "eval" || first === "source" || first === ".") {
          st.vars.clear();
          st.cwds = null;
        }
      }
      return;
    }
    const lists: ListNode[] = [];
    switch (c.type) {
      case "subshell":
        return;
      case "group":
        lists.push(c.body);
        break;
      case "if":
        for (const cl of c.clauses) lists.push(cl.cond, cl.body);
        if (c.elseBody) lists.push(c.elseBody);
        break;
      case "for":
        st.vars.delete(c.name);
        lists.push(c.body);
        break;
      case "arithfor":
        lists.push(c.body);
        break;
      case "while":
        lists.push(c.cond, c.body);
        break;
      case "case":
        for (const it of c.items) lists.push(it.body);
        break;
      default:
        return;
    }
    for (const l of lists) forgetAssigned(l, st);
  };
  for (const item of list) {
    if (item.background) continue;
    const pipes = [item.andOr.first, ...item.andOr.rest.map((r) => r.pipe)];
    for (const p of pipes) if (p.cmds.length === 1) visitCmd(p.cmds[0]!);
  }
}

function stdinOf(redirs: Array<Omit<Redirection, "part">>): StdinSource | null {
  let out: StdinSource | null = null;
  for (const r of redirs) {
    if (r.fd !== null && r.fd !== 0) continue;
    if (r.op === "<<" || r.op === "<<-") out = { kind: "heredoc", text: r.heredoc };
    else if (r.op === "<<<") out = { kind: "herestring", text: r.target.literal ? `${r.target.text}\n` : null };
    else if (r.op === "<" || r.op === "<>") out = { kind: "file", word: r.target };
  }
  return out;
}

/** What `echo`/`printf` with literal arguments, or `cat` of a here-document, writes to stdout. */
function literalOutput(p: CommandPart): string | null {
  if (p.program === "echo" || p.program === "printf") {
    let args = p.words.slice(1);
    if (p.program === "echo") while (args[0]?.literal && /^-[neE]+$/.test(args[0].text)) args = args.slice(1);
    if (!args.every((w) => w.literal)) return null;
    return args.map((w) => w.text).join(" ").replace(/\\n/g, "\n");
  }
  if (p.program === "cat" && p.words.length === 1 && p.stdin && (p.stdin.kind === "heredoc" || p.stdin.kind === "herestring")) {
    return p.stdin.text;
  }
  return null;
}

/** The structure of a `find` command line, shared by the parser (for `-exec`) and the policy (for `-delete`). */
export interface FindAnalysis {
  starts: ShellWord[];
  execs: Array<{ words: ShellWord[]; dir: boolean }>;
  delete: boolean;
  /** Files written by -fprint, -fprintf, -fls. */
  writes: ShellWord[];
  /** `-name`/`-iname` patterns every match must satisfy (empty when the expression has -o or none). */
  names: string[];
  problem?: string;
}

const FIND_ONE_ARG = new Set([
  "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-newer", "-anewer", "-cnewer", "-perm", "-type",
  "-xtype", "-user", "-group", "-uid", "-gid", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-links",
  "-inum", "-samefile", "-maxdepth", "-mindepth", "-fstype", "-lname", "-ilname", "-used", "-printf", "-regextype",
  "-context", "-files0-from", "-newermt", "-newerct", "-newerat", "-newermm",
]);

export function analyzeFind(words: ShellWord[]): FindAnalysis {
  const out: FindAnalysis = { starts: [], execs: [], delete: false, writes: [], names: [] };
  let i = 1;
  while (i < words.length && words[i]!.literal && (/^-[HLP]$/.test(words[i]!.text) || /^-O\d$/.test(words[i]!.text) || words[i]!.text === "-D")) {
    i += words[i]!.text === "-D" ? 2 : 1;
  }
  while (i < words.length) {
    const t = words[i]!.text;
    if (words[i]!.literal && (t.startsWith("-") || t === "(" || t === ")" || t === "!" || t === ",")) break;
    out.starts.push(words[i]!);
    i++;
  }
  if (out.starts.length === 0) out.starts.push(literalWord("."));
  let hasOr = false;
  let negated = false;
  for (; i < words.length; i++) {
    const w = words[i]!;
    const t = w.text;
    if (t === "-exec" || t === "-execdir" || t === "-ok" || t === "-okdir") {
      const start = i + 1;
      let j = start;
      while (j < words.length && !(words[j]!.literal && (words[j]!.text === ";" || words[j]!.text === "+"))) j++;
      if (j >= words.length) return { ...out, problem: `\`find ${t}\` is missing its terminating \`;\` or \`+\`` };
      out.execs.push({ words: words.slice(start, j), dir: t.endsWith("dir") });
      i = j;
    } else if (t === "-delete") out.delete = true;
    else if (t === "-fprint" || t === "-fprint0" || t === "-fls") {
      const f = words[++i];
      if (f) out.writes.push(f);
    } else if (t === "-fprintf") {
      const f = words[++i];
      if (f) out.writes.push(f);
      i++;
    } else if (t === "-name" || t === "-iname") {
      const p = words[++i];
      if (p && !negated) out.names.push(p.text);
    } else if (t === "-o" || t === "-or" || t === ",") hasOr = true;
    else if (FIND_ONE_ARG.has(t)) i++;
    negated = t === "!" || t === "-not";
  }
  if (hasOr) out.names = [];
  return out;
}
