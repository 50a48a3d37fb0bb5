/**
 * What the shell walker (policy-parts.ts) produces and the policy and the program specs judge: the
 * simple commands a command line can run, their words after expansion, assignments, redirections
 * and standard input.
 */

/** A value a word can take: a plain string, or (glob) a picomatch pattern standing for the paths it matches. */
export interface PathCandidate {
  text: string;
  glob: boolean;
}

/** One argument (or redirection target) after quote removal and brace/tilde expansion. */
export interface ShellWord {
  /** Source text as written. */
  raw: string;
  /** Value after quote removal; run-time expansions appear as written (`$HOME/x`, `$(date)`). */
  text: string;
  /** `text` is exactly what the program receives: no run-time expansion, no glob. */
  literal: boolean;
  /** Has unquoted glob characters: the shell replaces it with matching paths. */
  glob: boolean;
  /** Values it can take when these are statically known (literal text, known variables, globs); else null. */
  candidates: PathCandidate[] | null;
  /** Filled in at run time with a path found below these bases (`find … -exec cmd {}`), optionally filtered by `-name`. */
  below?: { bases: PathCandidate[] | null; names: string[] };
  /** Programs run by command/process substitutions inside this word (`bash <(curl …)`). */
  substitutions: string[];
}

export interface Assignment {
  name: string;
  value: ShellWord;
  text: string;
}

export interface Redirection {
  op: string;
  fd: number | null;
  /** The file (for here-documents: the delimiter). */
  target: ShellWord;
  /** Opens the target for writing (`>`, `>>`, `>|`, `&>`, `<>`, `>& file`). */
  write: boolean;
  /** Opens the target for reading (`<`, `<>`). */
  read: boolean;
  /** Body of a here-document. */
  heredoc: string | null;
  /** Possible working directories the target is relative to; null when unknown. */
  cwd: string[] | null;
  /** Index in `parts` of the command it belongs to; null for compound commands and the like. */
  part: number | null;
  text: string;
}

/** Where a command's standard input comes from. */
export type StdinSource =
  { kind: "pipe"; upstream: string[]; text: string | null } | { kind: "heredoc" | "herestring"; text: string | null } | { kind: "file"; word: ShellWord };

export interface CommandPart {
  /** Basename of the program (`rm` for `/usr/bin/rm`); "" for a command of only assignments/redirections. */
  program: string;
  /** The program as a path when written with a `/` (resolved against the working directory when known). */
  path: string | null;
  argv: string[];
  words: ShellWord[];
  /** `NAME=value` given to this command (prefix assignments, `env NAME=value`), or set in the shell when program is "". */
  assignments: Assignment[];
  redirects: Redirection[];
  /** Possible working directories; null when unknown (after `cd "$x"`, in `find -execdir`, …). */
  cwd: string[] | null;
  /** How it was reached, outermost first: `$()`, `bash -c`, `env`, `xargs`, `find -exec`, `stdin of sh`, … */
  via: string[];
  stdin: StdinSource | null;
  /** Source text of this command. */
  text: string;
  /** Its arguments hold another command, which is listed as a part of its own. */
  wrapper: boolean;
}

export interface ParseProblem {
  /** `parse.error`, `parse.unsupported`, `parse.dynamic-program`, `parse.dynamic-code`, `parse.too-complex`, `parse.ifs`. */
  rule: string;
  /** Written for the model. */
  reason: string;
  text: string;
}

export interface ParsedCommandLine {
  parts: CommandPart[];
  redirects: Redirection[];
  /** Not understood: each makes the command not allowed. */
  problems: ParseProblem[];
  /** Strings stored for later evaluation (assigned values, here-strings read into variables) that look like code. */
  latent: Array<{ text: string; where: string }>;
}

export interface ParseOptions {
  /** Absolute working directory the command starts in; relative paths stay unresolved without it. */
  cwd?: string;
  /** The home directory `~` and `$HOME` expand to. */
  home?: string;
}

/** Shells whose `-c` string, script or standard input is shell code. */
/** Paths that are the standard input of the process that opens them. */
export const STDIN_PATHS = new Set(["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]);

export const SHELLS = new Set(["bash", "sh", "dash", "zsh", "ksh", "ash", "mksh", "rbash", "yash", "busybox-sh"]);

/** A word the shell passes on exactly as written. */
export function literalWord(text: string): ShellWord {
  return { raw: text, text, literal: true, glob: false, candidates: [{ text, glob: false }], substitutions: [] };
}

/** A word whose value is only known at run time. */
export function dynamicWord(text: string): ShellWord {
  return { raw: text, text, literal: false, glob: false, candidates: null, substitutions: [] };
}
