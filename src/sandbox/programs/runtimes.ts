/**
 * Language runtimes: how an interpreter gets its code (`-c`/`-e`, a script, a module, standard
 * input), for the policy's checks of inline code and scripts; python3 (allowed, except `-m pip`,
 * judged as pip; `-m venv DIR` writes DIR) and node (allowed).
 */
import type { CommandPart, ShellWord } from "../command-parts.js";
import { SHELLS } from "../command-parts.js";
import { getopt, subcommand } from "./options.js";
import { pipSub } from "./packages.js";
import { normalizeProgram } from "./names.js";
import { allowed, type Finding, type ProgramSpec, type RuleEnv, type WriteTarget } from "./types.js";

/** Interpreters that run code from `-c`/`-e`, a script file, or standard input. */
export type InterpreterKind = "shell" | "python" | "node" | "perl" | "ruby" | "php";
export function interpreterKind(program: string): InterpreterKind | null {
  const p = normalizeProgram(program);
  if (SHELLS.has(p)) return "shell";
  if (p === "python" || p === "python3" || p === "pypy" || p === "pypy3") return "python";
  // bun, deno, tsx and ts-node take node's -e/-p/--eval/--print (deno: `deno eval CODE`).
  if (p === "node" || p === "nodejs" || p === "bun" || p === "deno" || p === "tsx" || p === "ts-node") return "node";
  if (p === "perl") return "perl";
  if (p === "ruby") return "ruby";
  if (p === "php") return "php";
  return null;
}

/** How an interpreter invocation gets its code. */
export interface InterpreterCall {
  inline: ShellWord[];
  /** The script file, when one is given. */
  script: ShellWord | null;
  /** Reads its program from standard input. */
  stdin: boolean;
  /** `python3 -m module`. */
  module: string | null;
}

export function interpreterCall(p: CommandPart, kind: InterpreterKind): InterpreterCall {
  const w = p.words;
  const out: InterpreterCall = { inline: [], script: null, stdin: false, module: null };
  const inlineFlags: Record<InterpreterKind, string> = { shell: "c", python: "c", node: "ep", perl: "eE", ruby: "e", php: "rR" };
  const argFlags: Record<InterpreterKind, string> = { shell: "oO", python: "mWX", node: "rC", perl: "IMmx", ruby: "IrCEe", php: "cdfzBE" };
  let i = 1;
  if (kind === "node" && normalizeProgram(p.program) === "deno") {
    // Only `deno eval [flags] CODE` runs inline code; deno's other subcommands take files or tasks.
    if (w[1]?.text !== "eval") {
      out.script = w[1] ?? null;
      return out;
    }
    const code = w.slice(2).find((x) => !x.literal || !x.text.startsWith("-"));
    if (code) out.inline.push(code);
    return out;
  }
  for (; i < w.length; i++) {
    const t = w[i]!.text;
    if (!w[i]!.literal) {
      out.script = w[i]!;
      return out;
    }
    if (t === "-" || t === "/dev/stdin") {
      out.stdin = true;
      return out;
    }
    if (t === "--") {
      out.script = w[i + 1] ?? null;
      if (!out.script) out.stdin = true;
      return out;
    }
    if (t.startsWith("--")) {
      const [name, value] = t.split(/=(.*)/s) as [string, string | undefined];
      if (kind === "node" && (name === "--eval" || name === "--print")) {
        const code = value !== undefined ? { ...w[i]!, text: value, raw: value } : w[++i];
        if (code) out.inline.push(code);
        continue;
      }
      if (
        kind === "node" &&
        value === undefined &&
        ["--require", "--import", "--loader", "--experimental-loader", "--input-type", "--conditions", "--env-file", "--title"].includes(name)
      )
        i++;
      if (kind === "shell" && ["--rcfile", "--init-file"].includes(name)) i++;
      continue;
    }
    if (t.startsWith("-") && t.length > 1) {
      const letters = t.slice(1);
      for (let k = 0; k < letters.length; k++) {
        const c = letters[k]!;
        if (inlineFlags[kind].includes(c)) {
          const rest = letters.slice(k + 1);
          // node never takes its code attached (`-e"x"` is a bad option, `-pe` is -p -e): always the next word.
          const code = rest && kind !== "shell" && kind !== "node" ? { ...w[i]!, text: rest, raw: rest } : w[++i];
          if (kind === "python" && c === "c") {
            if (code) out.inline.push(code);
            return out;
          }
          if (code) out.inline.push(code);
          break;
        }
        if (kind === "python" && c === "m") {
          const mod = letters.slice(k + 1) || w[++i]?.text || "";
          out.module = mod;
          return out;
        }
        if (argFlags[kind].includes(c)) {
          if (!letters.slice(k + 1)) i++;
          break;
        }
        if (kind === "shell" && c === "s") out.stdin = true;
      }
      if (out.inline.length && kind !== "node" && kind !== "perl" && kind !== "ruby") return out;
      continue;
    }
    if (out.inline.length) return out;
    out.script = w[i]!;
    return out;
  }
  if (!out.inline.length && !out.module) out.stdin = true;
  return out;
}

function decidePython(p: CommandPart, env: RuleEnv): Finding {
  const call = interpreterCall(p, "python");
  if (call.module === "pip" || call.module === "ensurepip") {
    const i = p.words.findIndex((w) => w.text === "pip" || w.text === "-mpip" || w.text === "ensurepip" || w.text === "-mensurepip");
    return pipSub(p, env, call.module === "ensurepip" ? "install" : (subcommand(p.words, i + 1)?.word.text ?? null));
  }
  return allowed(p);
}

export const RUNTIME_SPECS: ProgramSpec[] = [
  {
    names: ["python", "python3"],
    decide: decidePython,
    writes(p): WriteTarget[] {
      const call = interpreterCall(p, "python");
      if (call.module !== "venv" && call.module !== "virtualenv") return [];
      const i = p.words.findIndex((x) => x.text === "venv" || x.text === "-mvenv" || x.text === "virtualenv" || x.text === "-mvirtualenv");
      return getopt(p.words, i + 1, { long: ["prompt"] }).operands.map((word: ShellWord) => ({ word, kind: {}, rm: false }));
    },
  },
  { names: ["node", "nodejs", "tsx", "ts-node", "corepack"], decide: (p) => allowed(p) },
];
