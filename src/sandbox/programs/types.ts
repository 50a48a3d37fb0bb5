/**
 * What a program spec is: the one place that says, for a family of programs, their names, their
 * option table, what they run, what they write and read, and the policy's decision on them. The
 * shell walker (policy-parts.ts) keeps only shell meaning and asks the registry (registry.ts) what a
 * program runs; the policy (policy.ts) asks it for decisions, write targets and findings.
 */
import type { Assignment, CommandPart, ShellWord } from "../command-parts.js";
import type { PathJudge, WriteKind } from "../policy-paths.js";
import type { OptionTable } from "./options.js";

export type PolicyDecision = "allow" | "deny" | "ask";

/** One rule's verdict on one command part. */
export interface Finding {
  decision: PolicyDecision;
  /** Stable rule id, e.g. `priv.escalation`, `rm.outside`, `git.push`. */
  rule: string;
  /** Written for the model: what is wrong and what to do instead. */
  reason: string;
}

export interface RuleEnv {
  judge: PathJudge;
  /** Network tools and package installs are allowed (not asked). */
  allowNetwork: boolean;
  /** Programs inside the workspace (`./configure`, `./scripts/x.sh`) run without approval. */
  workspacePrograms: "allow" | "ask";
  /** Denials of a command line found inside another one (inline interpreter code); no asks, no parse problems. */
  nestedDenials(code: string, cwd: string[] | null): Finding[];
}

/** What a spec's `check` may use besides the rule environment. */
export interface CheckEnv extends RuleEnv {
  /** The word can name the workspace root itself (or is not known). */
  isWorkspaceRoot(w: ShellWord, cwds: string[] | null): boolean;
  /** Findings for inline interpreter or awk code of `p` (strings passed to a shell, computed names). */
  inlineFindings(p: CommandPart, kind: "awk", code: string): Finding[];
}

export interface WriteTarget {
  word: ShellWord;
  kind: WriteKind;
  /** The operation is a deletion judged by the rm rules. */
  rm?: boolean;
  /** cp/mv/ln sources whose basenames land in `word` when it is a directory. */
  sources?: ShellWord[];
  /** Sources are copied or moved with everything below them. */
  recursiveInto?: boolean;
}

/**
 * How a spec tells the shell walker what a command runs. The walker emits those commands as parts of
 * their own, reached through `label`, with the state (working directory, variables) of this command.
 */
export interface FollowApi {
  readonly part: CommandPart;
  /** The command's words after expansion (`part.words`). */
  readonly words: ShellWord[];
  /** Runs `words` as a command: stdin is this command's unless `stdin: null`; `cwd` replaces the working directories. */
  run(words: ShellWord[], label: string, opts?: { assigns?: Assignment[]; cwd?: string[] | null; stdin?: null }): void;
  /** Walks a literal string as shell code handed to `label` (`bash -c`, `watch`, `trap`). */
  code(text: string, label: string): void;
  /** Shell code the command reads on its standard input, when that is literal. */
  stdinCode(): void;
  /** A script file it runs: checked as code when this command line wrote it. */
  script(w: ShellWord): void;
  /** Records what the walker cannot follow (`parse.dynamic-program`, `parse.dynamic-code`, …) against this command. */
  problem(rule: string, reason: string): void;
  /** The directories a word names, against this command's working directories; null when not known. */
  resolveDirs(w: ShellWord): string[] | null;
  /** Notes an assignment whose value looks like code, for the latent-code check. */
  noteLatent(a: Assignment, where: string): void;
}

/** A program family's knowledge of its programs. Every hook is optional. */
export interface ProgramSpec {
  /** Names it answers to, after normalizeProgram (`python3.12` is `python3`). */
  names: readonly string[];
  /** The getopt table of options that take a value (the hooks parse with it). */
  options?: OptionTable;
  /** Its base decision; null (or no hook) leaves it to the policy's `default`. */
  decide?(p: CommandPart, env: RuleEnv): Finding | null;
  /** Files and directories it writes, judged by path. */
  writes?(p: CommandPart): WriteTarget[];
  /** Findings beyond the base decision and the paths (setuid modes, programs tar runs, sed `e`, …). */
  check?(p: CommandPart, env: CheckEnv): Finding[];
  /** What it runs: the command of a wrapper, the code of a shell, xargs' and find -exec's commands. */
  runs?(api: FollowApi): void;
  /** Its output is a download (`… | sh` is refused). */
  downloads?: boolean;
}

export const finding = (decision: PolicyDecision, rule: string, reason: string): Finding => ({ decision, rule, reason });

/** A command's text quoted for a reason, cut at 80 characters. */
export const q = (s: string) => `\`${s.length > 80 ? `${s.slice(0, 77)}…` : s}\``;

export const allowed = (p: CommandPart, rule = "program.allowed"): Finding => finding("allow", rule, `${q(p.program)} is allowed`);

/** Allowed with the network, asked without. */
export function network(env: RuleEnv, rule: string, reason: string): Finding {
  return env.allowNetwork
    ? finding("allow", rule, `${reason}; the network is allowed for this run`)
    : finding("ask", rule, `${reason}, which needs the user's approval (or run with the network allowed)`);
}
