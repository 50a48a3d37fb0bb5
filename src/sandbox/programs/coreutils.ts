/**
 * Coreutils and other file and text tools. Most only read or print and are allowed as they are;
 * those that create, change or delete files say which of their arguments they write (judged by
 * path: outside the workspace, protected, computed at run time), and a few have rules of their own
 * (`rm --no-preserve-root`, setuid modes, links pointing outside).
 */
import fs from "node:fs";
import path from "node:path";
import type { CommandPart, ShellWord } from "../command-parts.js";
import { literalWord } from "../command-parts.js";
import type { PathJudge, WriteKind } from "../policy-paths.js";
import { getopt, hasLong, type OptionTable, outputWrites, val } from "./options.js";
import { allowed, type CheckEnv, type Finding, finding, type ProgramSpec, q, type WriteTarget } from "./types.js";

const each = (ws: ShellWord[], kind: WriteKind = {}, rm = false): WriteTarget[] => ws.map((word) => ({ word, kind, rm }));
const ok: ProgramSpec["decide"] = (p) => allowed(p);

/** A program that writes the operands left after parsing `options`. */
function writesOperands(names: string[], options: OptionTable, decide: ProgramSpec["decide"] = ok): ProgramSpec {
  return { names, options, decide, writes: (p) => each(getopt(p.words, 1, options).operands) };
}

const deleter = (names: string[], kind: WriteKind, decide: ProgramSpec["decide"] = ok): ProgramSpec => ({
  names,
  decide,
  writes: (p) => each(getopt(p.words, 1).operands, kind, true),
});

const CP: OptionTable = { short: "tS", long: ["target-directory", "suffix", "backup", "reflink", "sparse", "preserve", "no-preserve", "context"] };
const LN: OptionTable = { short: "tS", long: ["target-directory", "suffix", "backup"] };

/** cp and mv: the destination, and where each source lands in it; mv also removes its sources. */
function copyWrites(p: CommandPart, name: "cp" | "mv"): WriteTarget[] {
  const out: WriteTarget[] = [];
  const o = getopt(p.words, 1, CP);
  const recursive = name === "mv" || o.short.has("r") || o.short.has("R") || o.short.has("a") || hasLong(o, "recursive", "archive");
  const target = val(o, "t", "target-directory")[0];
  const ops = [...o.operands];
  const dest = target ?? (o.short.has("T") || hasLong(o, "no-target-directory") ? ops.pop() : ops.length > 1 ? ops.pop() : undefined);
  if (name === "mv") out.push(...each(ops, { delete: true, recursive: true }, false));
  if (dest) out.push({ word: dest, kind: {}, sources: ops, recursiveInto: recursive });
  return out;
}

function lnWrites(p: CommandPart): WriteTarget[] {
  const o = getopt(p.words, 1, LN);
  const target = val(o, "t", "target-directory")[0];
  const ops = o.operands;
  if (target) return [{ word: target, kind: {}, sources: ops }];
  if (ops.length === 1)
    return [
      { word: { ...ops[0]!, candidates: ops[0]!.candidates?.map((c) => ({ text: c.text.replace(/.*\//, "") || ".", glob: c.glob })) ?? null }, kind: {} },
    ];
  if (ops.length === 2 && !o.short.has("T") && !hasLong(o, "no-target-directory")) return [{ word: ops[1]!, kind: {}, sources: [ops[0]!] }];
  if (ops.length >= 2) return [{ word: ops[ops.length - 1]!, kind: {}, sources: ops.slice(0, -1) }];
  return [];
}

/** Links pointing outside the workspace or into a protected path. */
function lnCheck(p: CommandPart, env: CheckEnv): Finding[] {
  const judge = env.judge;
  const opts = getopt(p.words, 1, LN);
  const symbolic = opts.short.has("s") || opts.long.some((l) => "symbolic".startsWith(l) && l.length >= 3);
  const targetDir = opts.values.get("t")?.[0] ?? opts.values.get("target-directory")?.[0];
  const ops = opts.operands;
  const targets = targetDir ? ops : ops.length === 1 ? ops : ops.slice(0, -1);
  const linkDir = targetDir ?? (ops.length >= 2 ? ops[ops.length - 1]! : null);
  const out: Finding[] = [];
  for (const t of targets) {
    if (!t.candidates) {
      out.push(
        finding(
          "ask",
          symbolic ? "ln.symlink-outside" : "ln.hardlink-outside",
          `${q(p.text)} links to a path computed at run time; it needs the user's approval`,
        ),
      );
      continue;
    }
    for (const c of t.candidates) {
      // A symlink's target is read relative to the link's directory; a hard link's relative to the cwd.
      const bases = c.text.startsWith("/") ? ["/"] : symbolic && linkDir?.candidates ? linkBases(linkDir, p.cwd, judge) : (p.cwd ?? []);
      for (const b of bases) {
        const abs = judge.physical(b, c.text);
        const cls = judge.classifyAbs(abs, {});
        if (cls.kind === "protected") {
          out.push(
            finding(
              "deny",
              symbolic ? "ln.symlink-outside" : "ln.hardlink-outside",
              `${q(p.text)} links to ${cls.rel} (${cls.what}); a write through the link would change it`,
            ),
          );
        } else if (!judge.isInside(abs)) {
          out.push(
            symbolic
              ? finding(
                  "ask",
                  "ln.symlink-outside",
                  `${q(p.text)} creates a symlink to ${abs}, outside the workspace; writes through it would land outside. It needs the user's approval`,
                )
              : finding(
                  "deny",
                  "ln.hardlink-outside",
                  `${q(p.text)} hard-links ${abs}, a file outside the workspace; writes to the link would change it. Copy the file instead`,
                ),
          );
        }
      }
    }
  }
  return out;
}

/** Directories a symlink created by `ln` may live in: the destination (when a directory) or its parent. */
function linkBases(linkDir: ShellWord, cwds: string[] | null, judge: PathJudge): string[] {
  const out: string[] = [];
  for (const c of linkDir.candidates ?? []) {
    const bases = c.text.startsWith("/") ? ["/"] : (cwds ?? []);
    for (const b of bases) {
      const abs = judge.physical(b, c.text);
      let isDir = c.text.endsWith("/");
      try {
        isDir ||= fs.statSync(abs).isDirectory();
      } catch {
        // not there yet: the link is created under that name
      }
      out.push(isDir ? abs : path.dirname(abs));
    }
  }
  return out;
}

const MODE: OptionTable = { long: ["reference", "from"] };

function modeWrites(p: CommandPart, name: string): WriteTarget[] {
  const o = getopt(p.words, 1, MODE);
  const recursive = o.short.has("R") || hasLong(o, "recursive");
  // chmod -x / chmod -w look like options but are modes.
  const modeLike = [...o.short].every((c) => "rwxXstugoa".includes(c)) && !o.short.has("R") && name === "chmod" && o.operands.length === 1;
  const ops = val(o, "reference").length || modeLike ? o.operands : o.operands.slice(1);
  return each(ops, { recursive });
}

function chmodCheck(p: CommandPart): Finding[] {
  const opts = getopt(p.words, 1, MODE);
  const mode = opts.values.get("reference") ? null : (opts.operands[0]?.text ?? null);
  const modes = [mode, ...p.argv.slice(1).filter((a) => /^-[rwxXstugoa]*s/.test(a) && !/^-[a-zA-Z]*R/.test(a))];
  for (const m of modes) {
    if (!m) continue;
    const numeric = /^[0-7]{4,}$/.test(m) && (parseInt(m, 8) & 0o6000) !== 0;
    const symbolic = /[+=][rwxXtugo]*s/.test(m);
    if (numeric || symbolic) {
      return [
        finding(
          "deny",
          "chmod.setuid",
          `${q(p.text)} sets a setuid/setgid bit, which makes a program run with another user's rights; use plain modes like 755 or +x`,
        ),
      ];
    }
  }
  return [];
}

const SPLIT: OptionTable = {
  short: "abCdflnt",
  long: [
    "prefix",
    "suffix-length",
    "bytes",
    "line-bytes",
    "lines",
    "number",
    "additional-suffix",
    "numeric-suffixes",
    "hex-suffixes",
    "separator",
    "suffix-format",
    "digits",
  ],
};

/** Read, compute or print only (or write only where a redirection says, judged by path). */
const READ_ONLY = [
  "ls",
  "cat",
  "head",
  "tail",
  "wc",
  "grep",
  "egrep",
  "fgrep",
  "rg",
  "ag",
  "cut",
  "tr",
  "diff",
  "cmp",
  "comm",
  "fd",
  "basename",
  "dirname",
  "realpath",
  "readlink",
  "jq",
  "file",
  "stat",
  "du",
  "df",
  "date",
  "nl",
  "paste",
  "join",
  "fold",
  "fmt",
  "column",
  "expand",
  "unexpand",
  "rev",
  "tac",
  "seq",
  "shuf",
  "od",
  "hexdump",
  "xxd",
  "strings",
  "md5sum",
  "sha1sum",
  "sha224sum",
  "sha256sum",
  "sha384sum",
  "sha512sum",
  "b2sum",
  "cksum",
  "base64",
  "base32",
  "tree",
  "less",
  "more",
  "which",
  "whereis",
  "sleep",
  "yes",
  "iconv",
  "diff3",
  "sdiff",
  "envsubst",
  "numfmt",
  "tsort",
  "look",
  "man",
  // system information
  "id",
  "whoami",
  "groups",
  "uname",
  "hostname",
  "nproc",
  "free",
  "uptime",
  "printenv",
  "locale",
  "tty",
  "ps",
  "pgrep",
  "clear",
  "tput",
  "getconf",
  "arch",
  "lscpu",
];

export const COREUTILS_SPECS: ProgramSpec[] = [
  { names: READ_ONLY, decide: ok },
  {
    names: ["rm"],
    decide: ok,
    writes(p) {
      const o = getopt(p.words, 1);
      const recursive = o.short.has("r") || o.short.has("R") || hasLong(o, "recursive");
      return each(o.operands, { delete: true, recursive }, true);
    },
    check: (p) =>
      p.argv.some((a) => a.startsWith("--no-pres"))
        ? [finding("deny", "rm.no-preserve-root", `${q(p.text)} disables rm's protection of /; remove only paths inside the workspace`)]
        : [],
  },
  // rimraf (the npm package) deletes recursively, like rm -rf.
  deleter(["rimraf"], { delete: true, recursive: true }),
  deleter(["rmdir", "unlink"], { delete: true }),
  deleter(["shred"], { delete: true }, () => null),
  { names: ["cp"], options: CP, decide: ok, writes: (p) => copyWrites(p, "cp") },
  { names: ["mv"], options: CP, decide: ok, writes: (p) => copyWrites(p, "mv") },
  { names: ["ln"], options: LN, decide: ok, writes: lnWrites, check: lnCheck },
  writesOperands(["touch"], { short: "rdt", long: ["reference", "date", "time"] }),
  writesOperands(["mkdir", "mkfifo"], { short: "mZ", long: ["mode", "context"] }),
  writesOperands(["truncate"], { short: "sr", long: ["size", "reference"] }),
  writesOperands(["tee"], { long: ["output-error"] }),
  { names: ["chmod"], options: MODE, decide: ok, writes: (p) => modeWrites(p, "chmod"), check: chmodCheck },
  { names: ["chown", "chgrp"], options: MODE, writes: (p) => modeWrites(p, p.program) },
  {
    names: ["mktemp"],
    options: { short: "p", long: ["tmpdir", "suffix"] },
    decide: ok,
    writes(p) {
      const o = getopt(p.words, 1, { short: "p", long: ["tmpdir", "suffix"] });
      const out: WriteTarget[] = [];
      if (!o.short.has("t") && !hasLong(o, "tmpdir") && !val(o, "p").length) out.push(...each(o.operands));
      out.push(...each(val(o, "p", "tmpdir")));
      return out;
    },
  },
  {
    names: ["dd"],
    decide: ok,
    writes(p) {
      const out: WriteTarget[] = [];
      for (const x of p.words.slice(1)) {
        if (x.text.startsWith("of=")) {
          const t = x.text.slice(3);
          out.push({
            word: { ...x, text: t, raw: t, candidates: x.candidates?.map((c) => ({ text: c.text.replace(/^of=/, ""), glob: c.glob })) ?? null },
            kind: {},
          });
        }
      }
      return out;
    },
  },
  {
    names: ["uniq"],
    options: { short: "fsw", long: ["skip-fields", "skip-chars", "check-chars", "group", "all-repeated"] },
    decide: ok,
    writes(p) {
      const o = getopt(p.words, 1, { short: "fsw", long: ["skip-fields", "skip-chars", "check-chars", "group", "all-repeated"] });
      return o.operands[1] ? each([o.operands[1]]) : [];
    },
  },
  {
    names: ["split", "csplit"],
    options: SPLIT,
    decide: ok,
    writes(p) {
      const name = p.program === "split" ? "split" : "csplit";
      const o = getopt(p.words, 1, SPLIT);
      const prefix = name === "split" ? o.operands[1] : val(o, "f", "prefix")[0];
      return each(prefix ? [prefix] : [literalWord(name === "split" ? "x" : "xx")]);
    },
  },
  {
    names: ["sort"],
    options: { short: "o", long: ["output"] },
    decide: ok,
    writes: (p) => outputWrites(p, { short: "o", long: ["output"] }),
  },
];
