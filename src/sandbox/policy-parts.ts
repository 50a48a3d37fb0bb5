/**
 * From a bash syntax tree to the flat list the policy judges: every simple command that can run
 * (including those inside substitutions, code strings and wrappers such as `env`, `timeout`,
 * `xargs`, `find -exec`, `bash -c`, `eval`), every redirection, and every construct that cannot be
 * judged statically (a program name computed at run time, code from a variable, …) as a problem.
 *
 * The walk also follows, as sets of possibilities, the working directory (`cd`) and variables
 * assigned literal values (`d=build; rm -rf "$d"`, `for f in src/*.ts`), so that paths can be
 * checked where they are knowable; everything else is marked unknown and the policy treats it as such.
 *
 * The walker keeps only shell meaning (words, expansions, redirections, compound commands, `eval`,
 * `source`, `cd` and variables); what a program runs (a wrapper's command, a shell's `-c` code,
 * xargs' and find's commands) its spec in programs/ says, through the FollowApi.
 */
import path from "node:path";
import type { AssignNode, CommandNode } from "./shell-parse.js";
import {
  type Assignment,
  type CommandPart,
  dynamicWord,
  literalWord,
  type ParseOptions,
  type ParsedCommandLine,
  type Redirection,
  type ShellWord,
  type StdinSource,
  STDIN_PATHS,
} from "./command-parts.js";
import { ShellWalker } from "./policy-walk.js";
import { specFor } from "./programs/registry.js";
import type { FollowApi } from "./programs/types.js";
import { copy, type Cx, literalOutput, MAX_CWDS, setVar, type State, stdinOf } from "./walk-state.js";

export type {
  Assignment,
  CommandPart,
  ParseOptions,
  ParseProblem,
  ParsedCommandLine,
  PathCandidate,
  Redirection,
  ShellWord,
  StdinSource,
} from "./command-parts.js";
export { SHELLS } from "./command-parts.js";

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

/** The walk with simple commands: what each runs (wrappers, shells, `eval`, scripts) and changes. */
class Walker extends ShellWalker {
  /** Files this command line writes with literal content, by absolute path. */
  private readonly written = new Map<string, string>();

  // ---- simple commands ----

  protected simple(node: Extract<CommandNode, { type: "simple" }>, st: State, cx: Cx): State {
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
      this.emit(
        { program: "", path: null, argv: [], words: [], assignments: assigns, cwd: st.cwds, via: cx.via, stdin, text: node.text, wrapper: false },
        redirs,
      );
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

  private emit(p: Omit<CommandPart, "redirects">, redirs: Array<Omit<Redirection, "part">>): CommandPart {
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
  private run(words: ShellWord[], assigns: Assignment[], redirs: Array<Omit<Redirection, "part">>, st: State, cx: Cx, text: string): State {
    const head = words[0]!;
    if (!head.literal || head.glob) {
      const why = head.glob
        ? "the program name is a glob pattern"
        : head.substitutions.length
          ? "the program name is the output of a command"
          : "the program name comes from a variable or expansion";
      this.problem("parse.dynamic-program", `\`${head.raw}\`: ${why}, so the policy cannot tell what would run; write the program name literally`, text);
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
        this.problem(
          "parse.dynamic-code",
          `the code given to \`eval\` is computed at run time${from}, so it cannot be checked; write the commands out literally`,
          text,
        );
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
    specFor(program)?.runs?.(this.followApi(part, words, st, cx));
    return this.effects(program, words, st);
  }

  /** What a program spec's `runs` hook may do: emit the commands and code the program runs. */
  private followApi(part: CommandPart, words: ShellWord[], st: State, cx: Cx): FollowApi {
    return {
      part,
      words,
      run: (ws, label, o = {}) => {
        const s2 = copy(st);
        if (o.cwd !== undefined) s2.cwds = o.cwd;
        this.run(ws, o.assigns ?? [], [], s2, { via: [...cx.via, label], stdin: o.stdin === null ? null : cx.stdin }, ws.map((w) => w.raw).join(" "));
      },
      code: (text, label) => {
        this.code(text, copy(st), { via: [...cx.via, label], stdin: null }, `\`${label}\``);
      },
      stdinCode: () => this.stdinCode(part, part.stdin, st),
      script: (w) => this.writtenScript(part, w, st),
      problem: (rule, reason) => this.problem(rule, reason, part.text),
      resolveDirs: (w) => this.resolveDirs(w, st),
      noteLatent: (a, where) => this.noteLatent(a, where),
    };
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
          if (m[1] === "IFS")
            this.problem("parse.ifs", "assigning IFS changes how every later word is split, which the policy cannot follow; do not set IFS", w.text);
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
