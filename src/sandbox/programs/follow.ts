/** Helpers for specs' `runs` hooks: the command after a wrapper's options, and code given as a word. */
import { type Assignment, literalWord, type ShellWord } from "../command-parts.js";
import type { FollowApi } from "./types.js";

/** Runs `words[i..]` (or `extra.words`) as the wrapped command; i < 0 means an option was computed at run time. */
export function runFrom(api: FollowApi, i: number, label: string, extra: { assigns?: Assignment[]; cwd?: string[] | null; words?: ShellWord[] } = {}): void {
  if (i < 0) {
    api.problem("parse.dynamic-program", `the options of \`${api.part.program}\` are computed at run time, so the command it runs cannot be known`);
    return;
  }
  const ws = extra.words ?? api.words.slice(i);
  if (ws.length === 0) return;
  api.part.wrapper = true;
  api.run(ws, label, { assigns: extra.assigns, cwd: extra.cwd });
}

/** Walks a word as shell code handed to `label`; refused when computed at run time. */
export function runCode(api: FollowApi, w: ShellWord | undefined, label: string): void {
  if (!w) return;
  api.part.wrapper = true;
  if (!w.literal) {
    const from = w.substitutions.length ? ` (it includes the output of \`${w.substitutions.join("`, `")}\`)` : "";
    api.problem(
      "parse.dynamic-code",
      `the code given to \`${label}\` is computed at run time${from}, so it cannot be checked; write the commands out literally`,
    );
    return;
  }
  api.code(w.text, label);
}

/** Options of package runners (npx, uv run, pnpm exec, …) that take a value. */
const RUNNER_VALUE_OPTIONS = [
  "-p",
  "--package",
  "--with",
  "--from",
  "--python",
  "-w",
  "--env-file",
  "--directory",
  "--project",
  "--workspace",
  "--filter",
  "-F",
  "-C",
];

/** A package runner's command (`npx vitest`, `uv run pytest`, `npm exec -- tsc`) or its `-c` code, from `start`. */
export function runPackageCommand(api: FollowApi, start: number): void {
  const { part, words } = api;
  const n = words.length;
  for (let i = start; i < n; i++) {
    const w = words[i]!;
    if (!w.literal) {
      api.problem("parse.dynamic-program", `the arguments of \`${part.program}\` are computed at run time, so the command it runs cannot be known`);
      return;
    }
    const t = w.text;
    if (t === "--") {
      i++;
      if (i < n) api.run(words.slice(i), part.program);
      part.wrapper = true;
      return;
    }
    if (t === "-c" || t === "--call" || t.startsWith("--call=")) {
      part.wrapper = true;
      const c = t.startsWith("--call=") ? literalWord(t.slice(7)) : words[i + 1];
      if (!c) return;
      if (!c.literal) {
        api.problem("parse.dynamic-code", `the code given to \`${part.program} -c\` is computed at run time; write it literally`);
        return;
      }
      api.code(c.text, `${part.program} -c`);
      return;
    }
    if (RUNNER_VALUE_OPTIONS.includes(t)) {
      i++;
      continue;
    }
    if (t.startsWith("-")) continue;
    part.wrapper = true;
    api.run(words.slice(i), part.program);
    return;
  }
}

/** `npm exec …`, `uv run …`, `uv tool run …`: the subcommands of a package manager that run a package's command. */
export function runnerSubcommand(api: FollowApi, runners: string[]): void {
  const lit = (i: number) => (api.words[i]?.literal ? api.words[i]!.text : null);
  const sub = lit(1);
  if (sub === null) return;
  if (runners.includes(sub)) return runPackageCommand(api, 2);
  if (api.part.program === "uv" && sub === "tool" && lit(2) === "run") return runPackageCommand(api, 3);
}
