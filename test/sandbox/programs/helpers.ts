/** Shared helpers for the program-family tests: a workspace, verdicts, and a spec's hooks on one command. */
import fs from "node:fs";
import path from "node:path";
import { DEFAULT_POLICY, evaluatePolicy, resolvePolicy, type PolicyVerdict } from "../../../src/sandbox/policy.js";
import { parseCommandLine, type CommandPart } from "../../../src/sandbox/policy-parts.js";
import { writeTargets } from "../../../src/sandbox/programs/registry.js";
import { tempWorkspace } from "../../helpers/workspace.js";

export const HOME = "/home/tester";

/** A workspace with a few files, .git and .ledgerloop, and node_modules/.bin/vitest. */
export function programsWorkspace(): string {
  const ws = tempWorkspace(undefined, {
    "src/x.ts": "",
    "sub/y.txt": "",
    "node_modules/.bin/vitest": "#!/bin/sh\n",
    ".git/config": "",
    ".ledgerloop/state.db": "",
  });
  fs.symlinkSync("/etc", path.join(ws, "etc-link"));
  return ws;
}

/** The verdict under the default policy (or with the network allowed). */
export function verdict(ws: string, cmd: string, opts: { network?: boolean } = {}): PolicyVerdict {
  const policy = opts.network ? resolvePolicy({}, { allowNetwork: true }) : { ...DEFAULT_POLICY };
  return evaluatePolicy(cmd, policy, { workspace: ws, home: HOME });
}

/** `[decision, rule]` of the verdict, for compact assertions. */
export const decide = (ws: string, cmd: string, opts: { network?: boolean } = {}) => {
  const v = verdict(ws, cmd, opts);
  return [v.decision, v.rule];
};

/** The first command part of a command line, parsed in `cwd`. */
export function firstPart(cmd: string, cwd = "/w"): CommandPart {
  const p = parseCommandLine(cmd, { cwd, home: HOME }).parts[0];
  if (!p) throw new Error(`no command in ${JSON.stringify(cmd)}`);
  return p;
}

/** What the first command writes, as `text` (with `rm`/`into` marks), by its program's spec. */
export function writes(cmd: string): string[] {
  return writeTargets(firstPart(cmd)).map((t) => `${t.rm ? "rm " : ""}${t.word.text}${t.sources ? ` <- ${t.sources.map((s) => s.text).join(",")}` : ""}`);
}

/** The commands a line runs, as `program (via)` for each part after the first. */
export function reached(cmd: string): string[] {
  return parseCommandLine(cmd, { cwd: "/w", home: HOME })
    .parts.slice(1)
    .map((p) => `${p.program} (${p.via.join(" → ")})`);
}

/** The rule ids of parse problems. */
export const problems = (cmd: string) => parseCommandLine(cmd, { cwd: "/w", home: HOME }).problems.map((p) => p.rule);
