/**
 * The registry of program specs: one module per family, each spec naming its programs. The policy
 * and the shell walker look programs up here and nowhere else; adding a program is one entry in one
 * family module (and its tests in test/sandbox/programs/).
 */
import type { CommandPart } from "../command-parts.js";
import { ARCHIVER_SPECS } from "./archivers.js";
import { BUILD_TOOL_SPECS } from "./build-tools.js";
import { COREUTILS_SPECS } from "./coreutils.js";
import { FINDUTILS_SPECS } from "./findutils.js";
import { GIT_SPECS } from "./git.js";
import { normalizeProgram } from "./names.js";
import { NETWORK_SPECS } from "./network.js";
import { JS_PACKAGE_SPECS } from "./packages-js.js";
import { PACKAGE_SPECS } from "./packages.js";
import { RUNTIME_SPECS } from "./runtimes.js";
import { SHELL_SPECS } from "./shells.js";
import { SYSTEM_SPECS } from "./system.js";
import { TEXT_SPECS } from "./text.js";
import type { CheckEnv, Finding, ProgramSpec, RuleEnv, WriteTarget } from "./types.js";
import { WRAPPER_SPECS } from "./wrappers.js";

export { normalizeProgram } from "./names.js";

/** Every family, in one list. */
export const FAMILIES: Readonly<Record<string, readonly ProgramSpec[]>> = {
  shells: SHELL_SPECS,
  wrappers: WRAPPER_SPECS,
  system: SYSTEM_SPECS,
  coreutils: COREUTILS_SPECS,
  findutils: FINDUTILS_SPECS,
  text: TEXT_SPECS,
  archivers: ARCHIVER_SPECS,
  git: GIT_SPECS,
  "packages-js": JS_PACKAGE_SPECS,
  packages: PACKAGE_SPECS,
  runtimes: RUNTIME_SPECS,
  "build-tools": BUILD_TOOL_SPECS,
  network: NETWORK_SPECS,
};

/** Name → spec; a name claimed by two specs is a bug caught when the module loads. */
function index(): Map<string, ProgramSpec> {
  const out = new Map<string, ProgramSpec>();
  for (const [family, specs] of Object.entries(FAMILIES)) {
    for (const spec of specs) {
      for (const name of spec.names) {
        if (out.has(name)) throw new Error(`program registry: \`${name}\` is claimed twice (family ${family})`);
        out.set(name, spec);
      }
    }
  }
  return out;
}

const BY_NAME = index();

/** The spec for a program name (`/usr/bin/python3.12` → python3's), if any family knows it. */
export function specFor(program: string): ProgramSpec | undefined {
  return BY_NAME.get(normalizeProgram(program));
}

/** Every program name the registry knows. */
export function knownPrograms(): string[] {
  return [...BY_NAME.keys()];
}

/** The base decision for a command by its program; null when no spec decides (the policy's default then does). */
export function programDecision(p: CommandPart, env: RuleEnv): Finding | null {
  return specFor(p.program)?.decide?.(p, env) ?? null;
}

/** Files and directories the command writes, by what its program does with its arguments. */
export function writeTargets(p: CommandPart): WriteTarget[] {
  return specFor(p.program)?.writes?.(p) ?? [];
}

/** Its program's own findings (setuid modes, programs tar runs, sed `e`, makefiles from elsewhere, …). */
export function programFindings(p: CommandPart, env: CheckEnv): Finding[] {
  return specFor(p.program)?.check?.(p, env) ?? [];
}

/** The program's output is a download (for `curl … | sh`). */
export function isDownloader(program: string): boolean {
  return specFor(program)?.downloads === true;
}
