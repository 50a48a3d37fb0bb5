/**
 * Python, Rust and Go package managers and toolchains: pip, pipx, uv, uvx, poetry, pipenv, pdm,
 * twine, cargo, go, rustup, and playwright's browser installs. Building, testing and running are
 * allowed; installs and downloads use the network; publishing is refused.
 */
import type { CommandPart, ShellWord } from "../command-parts.js";
import { runnerSubcommand, runPackageCommand } from "./follow.js";
import { getopt, outputWrites, subcommand, val } from "./options.js";
import { allowed, type Finding, finding, network, type ProgramSpec, q, type RuleEnv, type WriteTarget } from "./types.js";

type Rule = (p: CommandPart, env: RuleEnv) => Finding;

export const PUBLISH = (p: CommandPart, what: string) =>
  finding("deny", "pkg.publish", `${q(p.text)} ${what}; publishing or changing registry accounts is outside a coding task`);

const pipRule: Rule = (p, env) => pipSub(p, env, subcommand(p.words, 1, ["--python", "--cache-dir", "--log"])?.word.text ?? null);

export function pipSub(p: CommandPart, env: RuleEnv, s: string | null): Finding {
  if (s === null || ["list", "show", "freeze", "check", "help", "debug", "inspect", "--version", "-V", "hash", "cache"].includes(s))
    return allowed(p, "pkg.run");
  if (["install", "download", "wheel", "uninstall", "index", "search", "lock"].includes(s)) {
    return network(env, "pkg.install", `${q(p.text)} installs or fetches Python packages`);
  }
  return finding("ask", "pkg.manage", `${q(p.text)} changes pip's configuration or the environment, which needs the user's approval`);
}

const pyToolRule =
  (tool: "uv" | "poetry" | "pipenv" | "pdm"): Rule =>
  (p, env) => {
    const sub = subcommand(p.words, 1, ["--directory", "--project", "-C", "--python", "-p"]);
    if (!sub) return allowed(p, "pkg.run");
    const s = sub.word.text;
    const next = p.words[sub.index + 1]?.text;
    if (s === "publish") return PUBLISH(p, "publishes to the package index");
    if (tool === "uv" && s === "tool" && next === "run") return network(env, "pkg.download-run", `${q(p.text)} downloads a tool and runs it`);
    if (tool === "uv" && s === "pip") return pipSub(p, env, next ?? null);
    const installs = ["add", "remove", "sync", "lock", "update", "install", "tool", "python", "self", "source", "upgrade", "uninstall"];
    if (installs.includes(s)) return network(env, "pkg.install", `${q(p.text)} installs or resolves packages`);
    return allowed(p, "pkg.run");
  };

const cargoRule: Rule = (p, env) => {
  const sub = subcommand(p.words, 1, ["--manifest-path", "-Z", "--config", "--color", "-C"]);
  if (!sub) return allowed(p);
  const s = sub.word.text;
  if (s.startsWith("+")) return allowed(p);
  if (["publish", "yank", "owner", "login", "logout"].includes(s)) return PUBLISH(p, "talks to the crates.io account");
  if (["install", "uninstall", "add", "remove", "update", "fetch", "search", "vendor", "generate-lockfile", "info"].includes(s)) {
    return network(env, "pkg.install", `${q(p.text)} fetches or changes crates`);
  }
  const known = [
    "build",
    "b",
    "check",
    "c",
    "test",
    "t",
    "run",
    "r",
    "clippy",
    "fmt",
    "doc",
    "d",
    "bench",
    "clean",
    "tree",
    "metadata",
    "new",
    "init",
    "version",
    "help",
    "--version",
    "-V",
    "--help",
    "-h",
    "locate-project",
    "pkgid",
    "verify-project",
    "read-manifest",
    "rustc",
    "rustdoc",
    "nextest",
    "llvm-cov",
    "expand",
    "fix",
    "package",
    "miri",
    "report",
    "config",
  ];
  return known.includes(s)
    ? allowed(p)
    : finding("ask", "program.unknown", `${q(p.text)}: \`cargo ${s}\` runs a cargo plugin the policy does not know; it needs the user's approval`);
};

const goRule: Rule = (p, env) => {
  const sub = subcommand(p.words, 1);
  if (!sub) return allowed(p);
  const s = sub.word.text;
  if (s === "get" || s === "install") return network(env, "pkg.install", `${q(p.text)} downloads and installs Go modules`);
  if (s === "mod" && p.words[sub.index + 1]?.text === "download") return network(env, "pkg.install", `${q(p.text)} downloads Go modules`);
  if (s === "env" && p.words.slice(sub.index + 1).some((w) => w.text === "-w" || w.text === "-u")) {
    return finding("ask", "pkg.manage", `${q(p.text)} changes the Go environment of the user, which needs approval`);
  }
  if (s === "run" && p.words.slice(sub.index + 1).some((w) => /@/.test(w.text) && !w.text.startsWith("-"))) {
    return network(env, "pkg.download-run", `${q(p.text)} downloads a module version and runs it`);
  }
  return allowed(p);
};

const rustupRule: Rule = (p, env) => {
  const sub = subcommand(p.words, 1);
  const s = sub?.word.text;
  const next = sub ? p.words[sub.index + 1]?.text : undefined;
  if (!s || ["show", "which", "--version", "-V", "help", "--help", "doc"].includes(s) || next === "list") return allowed(p);
  return network(env, "pkg.install", `${q(p.text)} installs or changes Rust toolchains`);
};

const playwrightRule: Rule = (p, env) => {
  const s = subcommand(p.words, 1)?.word.text;
  return s === "install" || s === "install-deps" ? network(env, "pkg.install", `${q(p.text)} downloads browsers`) : allowed(p);
};

const each = (ws: ShellWord[]): WriteTarget[] => ws.map((word) => ({ word, kind: {}, rm: false }));
const CARGO_OUTPUT = { long: ["target-dir", "out-dir", "artifact-dir"] };

export const PACKAGE_SPECS: ProgramSpec[] = [
  { names: ["pip"], decide: pipRule },
  {
    names: ["pipx"],
    decide: (p, env) =>
      ["list", "--version"].includes(p.argv[1] ?? "") ? allowed(p, "pkg.run") : network(env, "pkg.install", `${q(p.text)} installs Python applications`),
  },
  { names: ["uv"], decide: pyToolRule("uv"), runs: (api) => runnerSubcommand(api, ["run"]) },
  {
    names: ["uvx"],
    decide: (p, env) => network(env, "pkg.download-run", `${q(p.text)} downloads a tool and runs it`),
    runs: (api) => runPackageCommand(api, 1),
  },
  { names: ["poetry"], decide: pyToolRule("poetry"), runs: (api) => runnerSubcommand(api, ["run"]) },
  { names: ["pipenv"], decide: pyToolRule("pipenv"), runs: (api) => runnerSubcommand(api, ["run"]) },
  { names: ["pdm"], decide: pyToolRule("pdm"), runs: (api) => runnerSubcommand(api, ["run"]) },
  { names: ["twine"], decide: (p) => (p.argv[1] === "upload" ? PUBLISH(p, "uploads to the package index") : allowed(p)) },
  {
    names: ["cargo"],
    options: CARGO_OUTPUT,
    decide: cargoRule,
    writes: (p) => outputWrites(p, CARGO_OUTPUT),
  },
  {
    names: ["go"],
    decide: goRule,
    writes: (p) => {
      const sub = p.argv[1];
      return sub === "build" || sub === "test" ? each(val(getopt(p.words, 2, { short: "o", long: [] }), "o")) : [];
    },
  },
  { names: ["rustup"], decide: rustupRule },
  { names: ["playwright"], decide: playwrightRule },
];
