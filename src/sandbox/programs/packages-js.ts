/**
 * JavaScript package managers and runners: npm, npx, pnpm, yarn, bun, bunx. Scripts and tools run
 * (`npm test`, `npx vitest`); installs and lookups use the network (allowed with it, asked without);
 * publishing and registry accounts are refused; configuration changes are asked. What `npx`, `npm
 * exec`, `pnpm dlx`, … run is walked as a command of its own.
 */
import type { CommandPart } from "../command-parts.js";
import { runnerSubcommand, runPackageCommand } from "./follow.js";
import { subcommand } from "./options.js";
import { PUBLISH } from "./packages.js";
import { allowed, type Finding, finding, network, type ProgramSpec, q, type RuleEnv } from "./types.js";

type Rule = (p: CommandPart, env: RuleEnv) => Finding;

const NPM_INSTALL = new Set([
  "install",
  "i",
  "in",
  "ins",
  "inst",
  "insta",
  "instal",
  "isnt",
  "isnta",
  "isntal",
  "isntall",
  "add",
  "ci",
  "clean-install",
  "ic",
  "install-clean",
  "isntall-clean",
  "install-test",
  "it",
  "install-ci-test",
  "cit",
  "update",
  "up",
  "upgrade",
  "udpate",
  "uninstall",
  "remove",
  "rm",
  "r",
  "un",
  "unlink",
  "audit",
  "outdated",
  "view",
  "v",
  "info",
  "show",
  "search",
  "s",
  "se",
  "find",
  "dedupe",
  "ddp",
  "fund",
  "init",
  "create",
  "innit",
  "doctor",
  "ping",
  "repo",
  "docs",
  "bugs",
  "home",
  "sbom",
  "rebuild",
  "rb",
  "link",
  "ln",
  "prune",
  "shrinkwrap",
]);
const NPM_PUBLISH = new Set([
  "publish",
  "unpublish",
  "deprecate",
  "undeprecate",
  "owner",
  "author",
  "access",
  "adduser",
  "add-user",
  "login",
  "logout",
  "token",
  "team",
  "org",
  "star",
  "unstar",
  "dist-tag",
  "dist-tags",
  "hook",
  "profile",
  "trust",
]);
const NPM_ALLOWED = new Set([
  "test",
  "t",
  "tst",
  "run",
  "run-script",
  "rum",
  "urn",
  "start",
  "stop",
  "restart",
  "ls",
  "list",
  "ll",
  "la",
  "prefix",
  "root",
  "bin",
  "help",
  "explain",
  "why",
  "query",
  "pack",
  "exec",
  "x",
  "help-search",
]);

const npmRule: Rule = (p, env) => {
  const sub = subcommand(p.words, 1, ["--prefix", "-w", "--workspace", "-C", "--userconfig", "--cache", "--registry", "--loglevel"]);
  if (!sub) return allowed(p, "pkg.run");
  const s = sub.word.text;
  if (NPM_PUBLISH.has(s)) return PUBLISH(p, "talks to the registry account");
  if (NPM_INSTALL.has(s)) return network(env, "pkg.install", `${q(p.text)} installs or looks up packages from the registry`);
  if (NPM_ALLOWED.has(s)) return allowed(p, "pkg.run");
  if (s === "config" || s === "c" || s === "get" || s === "set") {
    const op = p.words[sub.index + 1]?.text;
    if (s === "get" || op === "get" || op === "list" || op === "ls") return allowed(p, "pkg.run");
    return finding("ask", "pkg.manage", `${q(p.text)} changes npm's configuration, which needs the user's approval`);
  }
  if (s === "cache") {
    const op = p.words[sub.index + 1]?.text;
    return op === "ls" || op === "verify"
      ? allowed(p, "pkg.run")
      : finding("ask", "pkg.manage", `${q(p.text)} changes npm's cache, which needs the user's approval`);
  }
  if (s === "version") {
    return p.words.length > sub.index + 1
      ? finding("ask", "pkg.manage", `${q(p.text)} bumps the version and tags a commit, which needs the user's approval`)
      : allowed(p, "pkg.run");
  }
  if (s === "pkg")
    return p.words[sub.index + 1]?.text === "get"
      ? allowed(p, "pkg.run")
      : finding("ask", "pkg.manage", `${q(p.text)} edits package.json fields; use edit_file instead or ask the user`);
  return finding("ask", "pkg.manage", `${q(p.text)}: \`npm ${s}\` is not a subcommand the policy knows; it needs the user's approval`);
};

/** Tools commonly run with npx that are expected in the workspace's node_modules. */
const NPX_KNOWN = new Set([
  "vitest",
  "jest",
  "tsc",
  "tsx",
  "ts-node",
  "eslint",
  "prettier",
  "biome",
  "mocha",
  "vite",
  "esbuild",
  "rollup",
  "webpack",
  "c8",
  "nyc",
  "rimraf",
  "playwright",
  "typescript",
  "next",
  "nuxt",
  "astro",
  "svelte-check",
  "vue-tsc",
  "knip",
  "depcheck",
  "npm-run-all",
  "run-s",
  "run-p",
  "concurrently",
  "cross-env",
  "nodemon",
  "turbo",
  "nx",
  "lerna",
  "changeset",
  "tsup",
  "unbuild",
  "ava",
  "tap",
  "uvu",
]);

const npxRule: Rule = (p, env) => {
  // npx's own options end at the package name; what follows belongs to the tool.
  let name: string | null = null;
  for (let i = 1; i < p.words.length; i++) {
    const t = p.words[i]!.text;
    if (t === "-p" || t === "--package" || t.startsWith("--package=")) {
      return network(env, "pkg.download-run", `${q(p.text)} may download a package from the registry and run it`);
    }
    if (t === "-c" || t === "--call" || t.startsWith("--call=")) return allowed(p, "pkg.run");
    if (t === "--") {
      name = p.words[i + 1]?.text ?? null;
      break;
    }
    if (t.startsWith("-")) continue;
    name = t;
    break;
  }
  if (!name) return allowed(p, "pkg.run");
  if (NPX_KNOWN.has(name) || env.judge.binInWorkspace(name, p.cwd)) return allowed(p, "pkg.run");
  return network(env, "pkg.download-run", `${q(p.text)}: \`${name}\` is not installed in the workspace, so npx would download it from the registry and run it`);
};

function jsManagerRule(manager: "pnpm" | "yarn" | "bun"): Rule {
  const install: Record<string, string[]> = {
    pnpm: [
      "install",
      "i",
      "add",
      "update",
      "up",
      "upgrade",
      "remove",
      "rm",
      "uninstall",
      "un",
      "fetch",
      "import",
      "audit",
      "outdated",
      "create",
      "init",
      "dedupe",
      "link",
      "ln",
      "unlink",
      "rebuild",
      "rb",
      "prune",
      "patch",
      "patch-commit",
      "setup",
      "env",
      "self-update",
      "install-test",
      "it",
      "ci",
      "approve-builds",
    ],
    yarn: [
      "install",
      "add",
      "up",
      "upgrade",
      "upgrade-interactive",
      "remove",
      "create",
      "init",
      "import",
      "audit",
      "outdated",
      "dedupe",
      "link",
      "unlink",
      "set",
      "plugin",
      "info",
      "search",
      "generate-lock-entry",
      "global",
      "cache",
      "policies",
    ],
    bun: [
      "install",
      "i",
      "add",
      "a",
      "remove",
      "rm",
      "update",
      "upgrade",
      "link",
      "unlink",
      "create",
      "init",
      "c",
      "pm",
      "outdated",
      "audit",
      "patch",
      "patch-commit",
    ],
  };
  const download: Record<string, string[]> = { pnpm: ["dlx"], yarn: ["dlx"], bun: ["x"] };
  return (p, env) => {
    const sub = subcommand(p.words, 1, ["-C", "--dir", "--filter", "-F", "--cwd", "--workspace-root", "-w"]);
    if (!sub) {
      return manager === "yarn" ? network(env, "pkg.install", `${q(p.text)} installs the dependencies from the registry`) : allowed(p, "pkg.run");
    }
    const s = sub.word.text;
    if (s === "publish" || (manager === "yarn" && s === "npm" && ["publish", "login", "logout", "tag"].includes(p.words[sub.index + 1]?.text ?? ""))) {
      return PUBLISH(p, "publishes to the registry");
    }
    if (s === "login" || s === "logout") return PUBLISH(p, "changes registry credentials");
    if (download[manager]!.includes(s)) return network(env, "pkg.download-run", `${q(p.text)} downloads a package from the registry and runs it`);
    if (install[manager]!.includes(s)) return network(env, "pkg.install", `${q(p.text)} installs or looks up packages from the registry`);
    // Anything else is a built-in like test/run/exec/why or the name of a package.json script.
    return allowed(p, "pkg.run");
  };
}

export const JS_PACKAGE_SPECS: ProgramSpec[] = [
  { names: ["npm"], decide: npmRule, runs: (api) => runnerSubcommand(api, ["exec", "x"]) },
  { names: ["npx"], decide: npxRule, runs: (api) => runPackageCommand(api, 1) },
  { names: ["pnpm"], decide: jsManagerRule("pnpm"), runs: (api) => runnerSubcommand(api, ["exec", "dlx"]) },
  { names: ["yarn"], decide: jsManagerRule("yarn"), runs: (api) => runnerSubcommand(api, ["exec", "dlx"]) },
  { names: ["bun"], decide: jsManagerRule("bun"), runs: (api) => runnerSubcommand(api, ["x"]) },
  {
    names: ["bunx"],
    decide: (p, env) => network(env, "pkg.download-run", `${q(p.text)} may download a package from the registry and run it`),
    runs: (api) => runPackageCommand(api, 1),
  },
];
