/**
 * What the shell walker knows between commands, as sets of possibilities: the working directories
 * (`cd`) and the variables with literal values; how branches merge, what loops forget, and where a
 * command's standard input comes from.
 */
import type { CommandPart, PathCandidate, Redirection, ShellWord, StdinSource } from "./command-parts.js";
import type { CommandNode, ListNode } from "./shell-parse.js";

export const MAX_CANDIDATES = 64;
export const MAX_CWDS = 8;

export interface State {
  cwds: string[] | null;
  /** Variables with statically known values; absent means unknown (maybe empty). */
  vars: Map<string, PathCandidate[]>;
}

export interface Cx {
  via: string[];
  stdin: StdinSource | null;
}

export const copy = (s: State): State => ({ cwds: s.cwds ? [...s.cwds] : null, vars: new Map(s.vars) });

export function unionCwds(a: string[] | null, b: string[] | null): string[] | null {
  if (!a || !b) return null;
  const u = [...new Set([...a, ...b])];
  return u.length > MAX_CWDS ? null : u;
}

export function merge(a: State, b: State): State {
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

export function setVar(st: State, name: string, value: ShellWord): void {
  if (value.literal) st.vars.set(name, [{ text: value.text, glob: false }]);
  else if (value.candidates && !value.candidates.some((c) => c.glob)) st.vars.set(name, value.candidates);
  else st.vars.delete(name);
}

/** Variables assigned (and `cd`) anywhere in a loop body become unknown for the whole loop: it may run many times. */
export function forgetAssigned(list: ListNode, st: State): void {
  const visitCmd = (c: CommandNode) => {
    if (c.type === "simple") {
      for (const a of c.assigns) st.vars.delete(a.name);
      const first = c.words[0]?.raw;
      if (first === "cd" || first === "pushd" || first === "popd") st.cwds = null;
      if (
        first &&
        ["export", "declare", "typeset", "local", "readonly", "read", "unset", "mapfile", "readarray", "printf", "getopts", "eval", "source", "."].includes(
          first,
        )
      ) {
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

export function stdinOf(redirs: Array<Omit<Redirection, "part">>): StdinSource | null {
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
export function literalOutput(p: CommandPart): string | null {
  if (p.program === "echo" || p.program === "printf") {
    let args = p.words.slice(1);
    if (p.program === "echo") while (args[0]?.literal && /^-[neE]+$/.test(args[0].text)) args = args.slice(1);
    if (!args.every((w) => w.literal)) return null;
    return args
      .map((w) => w.text)
      .join(" ")
      .replace(/\\n/g, "\n");
  }
  if (p.program === "cat" && p.words.length === 1 && p.stdin && (p.stdin.kind === "heredoc" || p.stdin.kind === "herestring")) {
    return p.stdin.text;
  }
  return null;
}
