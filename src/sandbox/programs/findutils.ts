/**
 * findutils: `find` (its start points, `-delete`, the files `-fprint` writes, and the commands
 * `-exec`/`-execdir`/`-ok` run with each match) and `xargs` (the command it runs with its input).
 */
import type { PathCandidate, ShellWord } from "../command-parts.js";
import { dynamicWord, literalWord } from "../command-parts.js";
import { takesValue } from "./options.js";
import { allowed, type FollowApi, type ProgramSpec, type WriteTarget } from "./types.js";

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
  "-path",
  "-ipath",
  "-wholename",
  "-iwholename",
  "-regex",
  "-iregex",
  "-newer",
  "-anewer",
  "-cnewer",
  "-perm",
  "-type",
  "-xtype",
  "-user",
  "-group",
  "-uid",
  "-gid",
  "-size",
  "-mtime",
  "-mmin",
  "-atime",
  "-amin",
  "-ctime",
  "-cmin",
  "-links",
  "-inum",
  "-samefile",
  "-maxdepth",
  "-mindepth",
  "-fstype",
  "-lname",
  "-ilname",
  "-used",
  "-printf",
  "-regextype",
  "-context",
  "-files0-from",
  "-newermt",
  "-newerct",
  "-newerat",
  "-newermm",
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

/** `find -exec`: each command runs with `{}` standing for a path found below the start points. */
function findRuns(api: FollowApi): void {
  const f = analyzeFind(api.words);
  if (f.problem) {
    api.problem("parse.error", f.problem);
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
    api.part.wrapper = true;
    api.run(ws, e.dir ? "find -execdir" : "find -exec", { stdin: null, ...(e.dir ? { cwd: null } : {}) });
  }
}

const XARGS = { short: "ILnPsdEa", long: ["max-args", "max-lines", "max-procs", "max-chars", "delimiter", "eof", "arg-file", "process-slot-var"] };

/** xargs: its command (echo by default) with the input as arguments, or in place of the -I string. */
function xargsRuns(api: FollowApi): void {
  const { words } = api;
  let replace: string | null = null;
  let i = 1;
  for (; i < words.length; i++) {
    const w = words[i]!;
    if (!w.literal) {
      api.problem("parse.dynamic-program", "the options of `xargs` are computed at run time, so the command it runs cannot be known");
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
    if (takesValue(t, XARGS)) i++;
  }
  const inputWord = dynamicWord("(xargs input)");
  let ws = words.slice(i);
  if (ws.length === 0) ws = [literalWord("echo")];
  if (replace) ws = ws.map((w) => (w.text.includes(replace!) ? { ...inputWord, raw: w.raw, text: w.text } : w));
  else ws = [...ws, inputWord];
  api.part.wrapper = true;
  api.run(ws, "xargs", { stdin: null });
}

export const FINDUTILS_SPECS: ProgramSpec[] = [
  {
    names: ["find"],
    decide: (p) => allowed(p),
    runs: findRuns,
    writes(p) {
      const fa = analyzeFind(p.words);
      const out: WriteTarget[] = fa.writes.map((word) => ({ word, kind: {}, rm: false }));
      if (fa.delete) {
        for (const s of fa.starts)
          out.push({ word: { ...s, candidates: null, below: { bases: s.candidates, names: fa.names } }, kind: { delete: true }, rm: true });
      }
      return out;
    },
  },
  { names: ["xargs"], options: XARGS, decide: (p) => allowed(p), runs: xargsRuns },
];
