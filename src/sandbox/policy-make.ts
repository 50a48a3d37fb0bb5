/**
 * `make` runs the recipes of whatever makefiles it reads, as shell commands the policy never sees.
 * A Makefile in the workspace is the workspace's own code, like `./scripts/x.sh` (allowed: the
 * sandbox contains it). Makefile text handed over on the command line (`--eval`, `-E`), through
 * standard input (`-f -`, `-f /dev/stdin`, `/dev/fd/N`), from a file outside the workspace
 * (`-f /tmp/x.mk`, `-C /elsewhere`), or through MAKEFLAGS/MAKEFILES is not: it is code arriving by a
 * side door, so it needs the user's approval (`ask`, like `bash /tmp/x.sh` and `sh < file`). Not
 * `deny`: nothing says it is harmful, only that it cannot be checked, and an unattended run treats
 * `ask` as a refusal anyway.
 */
import type { CommandPart, ShellWord } from "./command-parts.js";
import { getopt } from "./programs/options.js";
import type { Finding } from "./programs/types.js";

/** How the policy resolves and places paths (PathJudge's methods). */
export interface MakeJudge {
  physical(base: string, rel: string): string;
  isInside(abs: string): boolean;
}

const q = (s: string) => `\`${s.length > 80 ? `${s.slice(0, 77)}…` : s}\``;
const ask = (reason: string): Finding => ({ decision: "ask", rule: "make.makefile", reason });

const STDIN = /^(-|\/dev\/stdin|\/dev\/fd\/\d+|\/proc\/self\/fd\/\d+|\/proc\/\d+\/fd\/\d+)$/;

/** Findings for one `make`/`gmake` command: inline or stdin makefile text, makefiles or -C outside the workspace. */
export function makeFindings(p: CommandPart, judge: MakeJudge): Finding[] {
  const o = getopt(p.words, 1, {
    // Only options that take a separate value: -j/-l/-O take theirs attached or not at all.
    short: "CfIoWE",
    long: ["file", "makefile", "directory", "eval", "include-dir", "old-file", "assume-old", "what-if", "new-file", "assume-new"],
  });
  const out: Finding[] = [];
  const get = (...keys: string[]) => keys.flatMap((k) => o.values.get(k) ?? []);

  const inline = get("E", "eval");
  if (inline.length)
    out.push(
      ask(
        `${q(p.text)} gives make makefile text on the command line (${q(inline[0]!.raw)}), whose recipes run commands the policy cannot check; put the rules in a Makefile in the workspace`,
      ),
    );

  for (const a of p.assignments) {
    if (a.name === "MAKEFILES" && a.value.text.trim() !== "") {
      out.push(ask(`${q(p.text)} makes make read other makefiles first (MAKEFILES=${a.value.raw}), whose recipes the policy cannot check`));
    }
    if (/^(GNU)?MAKEFLAGS$|^MFLAGS$/.test(a.name) && makeflagsReadCode(a.value.text)) {
      out.push(
        ask(`${q(p.text)} passes make options through ${a.name} that read makefiles or makefile text (${q(a.value.raw)}), which the policy cannot check`),
      );
    }
  }

  // make changes directory (-C, in order) before it reads any makefile.
  let bases: string[] | null = p.cwd;
  for (const d of get("C", "directory")) {
    const next = placeAll(d, bases, judge);
    if (next === null) {
      out.push(ask(`${q(p.text)} runs make in a directory computed at run time (${q(d.raw)}); its Makefile cannot be checked`));
      bases = null;
      break;
    }
    if (next.some((abs) => !judge.isInside(abs))) {
      out.push(ask(`${q(p.text)} runs the Makefile of ${q(d.raw)}, outside the workspace; it needs the user's approval`));
    }
    bases = next;
  }

  for (const f of get("f", "file", "makefile")) {
    if (f.literal && STDIN.test(f.text)) {
      out.push(
        ask(
          `${q(p.text)} reads its makefile from standard input (${q(f.raw)}), whose recipes the policy cannot see; put the rules in a Makefile in the workspace`,
        ),
      );
      continue;
    }
    const at = placeAll(f, bases, judge);
    if (at === null || f.substitutions.length) {
      out.push(ask(`${q(p.text)} reads a makefile whose path is computed at run time (${q(f.raw)}); it cannot be checked`));
    } else if (at.some((abs) => !judge.isInside(abs))) {
      out.push(ask(`${q(p.text)} reads the makefile ${q(f.raw)} from outside the workspace; its recipes run commands the policy cannot check`));
    }
  }
  return out;
}

/** Every place `w` can name, resolved against every base; null when not known before it runs. */
function placeAll(w: ShellWord, bases: string[] | null, judge: MakeJudge): string[] | null {
  if (!w.candidates || w.candidates.some((c) => c.glob)) return null;
  const out: string[] = [];
  for (const c of w.candidates) {
    const from = c.text.startsWith("/") ? ["/"] : bases;
    if (!from) return null;
    for (const b of from) out.push(judge.physical(b, c.text));
  }
  return out;
}

/** True when a MAKEFLAGS value holds options that read makefiles or makefile text (-f, -E, --eval, --file, -C). */
function makeflagsReadCode(value: string): boolean {
  const words = value.trim().split(/\s+/);
  // make's own MAKEFLAGS starts with the single-letter flags without a dash ("ks -- X=1").
  if (words[0] && /^[a-zA-Z]+$/.test(words[0]) && /[fEC]/.test(words[0])) return true;
  return words.some((w) => /^--(ev|fi|mak|di)/.test(w) || /^-[a-zA-Z]*[fEC]/.test(w));
}
