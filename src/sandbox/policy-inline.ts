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
import { type InterpreterKind, shellsOut } from "./policy-programs.js";

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
