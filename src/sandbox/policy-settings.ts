/**
 * The policy's settings: what ledgerloop.config.json (`sandbox.policy`) and the `--allow` flags can
 * change, the defaults, and how they merge. The decisions themselves are policy.ts's.
 */

/** A user-defined deny or ask rule (from ledgerloop.config.json). */
export interface PolicyRule {
  id: string;
  /** Program names or paths (`*` and `?` wildcards); any matches. */
  program?: string[];
  /** Every one of these (wildcards allowed) must be among the arguments, in any order. */
  args?: string[];
  /** A regular expression tested against the command's text. */
  pattern?: string;
  reason: string;
}

/** A resolved policy: the built-in rules plus these settings. */
export interface SandboxPolicy {
  /** Decision for programs no rule knows. */
  default: "ask" | "deny";
  /**
   * Extra allowed commands: `"terraform"`, `"docker compose ps"`, `"./tools/*.sh"` — a program and a
   * prefix of its arguments, `*` wildcards. A bare program name lifts asks and unknowns; lifting a
   * built-in denial (`git push`) takes naming the arguments too. Path and structure checks (writes
   * outside the workspace, protected paths, `curl | sh`, …) are never lifted.
   */
  allow: string[];
  deny: PolicyRule[];
  ask: PolicyRule[];
  /** Network tools, package installs and fetches are allowed instead of asked. */
  allowNetwork: boolean;
  /** Programs inside the workspace run without approval ("allow") or need it ("ask"). */
  workspacePrograms: "allow" | "ask";
  /** Absolute directories (besides the workspace) that commands may write below. */
  writablePaths: string[];
  /** Workspace-relative paths or globs commands may not write, in addition to .git/, .ledgerloop/, ledgerloop.config.json. */
  protectedPaths: string[];
}

export const DEFAULT_POLICY: Readonly<SandboxPolicy> = Object.freeze({
  default: "ask",
  allow: [],
  deny: [],
  ask: [],
  allowNetwork: false,
  workspacePrograms: "allow",
  writablePaths: ["/tmp"],
  protectedPaths: [],
});

/** A copy of `policy` with more allowed commands (and optionally the network), e.g. from `--allow` flags. */
export function withAllowed(policy: Readonly<SandboxPolicy>, allow: string[], opts: { allowNetwork?: boolean } = {}): SandboxPolicy {
  return {
    ...policy,
    allow: [...policy.allow, ...allow.map((a) => a.trim()).filter(Boolean)],
    allowNetwork: opts.allowNetwork ?? policy.allowNetwork,
    deny: [...policy.deny],
    ask: [...policy.ask],
    writablePaths: [...policy.writablePaths],
    protectedPaths: [...policy.protectedPaths],
  };
}

/** Settings as written in ledgerloop.config.json (`sandbox.policy`), all optional. */
export interface PolicySettings {
  default?: "ask" | "deny";
  allow?: string[];
  deny?: Array<Omit<PolicyRule, "id" | "program"> & { id?: string; program?: string | string[] }>;
  ask?: Array<Omit<PolicyRule, "id" | "program"> & { id?: string; program?: string | string[] }>;
  workspacePrograms?: "allow" | "ask";
  writablePaths?: string[];
  protectedPaths?: string[];
}

/** Merges settings over the defaults: lists are appended, scalars replaced. */
export function resolvePolicy(settings: PolicySettings = {}, opts: { allowNetwork?: boolean } = {}): SandboxPolicy {
  const rules = (list: PolicySettings["deny"], kind: "deny" | "ask"): PolicyRule[] =>
    (list ?? []).map((r, i) => ({
      id: r.id ?? `user.${kind}.${i}`,
      ...(r.program !== undefined ? { program: Array.isArray(r.program) ? r.program : [r.program] } : {}),
      ...(r.args !== undefined ? { args: r.args } : {}),
      ...(r.pattern !== undefined ? { pattern: r.pattern } : {}),
      reason: r.reason,
    }));
  return {
    default: settings.default ?? DEFAULT_POLICY.default,
    allow: [...DEFAULT_POLICY.allow, ...(settings.allow ?? [])],
    deny: rules(settings.deny, "deny"),
    ask: rules(settings.ask, "ask"),
    allowNetwork: opts.allowNetwork ?? DEFAULT_POLICY.allowNetwork,
    workspacePrograms: settings.workspacePrograms ?? DEFAULT_POLICY.workspacePrograms,
    writablePaths: [...DEFAULT_POLICY.writablePaths, ...(settings.writablePaths ?? [])],
    protectedPaths: [...DEFAULT_POLICY.protectedPaths, ...(settings.protectedPaths ?? [])],
  };
}
