/**
 * The structural half of the command-line walk (policy-parts.ts has the rest): shell code parsed and
 * walked through its lists, pipelines and compound commands, the substitutions inside words, and
 * redirections, following the working directory and variables through them. What a simple command
 * runs and does is the subclass's (`simple`).
 */
import {
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
import {
  type CommandPart,
  dynamicWord,
  literalWord,
  type ParseProblem,
  type PathCandidate,
  type Redirection,
  type ShellWord,
  type StdinSource,
} from "./command-parts.js";
import { braceExpand, wordOf } from "./shell-expand.js";
import { copy, type Cx, forgetAssigned, literalOutput, MAX_CANDIDATES, merge, type State, stdinOf, unionCwds } from "./walk-state.js";

/** Walks shell code into the parts, redirections and problems the policy judges. */
export abstract class ShellWalker {
  parts: CommandPart[] = [];
  redirects: Redirection[] = [];
  problems: ParseProblem[] = [];
  latent: Array<{ text: string; where: string }> = [];
  private depth = 0;
  /** The main command the last simple command emitted (a pipeline reads its literal output). */
  protected lastMain: CommandPart | null = null;

  constructor(protected readonly home: string | null) {}

  /** Walks one simple command: emits it and follows what it runs and changes. */
  protected abstract simple(node: Extract<CommandNode, { type: "simple" }>, st: State, cx: Cx): State;

  /** Records a problem once per rule and reason. */
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
        this.problem("parse.unsupported", `${err.message}${where} cannot be checked by the command policy; write the commands out directly`, src.slice(0, 120));
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
  protected expand(w: WordNode, st: State, cx: Cx, opts: { assignment?: boolean } = {}): ShellWord[] {
    const before = this.parts.length;
    this.substitutions(w.toks, st, cx);
    const substitutions = this.parts
      .slice(before)
      .map((p) => p.program)
      .filter(Boolean);
    const alts = opts.assignment ? [w.toks] : braceExpand(w.toks);
    if (!alts) return [{ ...dynamicWord(w.raw), substitutions }];
    return alts.map((toks) => ({ ...wordOf(toks, w.raw, st, this.home), substitutions }));
  }

  protected substitutions(toks: Tok[], st: State, cx: Cx): void {
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

  protected redirs(nodes: RedirNode[], st: State, cx: Cx): Array<Omit<Redirection, "part">> {
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
}
