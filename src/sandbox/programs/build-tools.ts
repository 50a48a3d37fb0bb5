/**
 * Build, test, lint and format tools (JS/TS, Python, Go, Rust, C). All allowed: they run the
 * workspace's own code, which isolation contains. What they write is judged by path: output options
 * (`tsc --outDir`, `gcc -o`, `vitest --outputFile`) and the files formatters rewrite in place
 * (`prettier --write`, `eslint --fix`, `black`, `gofmt -w`, `ruff format`). `make` with makefile text
 * inline, from stdin or from outside the workspace is asked (policy-make.ts).
 */
import type { CommandPart, ShellWord } from "../command-parts.js";
import { makeFindings } from "../policy-make.js";
import { getopt, type OptionTable, outputWrites } from "./options.js";
import { allowed, type ProgramSpec, type WriteTarget } from "./types.js";

const ok: ProgramSpec["decide"] = (p) => allowed(p);
const each = (ws: ShellWord[]): WriteTarget[] => ws.map((word) => ({ word, kind: {}, rm: false }));

/** An allowed tool whose output options name files it writes. */
const withOutputs = (names: string[], options: OptionTable): ProgramSpec => ({ names, options, decide: ok, writes: (p) => outputWrites(p, options) });

/** A formatter that rewrites its operands when `when` says so (`--write`, `-w`). */
function formatter(names: string[], options: OptionTable, when: (p: CommandPart) => boolean = () => true, start = 1): ProgramSpec {
  return { names, options, decide: ok, writes: (p) => (when(p) ? each(getopt(p.words, start, options).operands) : []) };
}

const ESLINT_OUTPUT: OptionTable = { short: "o", long: ["output-file", "cache-location"] };
const ESLINT: OptionTable = {
  short: "cfo",
  long: [
    "config",
    "format",
    "output-file",
    "ext",
    "rule",
    "plugin",
    "parser",
    "resolve-plugins-relative-to",
    "rulesdir",
    "ignore-path",
    "ignore-pattern",
    "cache-location",
    "max-warnings",
  ],
};
const PY_FORMAT: OptionTable = {
  short: "lt",
  long: ["config", "line-length", "target-version", "include", "exclude", "extend-exclude", "settings-path", "edition"],
};
const RUFF: OptionTable = { long: ["config", "select", "ignore", "extend-select", "target-version", "line-length", "exclude", "extend-exclude"] };
const C_OUTPUT: OptionTable = { short: "o" };

export const BUILD_TOOL_SPECS: ProgramSpec[] = [
  // JS/TS
  withOutputs(["tsc"], { long: ["outDir", "outFile", "declarationDir", "tsBuildInfoFile"] }),
  withOutputs(["esbuild"], { long: ["outfile", "outdir"] }),
  withOutputs(["vitest"], { long: ["outputFile"] }),
  withOutputs(["jest"], { long: ["outputFile", "coverageDirectory"] }),
  withOutputs(["vite"], { long: ["outDir"] }),
  withOutputs(["rollup"], { short: "o", long: ["file", "dir"] }),
  withOutputs(["webpack"], { short: "o", long: ["output-path", "output"] }),
  {
    names: ["eslint"],
    options: ESLINT,
    decide: ok,
    writes: (p) => [...(p.argv.some((a) => a.startsWith("--fix")) ? each(getopt(p.words, 1, ESLINT).operands) : []), ...outputWrites(p, ESLINT_OUTPUT)],
  },
  formatter(["prettier"], { long: ["config", "ignore-path", "plugin", "parser", "log-level", "cache-location", "stdin-filepath"] }, (p) =>
    p.argv.some((a) => a === "--write" || a === "-w"),
  ),
  { names: ["mocha", "biome", "c8", "nyc"], decide: ok },
  // Python
  withOutputs(["pytest"], { long: ["junitxml", "junit-xml", "basetemp"] }),
  {
    names: ["black", "isort", "rustfmt"],
    options: PY_FORMAT,
    decide: ok,
    writes: (p) => each(getopt(p.words, 1, PY_FORMAT).operands.filter((x) => x.text !== "-")),
  },
  {
    names: ["ruff"],
    options: RUFF,
    decide: ok,
    writes: (p) => {
      const sub = p.argv[1];
      return sub === "format" || (sub === "check" && p.argv.some((a) => a === "--fix")) ? each(getopt(p.words, 2, RUFF).operands) : [];
    },
  },
  { names: ["py.test", "mypy", "flake8", "pylint", "pyright", "coverage"], decide: ok },
  // Go, Rust, C
  formatter(["gofmt", "goimports"], { short: "r", long: [] }, (p) => p.argv.includes("-w")),
  { names: ["golangci-lint", "staticcheck", "cargo-clippy", "clippy-driver", "cmake", "ninja", "pkg-config"], decide: ok },
  withOutputs(["rustc"], { short: "o", long: ["out-dir"] }),
  withOutputs(["gcc", "g++", "cc", "c++", "clang", "clang++", "ld"], C_OUTPUT),
  { names: ["make", "gmake"], decide: ok, check: (p, env) => makeFindings(p, env.judge) },
];
