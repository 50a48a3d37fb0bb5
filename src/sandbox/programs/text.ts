/**
 * Text editors driven by a script: sed and awk. What they write is in their options (`sed -i`,
 * awk's inplace extension) and in the script itself (sed `w FILE`, awk `print > "file"`); what they
 * run is in the script too (sed `e`, `s///e`; awk `system()` and pipes), checked as command lines.
 */
import type { CommandPart, ShellWord } from "../command-parts.js";
import { getopt, hasLong, val } from "./options.js";
import { allowed, type Finding, finding, type ProgramSpec, q, type WriteTarget } from "./types.js";

const SED = { short: "efl", long: ["expression", "file", "line-length"] };
const AWK = { short: "fvFilEWe", long: ["file", "assign", "field-separator", "include", "load", "source", "exec"] };

/** The scripts a sed command runs: -e values, or its first operand. */
export function sedScripts(p: CommandPart): ShellWord[] {
  const o = getopt(p.words, 1, SED);
  const e = val(o, "e", "expression");
  if (e.length || val(o, "f", "file").length) return e;
  return o.operands.slice(0, 1);
}

/** What a sed script does beyond editing text: files it writes (`w`), commands it runs (`e`). */
export function scanSed(script: string): { writes: string[]; exec: string[]; execPatternSpace: boolean; unknown: boolean } {
  const out = { writes: [] as string[], exec: [] as string[], execPatternSpace: false, unknown: false };
  let i = 0;
  const s = script;
  const toEol = () => {
    const j = s.indexOf("\n", i);
    const r = s.slice(i, j < 0 ? s.length : j);
    i = j < 0 ? s.length : j + 1;
    return r;
  };
  const skipRe = (delim: string) => {
    for (; i < s.length; i++) {
      if (s[i] === "\\") i++;
      else if (s[i] === delim) {
        i++;
        return true;
      } else if (s[i] === "\n") return false;
    }
    return false;
  };
  const address = () => {
    if (/[0-9]/.test(s[i] ?? "")) while (/[0-9~]/.test(s[i] ?? "")) i++;
    else if (s[i] === "$") i++;
    else if (s[i] === "/") {
      i++;
      skipRe("/");
      while (/[IM]/.test(s[i] ?? "")) i++;
    } else if (s[i] === "\\") {
      const d = s[i + 1] ?? "";
      i += 2;
      skipRe(d);
      while (/[IM]/.test(s[i] ?? "")) i++;
    } else return false;
    return true;
  };
  while (i < s.length) {
    while (i < s.length && /[\s;]/.test(s[i]!)) i++;
    if (i >= s.length) break;
    if (address()) {
      while (s[i] === " ") i++;
      if (s[i] === ",") {
        i++;
        while (s[i] === " ") i++;
        if (s[i] === "+" || s[i] === "~") i++;
        address();
      }
    }
    while (s[i] === " " || s[i] === "!") i++;
    const c = s[i++];
    if (c === undefined) break;
    switch (c) {
      case "{":
      case "}":
      case "=":
      case "d":
      case "D":
      case "g":
      case "G":
      case "h":
      case "H":
      case "n":
      case "N":
      case "p":
      case "P":
      case "x":
      case "z":
      case "F":
        break;
      case "#":
      case ":":
        toEol();
        break;
      case "a":
      case "i":
      case "c": {
        // Text up to an unescaped end of line (GNU one-liner or classic `a\` form).
        for (; i < s.length; i++) {
          if (s[i] === "\\") i++;
          else if (s[i] === "\n") break;
        }
        break;
      }
      case "b":
      case "t":
      case "T":
      case "l":
      case "L":
      case "q":
      case "Q":
      case "v":
        while (i < s.length && s[i] !== ";" && s[i] !== "\n" && s[i] !== "}") i++;
        break;
      case "r":
      case "R":
        toEol();
        break;
      case "w":
      case "W":
        out.writes.push(toEol().trim());
        break;
      case "e": {
        const cmd = toEol().trim();
        if (cmd) out.exec.push(cmd);
        else out.execPatternSpace = true;
        break;
      }
      case "s":
      case "y": {
        const d = s[i++];
        if (d === undefined || d === "\n" || d === "\\") {
          out.unknown = true;
          return out;
        }
        if (!skipRe(d) || !skipRe(d)) {
          out.unknown = true;
          return out;
        }
        if (c === "s") {
          while (i < s.length && /[gpiImMe0-9w]/.test(s[i]!)) {
            const flag = s[i++]!;
            if (flag === "e") out.execPatternSpace = true;
            if (flag === "w") {
              out.writes.push(toEol().trim());
              break;
            }
          }
        }
        break;
      }
      default:
        out.unknown = true;
        return out;
    }
  }
  return out;
}

export function awkCall(p: CommandPart): { program: ShellWord | null; files: ShellWord[]; inplace: boolean } {
  const o = getopt(p.words, 1, AWK);
  const inplace = val(o, "i", "include").some((x) => x.text === "inplace" || x.text === "inplace.awk");
  const src = val(o, "source", "e")[0];
  if (src) return { program: src, files: o.operands, inplace };
  if (val(o, "f", "file", "E", "exec").length) return { program: null, files: o.operands, inplace };
  return { program: o.operands[0] ?? null, files: o.operands.slice(1), inplace };
}

const each = (ws: ShellWord[]): WriteTarget[] => ws.map((word) => ({ word, kind: {}, rm: false }));

export const TEXT_SPECS: ProgramSpec[] = [
  {
    names: ["sed"],
    options: SED,
    decide: (p) => allowed(p),
    writes(p) {
      const out: WriteTarget[] = [];
      const o = getopt(p.words, 1, SED);
      if (o.short.has("i") || hasLong(o, "in-place")) {
        const files = val(o, "e", "expression", "f", "file").length ? o.operands : o.operands.slice(1);
        out.push(...each(files));
      }
      for (const s of sedScripts(p))
        for (const file of scanSed(s.text).writes)
          out.push({ word: { ...s, text: file, raw: file, literal: s.literal, candidates: s.literal ? [{ text: file, glob: false }] : null }, kind: {} });
      return out;
    },
    check(p, env) {
      const out: Finding[] = [];
      for (const s of sedScripts(p)) {
        if (!s.literal) continue;
        const r = scanSed(s.text);
        for (const c of r.exec) {
          const d = env.nestedDenials(c, p.cwd);
          if (d.length)
            out.push(finding("deny", "interp.inline-denied", `the sed script of ${q(p.text)} runs ${q(c)}, which is refused (${d[0]!.rule}: ${d[0]!.reason})`));
        }
        const fallback = r.unknown && /(^|[;\n{}])\s*[0-9$,/!\\]*\s*e(\s|$|;)|\/e\b|\/[gpiImM0-9]*e[gpiImM0-9]*(\s|$|;|})/.test(s.text);
        if (r.exec.length || r.execPatternSpace || fallback) {
          out.push(
            finding("ask", "sed.exec", `the sed script of ${q(p.text)} runs shell commands (the \`e\` command or s///e flag); it needs the user's approval`),
          );
        }
      }
      return out;
    },
  },
  {
    names: ["awk", "gawk", "mawk", "nawk"],
    options: AWK,
    decide: (p) => allowed(p),
    writes(p) {
      const out: WriteTarget[] = [];
      const a = awkCall(p);
      if (a.inplace) out.push(...each(a.files));
      if (a.program?.literal) {
        for (const m of a.program.text.matchAll(/>>?\s*"([^"\\]+)"/g)) {
          if (m[1] === "/dev/stderr" || m[1] === "/dev/stdout") continue;
          out.push({ word: { ...a.program, text: m[1]!, raw: m[1]!, candidates: [{ text: m[1]!, glob: false }] }, kind: {} });
        }
      }
      return out;
    },
    check(p, env) {
      const a = awkCall(p);
      return a.program?.literal ? env.inlineFindings(p, "awk", a.program.text) : [];
    },
  },
];
