/**
 * Inline interpreter code the policy cannot follow.
 *
 * `node -e`, `python3 -c`, `perl -e`, `ruby -e`, `php -r`, `bun -e`, `deno eval`, … run code that
 * the shell parser never sees. The policy checks the string literals of code that shells out
 * (codeStrings) and refuses those naming a denied command, but a command built at run time
 * (`'gi'+'t'`, a variable, a module loaded by a computed name) escapes that check. So: code that
 * can start programs is never simply allowed — denied when a literal names a refused command, else
 * it needs the user's approval. Plain code (`console.log(1)`, `import json`) stays allowed: the
 * sandbox contains it as it contains any script in the workspace.
 */
import type { InterpreterKind } from "./programs/runtimes.js";

/**
 * Reaching a process-starting API without naming it: modules loaded or code evaluated by a computed
 * name (`require(x)`, `import(x)`, `__import__(x)`, `importlib`, `eval`, `Function`, `getattr`,
 * native bindings, perl/ruby/php `eval`/`send`/variable functions).
 */
const INDIRECT: Record<string, RegExp> = {
  node: /\brequire\s*\(\s*(?!['"`][\w@./:-]+['"`]\s*\))|\bimport\s*\(|\bprocess\s*\.\s*(binding|_linkedBinding|dlopen)\b|\beval\s*\(|\bFunction\s*\(|\bmodule\s*\.\s*(constructor|require)\b|\bDeno\s*\[|\bBun\s*\[/,
  python: /\b__import__\s*\(\s*(?!['"]\w+['"]\s*\))|\bimportlib\b|\beval\s*\(|\bexec\s*\(|\bcompile\s*\(|\bgetattr\s*\(|\bctypes\b|\bsys\s*\.\s*modules\b/,
  perl: /\beval\b|\brequire\s+\$|\bsyscall\b|&\s*\$|\bdo\s+\$/,
  ruby: /\beval\b|\b(send|public_send|__send__|instance_eval|class_eval|method)\s*[(:]|\bconst_get\b|\bFiddle\b/,
  php: /\beval\s*\(|\$\w+\s*\(|\bcall_user_func|\bcreate_function\b|\bassert\s*\(|\bpreg_replace\s*\(.*\/e/,
};

/** Why inline code of `kind` needs approval (it can start programs the policy cannot check), or null for plain code. */
export function inlineExecReason(code: string, kind: InterpreterKind | "awk"): string | null {
  if (kind === "awk" || kind === "shell") return null; // awk's commands are its string literals; shells are parsed
  if (shellsOut(code, kind)) return "starts programs (child_process, subprocess, system, exec, backticks…)";
  if (INDIRECT[kind]?.test(code)) return "loads modules or evaluates code by computed names, which can start programs";
  return null;
}

/** Calls that hand a string to a shell or run a program, per language. */
const SHELL_OUT =
  /\b(os\s*\.\s*(system|popen|exec\w*|spawn\w*|posix_spawn\w*)|subprocess|pty\s*\.\s*spawn|commands\s*\.\s*getoutput|child_process|exec(Sync|FileSync|File)?\s*\(|spawn(Sync)?\s*\(|system\s*\(|popen|shell_exec|passthru|proc_open|IO\s*\.\s*popen|Open3|Kernel\s*\.\s*(system|exec|spawn)|Deno\s*\.\s*(run|Command)|Bun\s*\.\s*spawn|getline|\$\()/;

/** String literals of inline code, plus lists of string literals joined as one command line. */
export function codeStrings(code: string): string[] {
  const out: string[] = [];
  const lit = /'''([\s\S]*?)'''|"""([\s\S]*?)"""|'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`/g;
  const unescape = (s: string) => s.replace(/\\(.)/g, (_m, c: string) => ({ n: "\n", t: "\t" })[c] ?? c);
  for (const m of code.matchAll(lit)) {
    const s = m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5] ?? "";
    out.push(unescape(s));
  }
  // ['sudo', 'id'] / ("rm", "-rf", "/") → one command line
  const list = /[[(]\s*((?:(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\s*,\s*)+(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\s*,?\s*)[\])]/g;
  for (const m of code.matchAll(list)) {
    const items = [...m[1]!.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"/g)].map((x) => unescape(x[1] ?? x[2] ?? ""));
    out.push(items.map((s) => `'${s.replace(/'/g, "'\\''")}'`).join(" "));
  }
  // 'git', ['push'] (execFile/spawn: program, then its arguments) → one command line
  const progThenList = /(?:'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)")\s*,\s*\[\s*((?:(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\s*,?\s*)*)\]/g;
  for (const m of code.matchAll(progThenList)) {
    const items = [m[1] ?? m[2] ?? "", ...[...m[3]!.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"/g)].map((x) => x[1] ?? x[2] ?? "")].map(unescape);
    out.push(items.map((s) => `'${s.replace(/'/g, "'\\''")}'`).join(" "));
  }
  return out;
}

/** True when inline code can run a program through a shell (so its strings are worth checking as commands). */
export function shellsOut(code: string, kind: InterpreterKind | "awk"): boolean {
  if (SHELL_OUT.test(code)) return true;
  if ((kind === "perl" || kind === "ruby" || kind === "php") && (code.includes("`") || /\bqx\s*[({[/|!]/.test(code) || /%x[({[]/.test(code))) return true;
  if (kind === "awk" && /\|/.test(code)) return true;
  return false;
}
