/**
 * Archivers and compressors. `tar` is the one with rules of its own: options that make it run other
 * programs (asked), extracting with absolute names (refused) or into the workspace root, where an
 * archive member could replace .git/ (asked); what it creates or extracts into is judged by path.
 * Compressors replace their operands unless they write to stdout or only list or test.
 */
import type { CommandPart, ShellWord } from "../command-parts.js";
import { literalWord } from "../command-parts.js";
import { getopt, hasLong } from "./options.js";
import { allowed, type Finding, finding, type ProgramSpec, q, type WriteTarget } from "./types.js";

/** Letters that take a value (old-style bundles `tar xzf a.tgz -C d` take theirs from the next words in order). */
const TAR = { short: "fCIFTXbgHKLNV" };

export interface TarCall {
  mode: "create" | "extract" | "list" | null;
  archive: ShellWord | null;
  directory: ShellWord | null;
  /** Options that run programs: --to-command, --checkpoint-action=exec, -I/--use-compress-program, --rsh-command, -F/--info-script. */
  runs: string[];
  absoluteNames: boolean;
}

export function tarCall(p: CommandPart): TarCall {
  const out: TarCall = { mode: null, archive: null, directory: null, runs: [], absoluteNames: false };
  const w = p.words;
  const withArg = TAR.short!;
  const letter = (c: string, next: () => ShellWord | undefined, attached: string | null) => {
    if (c === "c" || c === "r" || c === "u" || c === "A") out.mode = "create";
    else if (c === "x") out.mode = "extract";
    else if (c === "t") out.mode ??= "list";
    else if (c === "P") out.absoluteNames = true;
    if (!withArg.includes(c)) return false;
    const v = attached !== null ? literalWord(attached) : next();
    if (c === "f") out.archive = v ?? null;
    if (c === "C") out.directory = v ?? null;
    if (c === "I" || c === "F") out.runs.push(`-${c} ${v?.text ?? ""}`);
    return true;
  };
  for (let i = 1; i < w.length; i++) {
    const x = w[i]!;
    const t = x.text;
    if (!x.literal) continue;
    if (i === 1 && !t.startsWith("-")) {
      // Old-style bundled letters: `tar xzf a.tgz -C dir` (each letter taking a value takes the next word).
      for (const c of t) letter(c, withArg.includes(c) ? () => w[++i] : () => undefined, null);
      continue;
    }
    if (t.startsWith("--")) {
      const [name, value] = t.split(/=(.*)/s) as [string, string | undefined];
      const v = () => (value !== undefined ? literalWord(value) : w[++i]);
      if (name === "--create" || name === "--append" || name === "--update" || name === "--catenate" || name === "--concatenate") out.mode = "create";
      else if (name === "--extract" || name === "--get") out.mode = "extract";
      else if (name === "--list") out.mode ??= "list";
      else if (name === "--file") out.archive = v() ?? null;
      else if (name === "--directory") out.directory = v() ?? null;
      else if (name === "--absolute-names") out.absoluteNames = true;
      else if (["--to-command", "--use-compress-program", "--rsh-command", "--info-script", "--new-volume-script"].includes(name))
        out.runs.push(`${name}=${v()?.text ?? ""}`);
      else if (name === "--checkpoint-action" && /exec/.test(value ?? w[i + 1]?.text ?? "")) out.runs.push(`${name}=${value ?? ""}`);
      continue;
    }
    if (t.startsWith("-") && t.length > 1) {
      for (let k = 1; k < t.length; k++) {
        const c = t[k]!;
        if (withArg.includes(c)) {
          const rest = t.slice(k + 1);
          letter(c, () => w[++i], rest || null);
          break;
        }
        letter(c, () => undefined, null);
      }
    }
  }
  return out;
}

/** tar: the archive it creates, the directory it extracts into. */
const tarSpec: ProgramSpec = {
  names: ["tar"],
  options: TAR,
  decide: (p) => allowed(p),
  writes(p) {
    const t = tarCall(p);
    const out: WriteTarget[] = [];
    if (t.mode === "create" && t.archive && t.archive.text !== "-") out.push({ word: t.archive, kind: {}, rm: false });
    if (t.mode === "extract") out.push({ word: t.directory ?? literalWord("."), kind: {} });
    return out;
  },
  check(p, env) {
    const out: Finding[] = [];
    const t = tarCall(p);
    if (t.runs.length) out.push(finding("ask", "tar.exec", `${q(p.text)} makes tar run another program (${t.runs.join(", ")}); it needs the user's approval`));
    if (t.mode === "extract") {
      if (t.absoluteNames)
        out.push(
          finding(
            "deny",
            "tar.absolute-names",
            `${q(p.text)} extracts members with absolute paths, which can write anywhere; extract without -P/--absolute-names`,
          ),
        );
      const dir = t.directory ?? null;
      const isRoot = dir ? env.isWorkspaceRoot(dir, p.cwd) : (p.cwd ?? [env.judge.workspace]).some((c) => env.judge.physical("/", c) === env.judge.workspace);
      if (isRoot) {
        out.push(
          finding(
            "ask",
            "tar.extract-protected",
            `${q(p.text)} extracts into the workspace root, where archive members could replace .git/ or .ledgerloop/; extract into a subdirectory with -C, or it needs the user's approval`,
          ),
        );
      }
    }
    return out;
  },
};

const COMPRESS = { short: "S", long: ["suffix"] };

export const ARCHIVER_SPECS: ProgramSpec[] = [
  tarSpec,
  {
    names: ["gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd"],
    options: COMPRESS,
    decide: (p) => allowed(p),
    writes(p) {
      const o = getopt(p.words, 1, COMPRESS);
      if (o.short.has("c") || o.short.has("l") || o.short.has("t") || hasLong(o, "stdout", "to-stdout", "list", "test")) return [];
      return o.operands.map((word): WriteTarget => ({ word, kind: {}, rm: false }));
    },
  },
  { names: ["zcat", "bzcat", "xzcat"], decide: (p) => allowed(p) },
];
