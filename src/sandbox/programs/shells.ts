/**
 * Shells and shell builtins. A shell runs the code of `-c`, a script file, or its standard input
 * (each walked as shell code when it is literal); `command`, `builtin`, `exec` and `trap` run the
 * command or code in their arguments. A few builtins change how later commands are read (`shopt -s
 * expand_aliases`, `hash -p`, `alias`) or reach other processes (`kill -1`).
 */
import { SHELLS, STDIN_PATHS } from "../command-parts.js";
import { runCode, runFrom } from "./follow.js";
import { leadingOptions } from "./options.js";
import { allowed, type FollowApi, finding, type ProgramSpec, q } from "./types.js";
import type { CommandPart } from "../command-parts.js";

type Rule = (p: CommandPart) => ReturnType<typeof finding>;

/** bash/sh/…: `-c CODE`, a script, or code on standard input (`-s`, `-`, no script). */
function runShell(api: FollowApi): void {
  const { part, words } = api;
  const prog = part.program;
  let codeMode = false;
  let stdinMode = false;
  let i = 1;
  for (; i < words.length; i++) {
    const w = words[i]!;
    if (!w.literal) {
      // A process substitution is a /dev/fd path, never an option: it is the script.
      if (codeMode || w.raw.startsWith("<(")) break;
      api.problem("parse.dynamic-program", `the options of \`${prog}\` are computed at run time, so what it runs cannot be known`);
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
      api.problem("parse.error", `\`${prog} -c\` needs a command string`);
      return;
    }
    if (!w.literal) {
      const from = w.substitutions.length ? ` (it includes the output of \`${w.substitutions.join("`, `")}\`)` : "";
      api.problem(
        "parse.dynamic-code",
        `the code given to \`${prog} -c\` is computed at run time${from}, so it cannot be checked; write the commands out literally`,
      );
      return;
    }
    api.code(w.text, `${prog} -c`);
    return;
  }
  const script = words[i];
  if (!stdinMode && script && !(script.literal && STDIN_PATHS.has(script.text))) {
    // Runs a script file: judged by the policy from `words`, and read here if this line wrote it.
    api.script(script);
    return;
  }
  api.stdinCode();
}

const shoptRule: Rule = (p) => {
  const set = p.argv.includes("-s") || p.argv.some((a) => /^-[a-z]*s/.test(a));
  const bad = p.argv.slice(1).filter((a) => ["expand_aliases", "dotglob", "extdebug", "cdable_vars", "globskipdots"].includes(a));
  if (set && bad.length && !(bad.length === 1 && bad[0] === "globskipdots")) {
    return finding(
      "deny",
      "shell.shopt",
      `${q(p.text)} changes how later commands are expanded (${bad.join(", ")}), which the policy relies on; leave these options alone`,
    );
  }
  return allowed(p);
};

const hashRule: Rule = (p) =>
  p.argv.some((a) => /^-[a-z]*p/.test(a))
    ? finding("deny", "shell.hash", `${q(p.text)} makes a command name run a different program; call programs by their own names`)
    : allowed(p);

const killRule: Rule = (p) => {
  const w = p.words;
  let i = 1;
  if (w[i]?.text === "-s" || w[i]?.text === "-n") i += 2;
  else if (w[i]?.text === "-l" || w[i]?.text === "-L") return allowed(p);
  else if (w[i]?.literal && w[i]!.text.startsWith("-") && w[i]!.text !== "--") i++;
  if (w[i]?.text === "--") i++;
  for (const t of w.slice(i)) {
    if (t.literal && (t.text === "-1" || t.text === "1")) {
      return finding("deny", "kill.all", `${q(p.text)} signals every process (or init); kill only the processes this task started, by their pid`);
    }
    if (/\$\{?PPID\}?/.test(t.raw)) {
      return finding("deny", "kill.all", `${q(p.text)} signals the process that runs the agent; kill only the processes this task started`);
    }
  }
  return allowed(p);
};

const aliasRule: Rule = (p) =>
  p.argv.length > 1
    ? finding("ask", "shell.alias", `${q(p.text)} defines an alias, which can make a command name run something else; call the commands directly`)
    : allowed(p);

/** Rules by program (after normalizeProgram). Programs not here fall back to the lists above, then to the policy default. */

const lit = (api: FollowApi, i: number) => (api.words[i]?.literal ? api.words[i]!.text : null);

/** Builtins that only read or change the shell's own state (the walker follows `cd` and variables). */
const PLAIN_BUILTINS = [
  "cd",
  "pushd",
  "popd",
  "dirs",
  "pwd",
  "echo",
  "printf",
  "test",
  "[",
  "true",
  "false",
  ":",
  "export",
  "declare",
  "typeset",
  "local",
  "readonly",
  "unset",
  "set",
  "read",
  "mapfile",
  "readarray",
  "let",
  "return",
  "exit",
  "break",
  "continue",
  "shift",
  "getopts",
  "wait",
  "jobs",
  "fg",
  "bg",
  "disown",
  "umask",
  "ulimit",
  "times",
  "type",
  "help",
  "eval",
  "source",
  ".",
  "unalias",
  "caller",
  "compgen",
  "complete",
  "history",
];

export const SHELL_SPECS: ProgramSpec[] = [
  { names: [...SHELLS], decide: (p) => allowed(p), runs: runShell },
  { names: PLAIN_BUILTINS, decide: (p) => allowed(p) },
  {
    names: ["command"],
    decide: (p) => allowed(p),
    runs(api) {
      let i = 1;
      for (; i < api.words.length; i++) {
        const t = lit(api, i);
        if (t === null) return runFrom(api, -1, "command");
        if (t === "-v" || t === "-V") return;
        if (t === "--") {
          i++;
          break;
        }
        if (!t.startsWith("-")) break;
        if (/[vV]/.test(t)) return;
      }
      return runFrom(api, i, "command");
    },
  },
  { names: ["builtin"], decide: (p) => allowed(p), runs: (api) => runFrom(api, 1, "builtin") },
  { names: ["exec"], options: { short: "a" }, decide: (p) => allowed(p), runs: (api) => runFrom(api, leadingOptions(api.words, 1, { short: "a" }), "exec") },
  {
    names: ["trap"],
    decide: (p) => allowed(p),
    runs(api) {
      const n = api.words.length;
      const a1 = lit(api, 1);
      if (n < 3 || a1 === null || a1 === "-l" || a1 === "-p" || a1 === "-" || a1 === "--") {
        if (n >= 3 && api.words[1] && !api.words[1].literal) return runCode(api, api.words[1], "trap");
        return;
      }
      return runCode(api, api.words[1], "trap");
    },
  },
  { names: ["shopt"], decide: shoptRule },
  { names: ["hash"], decide: hashRule },
  { names: ["kill"], decide: killRule },
  { names: ["alias"], decide: aliasRule },
];
