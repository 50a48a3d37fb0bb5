/**
 * The command policy: decides, before anything runs, whether a shell command line is allowed,
 * refused, or needs the user's approval.
 *
 * A command line is parsed as bash would parse it (see policy-parts.ts) into every simple command it
 * can run — behind `;`, `&&`, `|`, `$()`, backticks, `bash -c`, `eval`, `env`, `timeout`, `xargs`,
 * `find -exec`, … — and every redirection. It is allowed only if every part is allowed; any denial
 * wins; otherwise any `ask` makes the whole line `ask`. What the parser cannot follow (a program
 * name computed at run time, code in a variable, a syntax error) is denied.
 *
 * What is known about each program — its decision, what it writes, what it runs, its own rules —
 * lives in one place, its family's spec in programs/ (registry.ts lists the families); this module
 * adds what holds for every command: paths, environment variables, secrets, interpreters' code
 * (policy-interpreters.ts), the user's rules, and combining the parts' findings.
 *
 * Default policy (each rule has an id, listed in POLICY_RULES):
 * - allowed: building, testing and linting JS/TS (node, npm/pnpm/yarn/bun scripts, npx of installed
 *   tools, tsc, vitest, jest, eslint, prettier, …), Python (python3, pytest, mypy, ruff, …), Go,
 *   Rust (cargo, rustc), C (make, cc); coreutils and text tools; read-only git (`git add` and
 *   `git commit` are the git_commit tool's: .git is read-only to commands); programs that live inside the workspace (`./configure`, `./scripts/x.sh`).
 * - denied: privilege changes (sudo, su, doas), system administration (mkfs, mount, chroot,
 *   nsenter, …), deletes and writes outside the workspace (except /tmp and /dev/null) or to
 *   protected paths (.git/, .ledgerloop/, ledgerloop.config.json), a download piped into an
 *   interpreter, `git push`, git configuration changes, `git -c`, setuid bits, publishing packages,
 *   environment variables that make programs load other code (LD_PRELOAD, BASH_ENV, GIT_SSH_COMMAND…).
 * - ask: network tools (curl, wget), package installs (npm install, pip install, go get, cargo add),
 *   remote shells (ssh, nc), git commands that rewrite the tree or history (checkout, reset, rebase…),
 *   reading credentials (~/.ssh, ~/.aws…), shell code read from a pipe, and any program not listed.
 *
 * Inline interpreter code (`python3 -c`, `node -e`, `perl -e`, `bun -e`, `deno eval`, awk programs,
 * here-documents fed to an interpreter) is allowed when it is plain code: the sandbox's isolation
 * contains it, as it contains any script in the workspace. Code that starts programs (`os.system`,
 * `subprocess`, `child_process`, backticks) has each string literal checked as a command line (a
 * denied program written out in the code is denied), and otherwise needs approval, since the
 * command it runs can be built at run time (policy-inline.ts). Awk's commands are its literals, so
 * awk code is only checked. `make` with makefile text inline or from stdin, or a makefile outside
 * the workspace, needs approval like a script from outside (policy-make.ts).
 * The policy is not the security boundary — code the agent writes to a file and runs (`npm test`,
 * `make`, `./x.sh`) is not inspected — it catches mistakes and injected commands early and tells the
 * model why; isolation (bubblewrap/unshare) is what contains the rest.
 */
import os from "node:os";
import path from "node:path";
import { type CommandPart, parseCommandLine, type ShellWord } from "./policy-parts.js";
import { envFindings, isWorkspaceRoot, readFindings, redirectFindings, writeFindings } from "./policy-checks.js";
import { PathJudge } from "./policy-paths.js";
import { DEFAULT_POLICY, type PolicyRule, type SandboxPolicy } from "./policy-settings.js";
import { inlineFindings, interpreterFindings } from "./policy-interpreters.js";
import { normalizeProgram, programDecision, programFindings } from "./programs/registry.js";
import type { CheckEnv, Finding, PolicyDecision } from "./programs/types.js";

export { parseCommandLine } from "./policy-parts.js";
export type { CommandPart, ParsedCommandLine, ParseOptions, ParseProblem, Redirection, ShellWord, StdinSource } from "./policy-parts.js";
export type { Finding, PolicyDecision } from "./programs/types.js";
export { POLICY_RULES } from "./policy-rules.js";
export { DEFAULT_POLICY, type PolicyRule, type PolicySettings, resolvePolicy, type SandboxPolicy, withAllowed } from "./policy-settings.js";

export interface PolicyContext {
  /** Absolute workspace root. */
  workspace: string;
  /** Directory the command starts in (default: the workspace). */
  cwd?: string;
  /** Home directory `~` and `$HOME` stand for (default: the runner's). */
  home?: string;
  /** Follow existing symlinks when resolving paths (default true). */
  followSymlinks?: boolean;
  /**
   * The isolation level the command will run at. Only the isolating levels give it a private
   * `/tmp`: at level `none`, `/tmp` is the host's, shared with other workspaces, and counts as
   * outside.
   */
  level?: "bwrap" | "unshare" | "none";
}

export interface PartVerdict {
  /** The command's text (or the redirection's). */
  text: string;
  /** Program basename; "" for assignments/redirections without a command and for parse problems. */
  program: string;
  via: string[];
  decision: PolicyDecision;
  rule: string;
  reason: string;
}

export interface PolicyVerdict {
  decision: PolicyDecision;
  /** The deciding rule: the first denial, else the first ask, else the rule that allowed the first part. */
  rule: string;
  /** Written for the model. */
  reason: string;
  parts: PartVerdict[];
}

/** Evaluates a command line against a policy. Pure except for reading the file system to resolve symlinks. */
export function evaluatePolicy(cmd: string, policy: Readonly<SandboxPolicy> = DEFAULT_POLICY, ctx: PolicyContext): PolicyVerdict {
  const judge = new PathJudge({
    workspace: path.resolve(ctx.workspace),
    home: path.resolve(ctx.home ?? os.homedir()),
    writable: ctx.level === "none" ? policy.writablePaths.filter((w) => path.resolve(w) !== "/tmp") : policy.writablePaths,
    protectedPaths: policy.protectedPaths,
    followSymlinks: ctx.followSymlinks ?? true,
  });
  const ev = new Evaluator(policy, judge, judge.physical("/", path.resolve(ctx.workspace, ctx.cwd ?? ".")));
  try {
    return ev.evaluate(cmd);
  } catch (err) {
    // A bug here must refuse the command, never let it through or crash the runner.
    const reason = `the command policy failed on this command (${err instanceof Error ? err.message : String(err)}); simplify the command`;
    return { decision: "deny", rule: "policy.error", reason, parts: [{ text: cmd, program: "", via: [], decision: "deny", rule: "policy.error", reason }] };
  }
}

// ---------------------------------------------------------------------------------------------

const MAX_NESTED_EVAL = 3;

const q = (s: string) => `\`${s.length > 80 ? `${s.slice(0, 77)}…` : s}\``;
const fd = (decision: PolicyDecision, rule: string, reason: string): Finding => ({ decision, rule, reason });

/** Compiles a user wildcard (`*`, `?`) to an anchored regular expression. */
function wildcard(pattern: string): RegExp {
  return new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
    "s",
  );
}

class Evaluator implements CheckEnv {
  readonly allowNetwork: boolean;
  readonly workspacePrograms: "allow" | "ask";
  private depth = 0;
  private readonly patterns = new Map<string, RegExp | null>();

  constructor(
    private readonly policy: Readonly<SandboxPolicy>,
    readonly judge: PathJudge,
    private readonly cwd: string,
  ) {
    this.allowNetwork = policy.allowNetwork;
    this.workspacePrograms = policy.workspacePrograms;
  }

  evaluate(cmd: string): PolicyVerdict {
    const entries = this.entries(cmd, this.cwd, true);
    if (entries.length === 0) return { decision: "allow", rule: "empty", reason: "the command line is empty", parts: [] };
    const deny = entries.find((e) => e.decision === "deny");
    const ask = entries.find((e) => e.decision === "ask");
    const pick = deny ?? ask;
    if (pick) return { decision: pick.decision, rule: pick.rule, reason: pick.reason, parts: entries };
    const programs = [...new Set(entries.map((e) => e.program).filter(Boolean))];
    return {
      decision: "allow",
      rule: entries.find((e) => e.program)?.rule ?? entries[0]!.rule,
      reason: `every part is allowed${programs.length ? ` (${programs.join(", ")})` : ""}`,
      parts: entries,
    };
  }

  nestedDenials(code: string, cwd: string[] | null): Finding[] {
    if (this.depth >= MAX_NESTED_EVAL) return [];
    this.depth++;
    try {
      return this.entries(code, cwd?.[0] ?? this.judge.workspace, false).filter((e) => e.decision === "deny");
    } finally {
      this.depth--;
    }
  }

  private entries(cmd: string, cwd: string, withProblems: boolean): PartVerdict[] {
    if (!cmd.trim()) return [];
    const parsed = parseCommandLine(cmd, { cwd, home: this.judge.home });
    const out: PartVerdict[] = [];
    parsed.parts.forEach((part) => {
      const findings = this.judgePart(part);
      out.push(this.verdictOf(part.text, part.program, part.via, findings));
    });
    for (const r of parsed.redirects) {
      if (r.part !== null) continue;
      const findings = redirectFindings(this, r, r.text);
      if (findings.length) out.push(this.verdictOf(r.text, "", [], findings));
    }
    // After the parts: a concrete denial (`sudo`) tells the model more than "cannot be checked".
    if (withProblems) {
      for (const p of parsed.problems) out.push({ text: p.text, program: "", via: [], decision: "deny", rule: p.rule, reason: p.reason });
    }
    for (const l of parsed.latent) {
      const denials = this.nestedDenials(l.text, [cwd]);
      if (denials.length) {
        out.push({
          text: l.text,
          program: "",
          via: [],
          decision: "deny",
          rule: "latent-code",
          reason: `${l.where} stores shell code that would run a refused command if evaluated later (${denials[0]!.rule}: ${denials[0]!.reason}); do not store commands in variables`,
        });
      }
    }
    return out;
  }

  private verdictOf(text: string, program: string, via: string[], findings: Finding[]): PartVerdict {
    const pick = findings.find((x) => x.decision === "deny") ?? findings.find((x) => x.decision === "ask") ?? findings.find((x) => x.decision === "allow");
    const chosen = pick ?? fd("allow", "program.allowed", "allowed");
    const reached = via.length ? ` (reached through ${via.join(" → ")})` : "";
    return { text, program, via, decision: chosen.decision, rule: chosen.rule, reason: `${chosen.reason}${reached}` };
  }

  // ---- one part ----

  private judgePart(p: CommandPart): Finding[] {
    const out: Finding[] = [];
    out.push(...envFindings(p));
    out.push(...writeFindings(this, p));
    for (const r of p.redirects) out.push(...redirectFindings(this, r, p.text));
    out.push(...readFindings(this, p));
    out.push(...interpreterFindings(p, this));
    out.push(...programFindings(p, this));
    if (p.program !== "") {
      for (const r of this.policy.deny) if (this.matches(r, p)) out.push(fd("deny", r.id, r.reason));
      for (const r of this.policy.ask) if (this.matches(r, p)) out.push(fd("ask", r.id, r.reason));
    }
    out.push(this.base(p));
    return out;
  }

  private matches(r: PolicyRule, p: CommandPart): boolean {
    if (r.program && !r.program.some((pg) => this.programMatches(pg, p))) return false;
    const args = p.argv.slice(1);
    if (r.args && !r.args.every((a) => args.some((x) => wildcard(a).test(x)))) return false;
    if (r.pattern) {
      let re = this.patterns.get(r.pattern);
      if (re === undefined) {
        try {
          re = new RegExp(r.pattern);
        } catch {
          re = null;
        }
        this.patterns.set(r.pattern, re);
      }
      if (!re || !(re.test(p.text) || re.test(p.argv.join(" ")))) return false;
    }
    return true;
  }

  private programMatches(pattern: string, p: CommandPart): boolean {
    if (pattern.includes("/")) {
      if (!p.path) return false;
      const abs = pattern.startsWith("/") ? pattern : path.join(this.judge.workspace, pattern);
      return wildcard(abs).test(p.path) || wildcard(pattern).test(p.path);
    }
    return wildcard(pattern).test(p.program) || wildcard(pattern).test(normalizeProgram(p.program));
  }

  /** The most specific allow entry matching the part (number of its words), or 0. */
  private userAllowed(p: CommandPart): number {
    let best = 0;
    for (const entry of this.policy.allow) {
      const words = entry.split(/\s+/).filter(Boolean);
      if (!words.length || !this.programMatches(words[0]!, p)) continue;
      if (words.slice(1).every((wd, i) => p.argv[i + 1] !== undefined && wildcard(wd).test(p.argv[i + 1]!))) best = Math.max(best, words.length);
    }
    return best;
  }

  private unknownProgram(p: CommandPart): Finding {
    const how = "add it to sandbox.policy.allow in ledgerloop.config.json to allow it";
    return this.policy.default === "deny"
      ? fd("deny", "program.unknown", `${q(p.program)} is not on the list of allowed programs and this policy refuses unknown programs (${how})`)
      : fd("ask", "program.unknown", `${q(p.program)} is not on the list of allowed programs, so it needs the user's approval (${how})`);
  }

  /** The decision by program: user allow-list, then location, then the built-in program rules. */
  private base(p: CommandPart): Finding {
    if (p.program === "") return fd("allow", "shell.assignment", "assignments and redirections only");
    const named = programDecision(p, this);
    // A bare program name in `allow` lifts asks; lifting a built-in denial takes naming the arguments
    // too (`"git push"`), so that allowing "git" does not also allow `git push` and `git -c`.
    const allowedBy = this.userAllowed(p);
    if (named?.decision === "deny" && allowedBy < 2) return named;
    if (allowedBy) return fd("allow", "user.allow", `${q(p.text)} is allowed by the configuration`);
    if (p.path) {
      const bases = p.path.startsWith("/") ? ["/"] : p.cwd;
      if (!bases) return fd("ask", "program.location", `${q(p.path)}: the working directory is not known here, so it is unclear which program runs`);
      const where = bases.map((b) => this.judge.physical(b, p.path!));
      // A link named `ls` that points at sudo is sudo.
      for (const real of where) {
        const realName = path.basename(real);
        if (realName !== p.program) {
          const d = programDecision({ ...p, program: realName }, this);
          if (d?.decision === "deny") return d;
        }
      }
      if (where.every((w) => this.judge.isInside(w))) {
        if (named) return named;
        return this.workspacePrograms === "allow"
          ? fd("allow", "workspace.program", `${q(p.path)} is a program inside the workspace`)
          : fd("ask", "workspace.program", `${q(p.path)} is a program inside the workspace; this policy asks before running those`);
      }
      if (!where.every((w) => this.judge.isSystemBin(w))) {
        return fd(
          "ask",
          "program.location",
          `${q(p.path)} runs a program from ${path.dirname(where[0]!)}, not from a system directory; call it by name or from the workspace`,
        );
      }
    }
    return named ?? this.unknownProgram(p);
  }

  isWorkspaceRoot(w: ShellWord, cwds: string[] | null): boolean {
    return isWorkspaceRoot(this, w, cwds);
  }

  inlineFindings(p: CommandPart, kind: "awk", code: string): Finding[] {
    return inlineFindings(p, kind, code, this);
  }
}
