/**
 * The default policy's knowledge of programs: which are allowed, which need approval and which are
 * refused (by program and subcommand), which of their arguments are files they write, and how to
 * find shell code hidden in their arguments (sed `e`, awk `system()`, `python3 -c "os.system(…)"`).
 */
import { analyzeFind, type CommandPart, type FindAnalysis, SHELLS, type ShellWord } from "./policy-parts.js";
import type { PathJudge, WriteKind } from "./policy-paths.js";

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

const f = (decision: PolicyDecision, rule: string, reason: string): Finding => ({ decision, rule, reason });
const q = (s: string) => `\`${s.length > 80 ? `${s.slice(0, 77)}…` : s}\``;

// ---- option parsing (GNU style: options may follow operands, long options may be abbreviated) ----

export interface Opts {
  short: Set<string>;
  long: string[];
  values: Map<string, ShellWord[]>;
  operands: ShellWord[];
}

/** Parses options of a command: `withArg.short` letters and `withArg.long` names take a value. */
export function getopt(words: ShellWord[], start: number, withArg: { short?: string; long?: string[] } = {}): Opts {
  const o: Opts = { short: new Set(), long: [], values: new Map(), operands: [] };
  const put = (k: string, v: ShellWord | undefined) => {
    if (!v) return;
    o.values.set(k, [...(o.values.get(k) ?? []), v]);
  };
  let i = start;
  for (; i < words.length; i++) {
    const w = words[i]!;
    const t = w.text;
    if (!w.literal || !t.startsWith("-") || t === "-") {
      o.operands.push(w);
      continue;
    }
    if (t === "--") {
      o.operands.push(...words.slice(i + 1));
      break;
    }
    if (t.startsWith("--")) {
      const eq = t.indexOf("=");
      const name = eq < 0 ? t.slice(2) : t.slice(2, eq);
      o.long.push(name);
      const full = withArg.long?.find((l) => l.startsWith(name) && name.length >= 2);
      if (eq >= 0) put(full ?? name, { ...w, raw: t.slice(eq + 1), text: t.slice(eq + 1), candidates: [{ text: t.slice(eq + 1), glob: false }] });
      else if (full) put(full, words[++i]);
      continue;
    }
    for (let k = 1; k < t.length; k++) {
      const c = t[k]!;
      o.short.add(c);
      if (withArg.short?.includes(c)) {
        const rest = t.slice(k + 1);
        if (rest) put(c, { ...w, raw: rest, text: rest, candidates: [{ text: rest, glob: false }] });
        else put(c, words[++i]);
        break;
      }
    }
  }
  return o;
}

/** True when a long option given on the command line is `name` or an abbreviation of it. */
export function hasLong(o: Opts, ...names: string[]): boolean {
  return o.long.some((l) => names.some((n) => n === l || (l.length >= 3 && n.startsWith(l))));
}

const val = (o: Opts, ...keys: string[]): ShellWord[] => keys.flatMap((k) => o.values.get(k) ?? []);

// ---- program lists ----

/** Programs that only read, compute or print (or whose writes are judged by path), allowed as they are. */
export const ALLOWED_PROGRAMS = [
  // shell builtins
  "cd", "pushd", "popd", "dirs", "pwd", "echo", "printf", "test", "[", "true", "false", ":", "export", "declare", "typeset",
  "local", "readonly", "unset", "set", "read", "mapfile", "readarray", "let", "return", "exit", "break", "continue",
  "shift", "getopts", "wait", "jobs", "fg", "bg", "disown", "umask", "ulimit", "times", "type", "help", "command",
  "builtin", "exec", "eval", "trap", "source", ".", "unalias", "caller", "compgen", "complete", "history",
  // wrappers (what they run is a part of its own)
  "env", "nohup", "nice", "timeout", "stdbuf", "ionice", "setsid", "time", "xargs", "watch", "flock",
  // files and text
  "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "sed", "awk", "gawk", "mawk", "nawk", "sort",
  "uniq", "cut", "tr", "diff", "cmp", "comm", "find", "fd", "tee", "mkdir", "touch", "cp", "mv", "rm", "rmdir", "unlink",
  "ln", "chmod", "truncate", "mktemp", "mkfifo", "dd", "tar", "gzip", "gunzip", "zcat", "bzip2", "bunzip2", "bzcat", "xz",
  "unxz", "xzcat", "zstd", "unzstd", "basename", "dirname", "realpath", "readlink", "jq", "file", "stat", "du", "df",
  "date", "nl", "paste", "join", "fold", "fmt", "column", "expand", "unexpand", "rev", "tac", "seq", "shuf", "od",
  "hexdump", "xxd", "strings", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum",
  "base64", "base32", "tree", "less", "more", "split", "which", "whereis", "sleep", "yes", "iconv", "diff3", "sdiff",
  "envsubst", "numfmt", "tsort", "csplit", "look", "man",
  // system information
  "id", "whoami", "groups", "uname", "hostname", "nproc", "free", "uptime", "printenv", "locale", "tty", "ps", "pgrep",
  "clear", "tput", "getconf", "arch", "lscpu",
  // JS/TS
  "node", "nodejs", "tsc", "tsx", "ts-node", "vitest", "jest", "mocha", "eslint", "prettier", "biome", "vite", "esbuild",
  "rollup", "webpack", "c8", "nyc", "corepack",
  // Python
  "python", "python3", "pytest", "py.test", "mypy", "ruff", "black", "isort", "flake8", "pylint", "pyright", "coverage",
  // Go, Rust, C
  "gofmt", "goimports", "golangci-lint", "staticcheck", "rustc", "rustfmt", "cargo-clippy", "clippy-driver",
  "make", "gmake", "cmake", "ninja", "gcc", "g++", "cc", "c++", "clang", "clang++", "pkg-config", "ld",
] as const;

const ALLOWED = new Set<string>(ALLOWED_PROGRAMS);

/** Privilege changes: refused. */
export const PRIVILEGE_PROGRAMS = ["sudo", "su", "doas", "pkexec", "runuser", "sudoedit", "setpriv", "newgrp", "sg"];
/** System administration (disks, mounts, namespaces, kernel, services, users, persistence): refused. */
export const ADMIN_PROGRAMS = [
  "mkfs", "mke2fs", "mkswap", "fdisk", "sfdisk", "cfdisk", "parted", "wipefs", "mount", "umount", "chroot", "nsenter",
  "unshare", "pivot_root", "switch_root", "setcap", "capsh", "insmod", "rmmod", "modprobe", "sysctl", "systemctl",
  "service", "shutdown", "reboot", "halt", "poweroff", "init", "telinit", "iptables", "ip6tables", "nft", "ufw",
  "crontab", "at", "batch", "useradd", "usermod", "userdel", "groupadd", "groupmod", "groupdel", "passwd", "chpasswd",
  "visudo", "losetup", "dmsetup", "cryptsetup", "swapon", "swapoff", "mknod", "chattr", "debugfs", "kexec", "killall5",
];
/** System package managers: need approval (they change the machine, not the workspace). */
export const SYSTEM_PACKAGE_PROGRAMS = ["apt", "apt-get", "aptitude", "dpkg", "yum", "dnf", "rpm", "apk", "brew", "snap", "flatpak", "pacman", "zypper", "port", "nix-env", "emerge"];
/** HTTP download tools: need approval unless the network is allowed. */
export const NETWORK_PROGRAMS = ["curl", "wget", "http", "https", "xh", "aria2c", "lftp", "ftp", "httpie"];
/** Remote shells and raw sockets: always need approval. */
export const REMOTE_PROGRAMS = ["ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat", "telnet", "mosh"];
/** Programs whose output is a download (for `… | sh`). */
export const DOWNLOADERS = new Set([...NETWORK_PROGRAMS, "fetch", "nc", "ncat", "netcat", "socat", "ssh"]);

const SHELL_NAMES = SHELLS;

/** `python3.12` → `python3`, `pip3.12` → `pip`, `gcc-13` → `gcc`, `mkfs.ext4` → `mkfs`. */
export function normalizeProgram(name: string): string {
  if (/^python\d+(\.\d+)*$/.test(name)) return "python3";
  if (/^pip\d*(\.\d+)*$/.test(name)) return "pip";
  if (/^(gcc|g\+\+|clang|clang\+\+|cc)-\d+(\.\d+)*$/.test(name)) return name.replace(/-\d.*$/, "");
  if (/^(mkfs|fsck)\./.test(name)) return "mkfs";
  return name;
}

/** Interpreters that run code from `-c`/`-e`, a script file, or standard input. */
export type InterpreterKind = "shell" | "python" | "node" | "perl" | "ruby" | "php";
export function interpreterKind(program: string): InterpreterKind | null {
  const p = normalizeProgram(program);
  if (SHELL_NAMES.has(p)) return "shell";
  if (p === "python" || p === "python3" || p === "pypy" || p === "pypy3") return "python";
  // bun, deno, tsx and ts-node take node's -e/-p/--eval/--print (deno: `deno eval CODE`).
  if (p === "node" || p === "nodejs" || p === "bun" || p === "deno" || p === "tsx" || p === "ts-node") return "node";
  if (p === "perl") return "perl";
  if (p === "ruby") return "ruby";
  if (p === "php") return "php";
  return null;
}

/** How an interpreter invocation gets its code. */
export interface InterpreterCall {
  inline: ShellWord[];
  /** The script file, when one is given. */
  script: ShellWord | null;
  /** Reads its program from standard input. */
  stdin: boolean;
  /** `python3 -m module`. */
  module: string | null;
}

export function interpreterCall(p: CommandPart, kind: InterpreterKind): InterpreterCall {
  const w = p.words;
  const out: InterpreterCall = { inline: [], script: null, stdin: false, module: null };
  const inlineFlags: Record<InterpreterKind, string> = { shell: "c", python: "c", node: "ep", perl: "eE", ruby: "e", php: "rR" };
  const argFlags: Record<InterpreterKind, string> = { shell: "oO", python: "mWX", node: "rC", perl: "IMmx", ruby: "IrCEe", php: "cdfzBE" };
  let i = 1;
  if (kind === "node" && normalizeProgram(p.program) === "deno") {
    // Only `deno eval [flags] CODE` runs inline code; deno's other subcommands take files or tasks.
    if (w[1]?.text !== "eval") {
      out.script = w[1] ?? null;
      return out;
    }
    const code = w.slice(2).find((x) => !x.literal || !x.text.startsWith("-"));
    if (code) out.inline.push(code);
    return out;
  }
  for (; i < w.length; i++) {
    const t = w[i]!.text;
    if (!w[i]!.literal) {
      out.script = w[i]!;
      return out;
    }
    if (t === "-" || t === "/dev/stdin") {
      out.stdin = true;
      return out;
    }
    if (t === "--") {
      out.script = w[i + 1] ?? null;
      if (!out.script) out.stdin = true;
      return out;
    }
    if (t.startsWith("--")) {
      const [name, value] = t.split(/=(.*)/s) as [string, string | undefined];
      if (kind === "node" && (name === "--eval" || name === "--print")) {
        const code = value !== undefined ? { ...w[i]!, text: value, raw: value } : w[++i];
        if (code) out.inline.push(code);
        continue;
      }
      if (kind === "node" && value === undefined && ["--require", "--import", "--loader", "--experimental-loader", "--input-type", "--conditions", "--env-file", "--title"].includes(name)) i++;
      if (kind === "shell" && ["--rcfile", "--init-file"].includes(name)) i++;
      continue;
    }
    if (t.startsWith("-") && t.length > 1) {
      const letters = t.slice(1);
      for (let k = 0; k < letters.length; k++) {
        const c = letters[k]!;
        if (inlineFlags[kind].includes(c)) {
          const rest = letters.slice(k + 1);
          // node never takes its code attached (`-e"x"` is a bad option, `-pe` is -p -e): always the next word.
          const code = rest && kind !== "shell" && kind !== "node" ? { ...w[i]!, text: rest, raw: rest } : w[++i];
          if (kind === "python" && c === "c") {
            if (code) out.inline.push(code);
            return out;
          }
          if (code) out.inline.push(code);
          break;
        }
        if (kind === "python" && c === "m") {
          const mod = letters.slice(k + 1) || w[++i]?.text || "";
          out.module = mod;
          return out;
        }
        if (argFlags[kind].includes(c)) {
          if (!letters.slice(k + 1)) i++;
          break;
        }
        if (kind === "shell" && c === "s") out.stdin = true;
      }
      if (out.inline.length && kind !== "node" && kind !== "perl" && kind !== "ruby") return out;
      continue;
    }
    if (out.inline.length) return out;
    out.script = w[i]!;
    return out;
  }
  if (!out.inline.length && !out.module) out.stdin = true;
  return out;
}

// ---- base rules: one decision per program (and subcommand) ----

type ProgramRule = (p: CommandPart, env: RuleEnv) => Finding;

const allowed = (p: CommandPart, rule = "program.allowed"): Finding => f("allow", rule, `${q(p.program)} is allowed`);

function network(env: RuleEnv, rule: string, reason: string): Finding {
  return env.allowNetwork ? f("allow", rule, `${reason}; the network is allowed for this run`) : f("ask", rule, `${reason}, which needs the user's approval (or run with the network allowed)`);
}

/** First non-option word at or after `start`, skipping values of `withArg` options; null if none. */
function subcommand(words: ShellWord[], start: number, withArg: string[] = []): { word: ShellWord; index: number } | null {
  for (let i = start; i < words.length; i++) {
    const w = words[i]!;
    const t = w.text;
    if (!w.literal) return { word: w, index: i };
    if (t === "--") return words[i + 1] ? { word: words[i + 1]!, index: i + 1 } : null;
    if (t.startsWith("-")) {
      if (withArg.includes(t)) i++;
      continue;
    }
    return { word: w, index: i };
  }
  return null;
}

const PUBLISH = (p: CommandPart, what: string) =>
  f("deny", "pkg.publish", `${q(p.text)} ${what}; publishing or changing registry accounts is outside a coding task`);

const NPM_INSTALL = new Set(["install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall", "add", "ci", "clean-install", "ic", "install-clean", "isntall-clean", "install-test", "it", "install-ci-test", "cit", "update", "up", "upgrade", "udpate", "uninstall", "remove", "rm", "r", "un", "unlink", "audit", "outdated", "view", "v", "info", "show", "search", "s", "se", "find", "dedupe", "ddp", "fund", "init", "create", "innit", "doctor", "ping", "repo", "docs", "bugs", "home", "sbom", "rebuild", "rb", "link", "ln", "prune", "shrinkwrap"]);
const NPM_PUBLISH = new Set(["publish", "unpublish", "deprecate", "undeprecate", "owner", "author", "access", "adduser", "add-user", "login", "logout", "token", "team", "org", "star", "unstar", "dist-tag", "dist-tags", "hook", "profile", "trust"]);
const NPM_ALLOWED = new Set(["test", "t", "tst", "run", "run-script", "rum", "urn", "start", "stop", "restart", "ls", "list", "ll", "la", "prefix", "root", "bin", "help", "explain", "why", "query", "pack", "exec", "x", "help-search"]);

const npmRule: ProgramRule = (p, env) => {
  const sub = subcommand(p.words, 1, ["--prefix", "-w", "--workspace", "-C", "--userconfig", "--cache", "--registry", "--loglevel"]);
  if (!sub) return allowed(p, "pkg.run");
  const s = sub.word.text;
  if (NPM_PUBLISH.has(s)) return PUBLISH(p, "talks to the registry account");
  if (NPM_INSTALL.has(s)) return network(env, "pkg.install", `${q(p.text)} installs or looks up packages from the registry`);
  if (NPM_ALLOWED.has(s)) return allowed(p, "pkg.run");
  if (s === "config" || s === "c" || s === "get" || s === "set") {
    const op = p.words[sub.index + 1]?.text;
    if (s === "get" || op === "get" || op === "list" || op === "ls") return allowed(p, "pkg.run");
    return f("ask", "pkg.manage", `${q(p.text)} changes npm's configuration, which needs the user's approval`);
  }
  if (s === "cache") {
    const op = p.words[sub.index + 1]?.text;
    return op === "ls" || op === "verify" ? allowed(p, "pkg.run") : f("ask", "pkg.manage", `${q(p.text)} changes npm's cache, which needs the user's approval`);
  }
  if (s === "version") {
    return p.words.length > sub.index + 1 ? f("ask", "pkg.manage", `${q(p.text)} bumps the version and tags a commit, which needs the user's approval`) : allowed(p, "pkg.run");
  }
  if (s === "pkg") return p.words[sub.index + 1]?.text === "get" ? allowed(p, "pkg.run") : f("ask", "pkg.manage", `${q(p.text)} edits package.json fields; use edit_file instead or ask the user`);
  return f("ask", "pkg.manage", `${q(p.text)}: \`npm ${s}\` is not a subcommand the policy knows; it needs the user's approval`);
};

/** Tools commonly run with npx that are expected in the workspace's node_modules. */
const NPX_KNOWN = new Set(["vitest", "jest", "tsc", "tsx", "ts-node", "eslint", "prettier", "biome", "mocha", "vite", "esbuild", "rollup", "webpack", "c8", "nyc", "rimraf", "playwright", "typescript", "next", "nuxt", "astro", "svelte-check", "vue-tsc", "knip", "depcheck", "npm-run-all", "run-s", "run-p", "concurrently", "cross-env", "nodemon", "turbo", "nx", "lerna", "changeset", "tsup", "unbuild", "ava", "tap", "uvu"]);

const npxRule: ProgramRule = (p, env) => {
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

function jsManagerRule(manager: "pnpm" | "yarn" | "bun"): ProgramRule {
  const install: Record<string, string[]> = {
    pnpm: ["install", "i", "add", "update", "up", "upgrade", "remove", "rm", "uninstall", "un", "fetch", "import", "audit", "outdated", "create", "init", "dedupe", "link", "ln", "unlink", "rebuild", "rb", "prune", "patch", "patch-commit", "setup", "env", "self-update", "install-test", "it", "ci", "approve-builds"],
    yarn: ["install", "add", "up", "upgrade", "upgrade-interactive", "remove", "create", "init", "import", "audit", "outdated", "dedupe", "link", "unlink", "set", "plugin", "info", "search", "generate-lock-entry", "global", "cache", "policies"],
    bun: ["install", "i", "add", "a", "remove", "rm", "update", "upgrade", "link", "unlink", "create", "init", "c", "pm", "outdated", "audit", "patch", "patch-commit"],
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

const pipRule: ProgramRule = (p, env) => pipSub(p, env, subcommand(p.words, 1, ["--python", "--cache-dir", "--log"])?.word.text ?? null);

function pipSub(p: CommandPart, env: RuleEnv, s: string | null): Finding {
  if (s === null || ["list", "show", "freeze", "check", "help", "debug", "inspect", "--version", "-V", "hash", "cache"].includes(s)) return allowed(p, "pkg.run");
  if (["install", "download", "wheel", "uninstall", "index", "search", "lock"].includes(s)) {
    return network(env, "pkg.install", `${q(p.text)} installs or fetches Python packages`);
  }
  return f("ask", "pkg.manage", `${q(p.text)} changes pip's configuration or the environment, which needs the user's approval`);
}

const pythonRule: ProgramRule = (p, env) => {
  const call = interpreterCall(p, "python");
  if (call.module === "pip" || call.module === "ensurepip") {
    const i = p.words.findIndex((w) => w.text === "pip" || w.text === "-mpip" || w.text === "ensurepip" || w.text === "-mensurepip");
    return pipSub(p, env, call.module === "ensurepip" ? "install" : (subcommand(p.words, i + 1)?.word.text ?? null));
  }
  return allowed(p);
};

const pyToolRule = (tool: "uv" | "poetry" | "pipenv" | "pdm"): ProgramRule => (p, env) => {
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

const cargoRule: ProgramRule = (p, env) => {
  const sub = subcommand(p.words, 1, ["--manifest-path", "-Z", "--config", "--color", "-C"]);
  if (!sub) return allowed(p);
  const s = sub.word.text;
  if (s.startsWith("+")) return allowed(p);
  if (["publish", "yank", "owner", "login", "logout"].includes(s)) return PUBLISH(p, "talks to the crates.io account");
  if (["install", "uninstall", "add", "remove", "update", "fetch", "search", "vendor", "generate-lockfile", "info"].includes(s)) {
    return network(env, "pkg.install", `${q(p.text)} fetches or changes crates`);
  }
  const known = ["build", "b", "check", "c", "test", "t", "run", "r", "clippy", "fmt", "doc", "d", "bench", "clean", "tree", "metadata", "new", "init", "version", "help", "--version", "-V", "--help", "-h", "locate-project", "pkgid", "verify-project", "read-manifest", "rustc", "rustdoc", "nextest", "llvm-cov", "expand", "fix", "package", "miri", "report", "config"];
  return known.includes(s) ? allowed(p) : f("ask", "program.unknown", `${q(p.text)}: \`cargo ${s}\` runs a cargo plugin the policy does not know; it needs the user's approval`);
};

const goRule: ProgramRule = (p, env) => {
  const sub = subcommand(p.words, 1);
  if (!sub) return allowed(p);
  const s = sub.word.text;
  if (s === "get" || s === "install") return network(env, "pkg.install", `${q(p.text)} downloads and installs Go modules`);
  if (s === "mod" && p.words[sub.index + 1]?.text === "download") return network(env, "pkg.install", `${q(p.text)} downloads Go modules`);
  if (s === "env" && p.words.slice(sub.index + 1).some((w) => w.text === "-w" || w.text === "-u")) {
    return f("ask", "pkg.manage", `${q(p.text)} changes the Go environment of the user, which needs approval`);
  }
  if (s === "run" && p.words.slice(sub.index + 1).some((w) => /@/.test(w.text) && !w.text.startsWith("-"))) {
    return network(env, "pkg.download-run", `${q(p.text)} downloads a module version and runs it`);
  }
  return allowed(p);
};

const rustupRule: ProgramRule = (p, env) => {
  const sub = subcommand(p.words, 1);
  const s = sub?.word.text;
  const next = sub ? p.words[sub.index + 1]?.text : undefined;
  if (!s || ["show", "which", "--version", "-V", "help", "--help", "doc"].includes(s) || next === "list") return allowed(p);
  return network(env, "pkg.install", `${q(p.text)} installs or changes Rust toolchains`);
};

const playwrightRule: ProgramRule = (p, env) => {
  const s = subcommand(p.words, 1)?.word.text;
  return s === "install" || s === "install-deps" ? network(env, "pkg.install", `${q(p.text)} downloads browsers`) : allowed(p);
};

// -- git --

const GIT_READ = new Set(["status", "diff", "log", "show", "blame", "annotate", "rev-parse", "ls-files", "ls-tree", "cat-file", "describe", "shortlog", "grep", "merge-base", "name-rev", "rev-list", "show-ref", "for-each-ref", "check-ignore", "check-attr", "check-ref-format", "check-mailmap", "count-objects", "version", "help", "diff-tree", "diff-files", "diff-index", "whatchanged", "var", "range-diff", "show-branch", "cherry", "verify-commit", "verify-tag", "fsck", "archive", "get-tar-commit-id", "column", "stripspace"]);
const GIT_NETWORK = new Set(["fetch", "pull", "clone", "ls-remote", "submodule"]);
const GIT_WRITE = new Set(["checkout", "switch", "restore", "reset", "merge", "rebase", "cherry-pick", "revert", "rm", "mv", "clean", "am", "apply", "notes", "gc", "prune", "repack", "bisect", "init", "update-index", "update-ref", "symbolic-ref", "filter-branch", "filter-repo", "replace", "commit-tree", "write-tree", "hash-object", "mktag", "mktree", "read-tree", "checkout-index", "sparse-checkout", "maintenance", "lfs", "format-patch", "difftool", "mergetool", "citool", "gui", "pack-refs", "commit-graph", "multi-pack-index", "bundle", "fast-import", "unpack-objects", "merge-file", "merge-tree", "rerere", "backfill"]);
const BRANCH_LIST_FLAGS = new Set(["-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l", "--show-current", "-i", "--ignore-case", "--no-color", "--color", "--column", "--no-column", "--no-abbrev", "-q", "--quiet", "--omit-empty"]);
const BRANCH_LIST_VALUE = new Set(["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"]);

const gitRule: ProgramRule = (p, env) => {
  const w = p.words;
  let i = 1;
  for (; i < w.length; i++) {
    const t = w[i]!.text;
    if (!w[i]!.literal) return f("ask", "git.unknown", `${q(p.text)}: the git options are computed at run time, so what it does cannot be checked`);
    if (!t.startsWith("-")) break;
    if (t === "-c" || t.startsWith("--config-env") || /^-c.+/.test(t)) {
      return f("deny", "git.config-override", `${q(p.text)} overrides git configuration on the command line (-c can point core.hooksPath, core.sshCommand, aliases or pagers at any program); run git without -c`);
    }
    if (t.startsWith("--exec-path=")) return f("deny", "git.config-override", `${q(p.text)} makes git run its helpers from another directory; run git without --exec-path`);
    if (t === "-C" || t.startsWith("--git-dir") || t.startsWith("--work-tree")) {
      const inline = t.includes("=") ? t.slice(t.indexOf("=") + 1) : null;
      const dir = inline !== null ? inline : w[++i]?.text;
      const d = w[i];
      if (dir === undefined || !d?.literal) return f("ask", "git.outside", `${q(p.text)}: the repository location is computed at run time`);
      const bases = dir.startsWith("/") ? ["/"] : p.cwd;
      if (!bases || bases.some((b) => !env.judge.isInside(env.judge.physical(b, dir)))) {
        return f("ask", "git.outside", `${q(p.text)} works on a repository outside the workspace, which needs the user's approval`);
      }
      continue;
    }
    if (["--namespace", "--super-prefix", "--list-cmds", "--attr-source"].includes(t)) i++;
  }
  const sub = w[i]?.text;
  if (sub === undefined) return allowed(p, "git.read");
  const args = w.slice(i + 1).map((x) => x.text);
  const readOnly = (why = "reads the repository") => f("allow", "git.read", `${q(`git ${sub}`)} ${why}`);
  const write = () =>
    f("ask", "git.write", `${q(p.text)} changes the working tree, branches or history beyond \`git add\`/\`git commit\`; it needs the user's approval`);
  switch (sub) {
    case "add":
    case "stage":
    case "commit":
      // .git is read-only to every command (git-guard.ts): the git_commit tool does this on the host.
      return f("deny", "git.commit", `${q(`git ${sub}`)} cannot work here: the repository is read-only to commands. Use the git_commit tool, which stages and commits for you`);
    case "push":
    case "send-email":
    case "request-pull":
      if (sub === "request-pull") return readOnly();
      return f("deny", "git.push", `${q(p.text)} publishes to a remote; pushing is left to the user. Commit locally and report what to push`);
    case "config": {
      const reads = ["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list", "--show-origin", "--show-scope", "--name-only", "--null", "-z", "--type", "--default", "--global", "--local", "--system", "--worktree", "--file", "-f", "--includes", "--no-includes"];
      const writes = ["--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit", "set", "unset", "rename-section", "remove-section", "edit"];
      const operands = args.filter((a) => !a.startsWith("-"));
      if (args.some((a) => writes.includes(a) || a.startsWith("--edit"))) break;
      if (args.some((a) => ["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list"].includes(a)) || (operands.length === 1 && args.every((a) => !a.startsWith("-") || reads.includes(a)))) {
        return readOnly("reads the configuration");
      }
      break;
    }
    case "remote": {
      const op = args.find((a) => !a.startsWith("-"));
      if (op === undefined || op === "get-url") return readOnly();
      if (["add", "set-url", "rename", "remove", "rm"].includes(op)) {
        return f("deny", "git.remote", `${q(p.text)} changes where the repository fetches from and pushes to; leave remotes to the user`);
      }
      return network(env, "git.network", `${q(p.text)} contacts a remote repository`);
    }
    case "branch": {
      for (let k = 0; k < args.length; k++) {
        const a = args[k]!;
        if (BRANCH_LIST_VALUE.has(a)) {
          k++;
          continue;
        }
        if (BRANCH_LIST_FLAGS.has(a) || /^--(sort|format|contains|no-contains|merged|no-merged|points-at|color|column|abbrev)=/.test(a)) continue;
        if (!a.startsWith("-") && (args.includes("--list") || args.includes("-l"))) continue;
        return write();
      }
      return readOnly("lists branches");
    }
    case "tag": {
      if (args.length === 0 || args.some((a) => a === "-l" || a === "--list") || args.every((a) => /^(-n\d*|--(contains|no-contains|points-at|merged|no-merged|sort|format|column|no-column|color)(=.*)?|-i|--ignore-case)$/.test(a))) {
        return readOnly("lists tags");
      }
      return write();
    }
    case "stash": {
      const op = args[0];
      return op === "list" || op === "show" ? readOnly() : write();
    }
    case "worktree":
      return args[0] === "list" ? readOnly() : write();
    case "reflog": {
      const op = args.find((a) => !a.startsWith("-"));
      return !op || op === "show" || op === "exists" || !["expire", "delete", "drop", "write"].includes(op) ? readOnly() : write();
    }
    case "grep":
      if (args.some((a) => a === "-O" || a.startsWith("-O") || a.startsWith("--open-files-in-pager"))) {
        return f("ask", "git.exec", `${q(p.text)} opens the matches with a program named in the command; it needs the user's approval`);
      }
      return readOnly("searches the repository");
    case "hook":
      return f("ask", "git.exec", `${q(p.text)} runs repository hooks directly; it needs the user's approval`);
    default:
      if (GIT_READ.has(sub)) return readOnly();
      if (GIT_NETWORK.has(sub)) {
        if (sub === "submodule" && (args[0] === undefined || args[0] === "status" || args[0] === "summary" || args[0] === "foreach")) {
          if (args[0] === "foreach") return f("ask", "git.exec", `${q(p.text)} runs a command in every submodule; it needs the user's approval`);
          return readOnly();
        }
        return network(env, "git.network", `${q(p.text)} contacts a remote repository`);
      }
      if (GIT_WRITE.has(sub)) return write();
      return f("ask", "git.unknown", `${q(p.text)}: \`git ${sub}\` is not a git command the policy knows (it may be an alias); it needs the user's approval`);
  }
  return f("deny", "git.config", `${q(p.text)} changes git configuration (hooks, pagers, credentials and aliases live there); leave configuration to the user`);
};

// -- shell builtins with a twist --

const shoptRule: ProgramRule = (p) => {
  const set = p.argv.includes("-s") || p.argv.some((a) => /^-[a-z]*s/.test(a));
  const bad = p.argv.slice(1).filter((a) => ["expand_aliases", "dotglob", "extdebug", "cdable_vars", "globskipdots"].includes(a));
  if (set && bad.length && !(bad.length === 1 && bad[0] === "globskipdots")) {
    return f("deny", "shell.shopt", `${q(p.text)} changes how later commands are expanded (${bad.join(", ")}), which the policy relies on; leave these options alone`);
  }
  return allowed(p);
};

const hashRule: ProgramRule = (p) =>
  p.argv.some((a) => /^-[a-z]*p/.test(a))
    ? f("deny", "shell.hash", `${q(p.text)} makes a command name run a different program; call programs by their own names`)
    : allowed(p);

const killRule: ProgramRule = (p) => {
  const w = p.words;
  let i = 1;
  if (w[i]?.text === "-s" || w[i]?.text === "-n") i += 2;
  else if (w[i]?.text === "-l" || w[i]?.text === "-L") return allowed(p);
  else if (w[i]?.literal && w[i]!.text.startsWith("-") && w[i]!.text !== "--") i++;
  if (w[i]?.text === "--") i++;
  for (const t of w.slice(i)) {
    if (t.literal && (t.text === "-1" || t.text === "1")) {
      return f("deny", "kill.all", `${q(p.text)} signals every process (or init); kill only the processes this task started, by their pid`);
    }
    if (/\$\{?PPID\}?/.test(t.raw)) {
      return f("deny", "kill.all", `${q(p.text)} signals the process that runs the agent; kill only the processes this task started`);
    }
  }
  return allowed(p);
};

const aliasRule: ProgramRule = (p) =>
  p.argv.length > 1
    ? f("ask", "shell.alias", `${q(p.text)} defines an alias, which can make a command name run something else; call the commands directly`)
    : allowed(p);

/** Rules by program (after normalizeProgram). Programs not here fall back to the lists above, then to the policy default. */
export const PROGRAM_RULES: Record<string, ProgramRule> = {
  git: gitRule,
  npm: npmRule,
  npx: npxRule,
  pnpm: jsManagerRule("pnpm"),
  yarn: jsManagerRule("yarn"),
  bun: jsManagerRule("bun"),
  bunx: (p, env) => network(env, "pkg.download-run", `${q(p.text)} may download a package from the registry and run it`),
  pip: pipRule,
  pipx: (p, env) => (["list", "--version"].includes(p.argv[1] ?? "") ? allowed(p, "pkg.run") : network(env, "pkg.install", `${q(p.text)} installs Python applications`)),
  python: pythonRule,
  python3: pythonRule,
  uv: pyToolRule("uv"),
  uvx: (p, env) => network(env, "pkg.download-run", `${q(p.text)} downloads a tool and runs it`),
  poetry: pyToolRule("poetry"),
  pipenv: pyToolRule("pipenv"),
  pdm: pyToolRule("pdm"),
  cargo: cargoRule,
  go: goRule,
  rustup: rustupRule,
  playwright: playwrightRule,
  shopt: shoptRule,
  hash: hashRule,
  kill: killRule,
  alias: aliasRule,
  rimraf: (p) => allowed(p),
  twine: (p) => (p.argv[1] === "upload" ? PUBLISH(p, "uploads to the package index") : allowed(p)),
};

/** The base decision for a program by name: the part-level rules above, then the lists. */
export function programDecision(p: CommandPart, env: RuleEnv): Finding | null {
  const name = normalizeProgram(p.program);
  if (PRIVILEGE_PROGRAMS.includes(name)) {
    return f("deny", "priv.escalation", `${q(p.text)}: \`${p.program}\` changes user or privileges, which the sandbox does not allow; run the command without it, on files inside the workspace`);
  }
  if (ADMIN_PROGRAMS.includes(name)) {
    return f("deny", "system.admin", `${q(p.text)}: \`${p.program}\` administers the machine (disks, mounts, namespaces, services, users or scheduled jobs), which is outside a coding task`);
  }
  if (SYSTEM_PACKAGE_PROGRAMS.includes(name)) {
    return f("ask", "pkg.system", `${q(p.text)} changes the system's packages; ask the user to install what is missing, or use a project-local install`);
  }
  if (NETWORK_PROGRAMS.includes(name)) return network(env, "net.tool", `${q(p.text)} uses the network`);
  if (REMOTE_PROGRAMS.includes(name)) {
    return f("ask", "net.remote", `${q(p.text)} opens a remote shell or raw connection, which needs the user's approval`);
  }
  const rule = PROGRAM_RULES[name];
  if (rule) return rule(p, env);
  if (ALLOWED.has(name) || SHELL_NAMES.has(name)) return allowed(p);
  return null;
}

// ---- what a command writes ----

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

/** Compilers and tools whose output options name files or directories they write. */
const OUTPUT_OPTIONS: Record<string, { short?: string; long?: string[] }> = {
  tsc: { long: ["outDir", "outFile", "declarationDir", "tsBuildInfoFile"] },
  esbuild: { long: ["outfile", "outdir"] },
  gcc: { short: "o" },
  "g++": { short: "o" },
  cc: { short: "o" },
  "c++": { short: "o" },
  clang: { short: "o" },
  "clang++": { short: "o" },
  ld: { short: "o" },
  rustc: { short: "o", long: ["out-dir"] },
  cargo: { long: ["target-dir", "out-dir", "artifact-dir"] },
  vitest: { long: ["outputFile"] },
  jest: { long: ["outputFile", "coverageDirectory"] },
  eslint: { short: "o", long: ["output-file", "cache-location"] },
  pytest: { long: ["junitxml", "junit-xml", "basetemp"] },
  sort: { short: "o", long: ["output"] },
  time: { short: "o", long: ["output"] },
  vite: { long: ["outDir"] },
  rollup: { short: "o", long: ["file", "dir"] },
  webpack: { short: "o", long: ["output-path", "output"] },
};

/** Files and directories a command writes, by what the program is known to do with its arguments. */
export function writeTargets(p: CommandPart): WriteTarget[] {
  const name = normalizeProgram(p.program);
  const w = p.words;
  const out: WriteTarget[] = [];
  const each = (ws: ShellWord[], kind: WriteKind = {}, rm = false) => {
    for (const x of ws) out.push({ word: x, kind, rm });
  };
  switch (name) {
    case "rm": {
      const o = getopt(w, 1);
      const recursive = o.short.has("r") || o.short.has("R") || hasLong(o, "recursive");
      each(o.operands, { delete: true, recursive }, true);
      break;
    }
    case "rimraf":
      each(getopt(w, 1).operands, { delete: true, recursive: true }, true);
      break;
    case "rmdir":
    case "unlink":
    case "shred":
      each(getopt(w, 1).operands, { delete: true }, true);
      break;
    case "mv":
    case "cp": {
      const o = getopt(w, 1, { short: "tS", long: ["target-directory", "suffix", "backup", "reflink", "sparse", "preserve", "no-preserve", "context"] });
      const recursive = name === "mv" || o.short.has("r") || o.short.has("R") || o.short.has("a") || hasLong(o, "recursive", "archive");
      const target = val(o, "t", "target-directory")[0];
      const ops = [...o.operands];
      const dest = target ?? (o.short.has("T") || hasLong(o, "no-target-directory") ? ops.pop() : ops.length > 1 ? ops.pop() : undefined);
      if (name === "mv") each(ops, { delete: true, recursive: true }, false);
      if (dest) out.push({ word: dest, kind: {}, sources: ops, recursiveInto: recursive });
      break;
    }
    case "ln": {
      const o = getopt(w, 1, { short: "tS", long: ["target-directory", "suffix", "backup"] });
      const target = val(o, "t", "target-directory")[0];
      const ops = o.operands;
      if (target) out.push({ word: target, kind: {}, sources: ops });
      else if (ops.length === 1) out.push({ word: { ...ops[0]!, candidates: ops[0]!.candidates?.map((c) => ({ text: c.text.replace(/.*\//, "") || ".", glob: c.glob })) ?? null }, kind: {} });
      else if (ops.length === 2 && !o.short.has("T") && !hasLong(o, "no-target-directory")) out.push({ word: ops[1]!, kind: {}, sources: [ops[0]!] });
      else if (ops.length >= 2) out.push({ word: ops[ops.length - 1]!, kind: {}, sources: ops.slice(0, -1) });
      break;
    }
    case "touch":
      each(getopt(w, 1, { short: "rdt", long: ["reference", "date", "time"] }).operands);
      break;
    case "mkdir":
    case "mkfifo":
      each(getopt(w, 1, { short: "mZ", long: ["mode", "context"] }).operands);
      break;
    case "truncate":
      each(getopt(w, 1, { short: "sr", long: ["size", "reference"] }).operands);
      break;
    case "tee":
      each(getopt(w, 1, { long: ["output-error"] }).operands);
      break;
    case "chmod":
    case "chown":
    case "chgrp": {
      const o = getopt(w, 1, { long: ["reference", "from"] });
      const recursive = o.short.has("R") || hasLong(o, "recursive");
      // chmod -x / chmod -w look like options but are modes.
      const modeLike = [...o.short].every((c) => "rwxXstugoa".includes(c)) && !o.short.has("R") && name === "chmod" && o.operands.length === 1;
      const ops = val(o, "reference").length || modeLike ? o.operands : o.operands.slice(1);
      each(ops, { recursive });
      break;
    }
    case "mktemp": {
      const o = getopt(w, 1, { short: "p", long: ["tmpdir", "suffix"] });
      if (!o.short.has("t") && !hasLong(o, "tmpdir") && !val(o, "p").length) each(o.operands);
      each(val(o, "p", "tmpdir"));
      break;
    }
    case "dd":
      for (const x of w.slice(1)) {
        if (x.text.startsWith("of=")) {
          const t = x.text.slice(3);
          out.push({ word: { ...x, text: t, raw: t, candidates: x.candidates?.map((c) => ({ text: c.text.replace(/^of=/, ""), glob: c.glob })) ?? null }, kind: {} });
        }
      }
      break;
    case "sed": {
      const o = getopt(w, 1, { short: "efl", long: ["expression", "file", "line-length"] });
      if (o.short.has("i") || hasLong(o, "in-place")) {
        const files = val(o, "e", "expression", "f", "file").length ? o.operands : o.operands.slice(1);
        each(files);
      }
      for (const s of sedScripts(p)) for (const file of scanSed(s.text).writes) out.push({ word: { ...s, text: file, raw: file, literal: s.literal, candidates: s.literal ? [{ text: file, glob: false }] : null }, kind: {} });
      break;
    }
    case "awk":
    case "gawk":
    case "mawk":
    case "nawk": {
      const a = awkCall(p);
      if (a.inplace) each(a.files);
      if (a.program?.literal) {
        for (const m of a.program.text.matchAll(/>>?\s*"([^"\\]+)"/g)) {
          if (m[1] === "/dev/stderr" || m[1] === "/dev/stdout") continue;
          out.push({ word: { ...a.program, text: m[1]!, raw: m[1]!, candidates: [{ text: m[1]!, glob: false }] }, kind: {} });
        }
      }
      break;
    }
    case "gzip":
    case "gunzip":
    case "bzip2":
    case "bunzip2":
    case "xz":
    case "unxz":
    case "zstd":
    case "unzstd": {
      const o = getopt(w, 1, { short: "S", long: ["suffix"] });
      if (!(o.short.has("c") || o.short.has("l") || o.short.has("t") || hasLong(o, "stdout", "to-stdout", "list", "test"))) each(o.operands);
      break;
    }
    case "uniq": {
      const o = getopt(w, 1, { short: "fsw", long: ["skip-fields", "skip-chars", "check-chars", "group", "all-repeated"] });
      if (o.operands[1]) each([o.operands[1]]);
      break;
    }
    case "split":
    case "csplit": {
      const o = getopt(w, 1, { short: "abCdflnt", long: ["prefix", "suffix-length", "bytes", "line-bytes", "lines", "number", "additional-suffix", "numeric-suffixes", "hex-suffixes", "separator", "suffix-format", "digits"] });
      const prefix = name === "split" ? o.operands[1] : val(o, "f", "prefix")[0];
      each(prefix ? [prefix] : [literal(name === "split" ? "x" : "xx")]);
      break;
    }
    case "tar": {
      const t = tarCall(p);
      if (t.mode === "create" && t.archive && t.archive.text !== "-") each([t.archive]);
      if (t.mode === "extract") out.push({ word: t.directory ?? literal("."), kind: {} });
      break;
    }
    case "curl": {
      const o = getopt(w, 1, { short: "oDcKdHXuAeEwTxbrzYyCm", long: ["output", "dump-header", "cookie-jar", "trace", "trace-ascii", "stderr", "output-dir", "libcurl", "etag-save", "hsts", "alt-svc"] });
      each(val(o, "o", "output", "D", "dump-header", "c", "cookie-jar", "trace", "trace-ascii", "stderr", "libcurl", "etag-save"));
      const dir = val(o, "output-dir")[0];
      if (o.short.has("O") || hasLong(o, "remote-name", "remote-name-all") || o.short.has("J")) out.push({ word: dir ? joinWord(dir, "file") : literal("./download"), kind: {} });
      break;
    }
    case "wget": {
      const o = getopt(w, 1, { short: "OoaPiBeTtwUY", long: ["output-document", "output-file", "append-output", "directory-prefix", "input-file", "base", "execute"] });
      each(val(o, "O", "output-document", "o", "output-file", "a", "append-output"));
      const dir = val(o, "P", "directory-prefix")[0];
      if (!val(o, "O", "output-document").length) out.push({ word: dir ? joinWord(dir, "file") : literal("./download"), kind: {} });
      break;
    }
    case "git": {
      const o = getopt(w, 1, { short: "o", long: ["output", "output-directory"] });
      const sub = o.operands[0]?.text;
      if (sub === "archive" || sub === "format-patch" || sub === "diff" || sub === "log" || sub === "show") each(val(o, "o", "output", "output-directory"));
      break;
    }
    case "find": {
      const fa = findAnalysis(p);
      each(fa.writes);
      if (fa.delete) {
        for (const s of fa.starts) out.push({ word: { ...s, candidates: null, below: { bases: s.candidates, names: fa.names } }, kind: { delete: true }, rm: true });
      }
      break;
    }
    case "prettier":
      if (p.argv.some((a) => a === "--write" || a === "-w")) each(getopt(w, 1, { long: ["config", "ignore-path", "plugin", "parser", "log-level", "cache-location", "stdin-filepath"] }).operands);
      break;
    case "eslint":
      if (p.argv.some((a) => a.startsWith("--fix"))) each(getopt(w, 1, { short: "cfo", long: ["config", "format", "output-file", "ext", "rule", "plugin", "parser", "resolve-plugins-relative-to", "rulesdir", "ignore-path", "ignore-pattern", "cache-location", "max-warnings"] }).operands);
      break;
    case "black":
    case "isort":
    case "rustfmt":
      each(getopt(w, 1, { short: "lt", long: ["config", "line-length", "target-version", "include", "exclude", "extend-exclude", "settings-path", "edition"] }).operands.filter((x) => x.text !== "-"));
      break;
    case "gofmt":
    case "goimports":
      if (p.argv.includes("-w")) each(getopt(w, 1, { short: "r", long: [] }).operands);
      break;
    case "ruff": {
      const sub = p.argv[1];
      if (sub === "format" || (sub === "check" && p.argv.some((a) => a === "--fix"))) each(getopt(w, 2, { long: ["config", "select", "ignore", "extend-select", "target-version", "line-length", "exclude", "extend-exclude"] }).operands);
      break;
    }
    case "python":
    case "python3": {
      const call = interpreterCall(p, "python");
      if (call.module === "venv" || call.module === "virtualenv") {
        const i = p.words.findIndex((x) => x.text === "venv" || x.text === "-mvenv" || x.text === "virtualenv" || x.text === "-mvirtualenv");
        each(getopt(w, i + 1, { long: ["prompt"] }).operands);
      }
      break;
    }
  }
  const opt = OUTPUT_OPTIONS[name];
  if (opt) {
    const o = getopt(w, 1, opt);
    for (const k of [...(opt.short ?? ""), ...(opt.long ?? [])]) each(val(o, k));
    // vitest's --outputFile.json=x form
    for (const x of w) if (x.literal && /^--outputFile\.[a-z-]+=/.test(x.text)) each([{ ...x, text: x.text.replace(/^[^=]*=/, ""), candidates: [{ text: x.text.replace(/^[^=]*=/, ""), glob: false }] }]);
  }
  if (name === "go") {
    const sub = p.argv[1];
    if (sub === "build" || sub === "test") each(val(getopt(w, 2, { short: "o", long: [] }), "o"));
  }
  return out;
}

function literal(text: string): ShellWord {
  return { raw: text, text, literal: true, glob: false, candidates: [{ text, glob: false }], substitutions: [] };
}

function joinWord(dir: ShellWord, name: string): ShellWord {
  return { ...dir, text: `${dir.text}/${name}`, candidates: dir.candidates?.map((c) => ({ text: `${c.text}/${name}`, glob: c.glob })) ?? null };
}

// -- tar --

export interface TarCall {
  mode: "create" | "extract" | "list" | null;
  archive: ShellWord | null;
  directory: ShellWord | null;
  /** Options that run programs: --to-command, --checkpoint-action=exec, -I/--use-compress-program, --rsh-command, -F/--info-script. */
  runs: string[];
  absoluteNames: boolean;
}

export function tarCall(p: CommandPart): TarCall {
  const out: TarCall = { mode: null, archive: null, directory: null, runs: [], absoluteNames: false };
  const w = p.words;
  const withArg = "fCIFTXbgHKLNVg";
  const letter = (c: string, next: () => ShellWord | undefined, attached: string | null) => {
    if (c === "c" || c === "r" || c === "u" || c === "A") out.mode = "create";
    else if (c === "x") out.mode = "extract";
    else if (c === "t") out.mode ??= "list";
    else if (c === "P") out.absoluteNames = true;
    if (!withArg.includes(c)) return false;
    const v = attached !== null ? literal(attached) : next();
    if (c === "f") out.archive = v ?? null;
    if (c === "C") out.directory = v ?? null;
    if (c === "I" || c === "F") out.runs.push(`-${c} ${v?.text ?? ""}`);
    return true;
  };
  for (let i = 1; i < w.length; i++) {
    const x = w[i]!;
    const t = x.text;
    if (!x.literal) continue;
    if (i === 1 && !t.startsWith("-")) {
      // Old-style bundled letters: `tar xzf a.tgz -C dir` (each letter taking a value takes the next word).
      for (const c of t) letter(c, withArg.includes(c) ? () => w[++i] : () => undefined, null);
      continue;
    }
    if (t.startsWith("--")) {
      const [name, value] = t.split(/=(.*)/s) as [string, string | undefined];
      const v = () => (value !== undefined ? literal(value) : w[++i]);
      if (name === "--create" || name === "--append" || name === "--update" || name === "--catenate" || name === "--concatenate") out.mode = "create";
      else if (name === "--extract" || name === "--get") out.mode = "extract";
      else if (name === "--list") out.mode ??= "list";
      else if (name === "--file") out.archive = v() ?? null;
      else if (name === "--directory") out.directory = v() ?? null;
      else if (name === "--absolute-names") out.absoluteNames = true;
      else if (["--to-command", "--use-compress-program", "--rsh-command", "--info-script", "--new-volume-script"].includes(name)) out.runs.push(`${name}=${v()?.text ?? ""}`);
      else if (name === "--checkpoint-action" && /exec/.test(value ?? w[i + 1]?.text ?? "")) out.runs.push(`${name}=${value ?? ""}`);
      continue;
    }
    if (t.startsWith("-") && t.length > 1) {
      for (let k = 1; k < t.length; k++) {
        const c = t[k]!;
        if (withArg.includes(c)) {
          const rest = t.slice(k + 1);
          letter(c, () => w[++i], rest || null);
          break;
        }
        letter(c, () => undefined, null);
      }
    }
  }
  return out;
}

// -- find --

export function findAnalysis(p: CommandPart): FindAnalysis {
  return analyzeFind(p.words);
}

// -- sed --

/** The scripts a sed command runs: -e values, or its first operand. */
export function sedScripts(p: CommandPart): ShellWord[] {
  const o = getopt(p.words, 1, { short: "efl", long: ["expression", "file", "line-length"] });
  const e = val(o, "e", "expression");
  if (e.length || val(o, "f", "file").length) return e;
  return o.operands.slice(0, 1);
}

/** What a sed script does beyond editing text: files it writes (`w`), commands it runs (`e`). */
export function scanSed(script: string): { writes: string[]; exec: string[]; execPatternSpace: boolean; unknown: boolean } {
  const out = { writes: [] as string[], exec: [] as string[], execPatternSpace: false, unknown: false };
  let i = 0;
  const s = script;
  const toEol = () => {
    const j = s.indexOf("\n", i);
    const r = s.slice(i, j < 0 ? s.length : j);
    i = j < 0 ? s.length : j + 1;
    return r;
  };
  const skipRe = (delim: string) => {
    for (; i < s.length; i++) {
      if (s[i] === "\\") i++;
      else if (s[i] === delim) {
        i++;
        return true;
      } else if (s[i] === "\n") return false;
    }
    return false;
  };
  const address = () => {
    if (/[0-9]/.test(s[i] ?? "")) while (/[0-9~]/.test(s[i] ?? "")) i++;
    else if (s[i] === "$") i++;
    else if (s[i] === "/") {
      i++;
      skipRe("/");
      while (/[IM]/.test(s[i] ?? "")) i++;
    } else if (s[i] === "\\") {
      const d = s[i + 1] ?? "";
      i += 2;
      skipRe(d);
      while (/[IM]/.test(s[i] ?? "")) i++;
    } else return false;
    return true;
  };
  while (i < s.length) {
    while (i < s.length && /[\s;]/.test(s[i]!)) i++;
    if (i >= s.length) break;
    if (address()) {
      while (s[i] === " ") i++;
      if (s[i] === ",") {
        i++;
        while (s[i] === " ") i++;
        if (s[i] === "+" || s[i] === "~") i++;
        address();
      }
    }
    while (s[i] === " " || s[i] === "!") i++;
    const c = s[i++];
    if (c === undefined) break;
    switch (c) {
      case "{":
      case "}":
      case "=":
      case "d":
      case "D":
      case "g":
      case "G":
      case "h":
      case "H":
      case "n":
      case "N":
      case "p":
      case "P":
      case "x":
      case "z":
      case "F":
        break;
      case "#":
      case ":":
        toEol();
        break;
      case "a":
      case "i":
      case "c": {
        // Text up to an unescaped end of line (GNU one-liner or classic `a\` form).
        for (; i < s.length; i++) {
          if (s[i] === "\\") i++;
          else if (s[i] === "\n") break;
        }
        break;
      }
      case "b":
      case "t":
      case "T":
      case "l":
      case "L":
      case "q":
      case "Q":
      case "v":
        while (i < s.length && s[i] !== ";" && s[i] !== "\n" && s[i] !== "}") i++;
        break;
      case "r":
      case "R":
        toEol();
        break;
      case "w":
      case "W":
        out.writes.push(toEol().trim());
        break;
      case "e": {
        const cmd = toEol().trim();
        if (cmd) out.exec.push(cmd);
        else out.execPatternSpace = true;
        break;
      }
      case "s":
      case "y": {
        const d = s[i++];
        if (d === undefined || d === "\n" || d === "\\") {
          out.unknown = true;
          return out;
        }
        if (!skipRe(d) || !skipRe(d)) {
          out.unknown = true;
          return out;
        }
        if (c === "s") {
          while (i < s.length && /[gpiImMe0-9w]/.test(s[i]!)) {
            const flag = s[i++]!;
            if (flag === "e") out.execPatternSpace = true;
            if (flag === "w") {
              out.writes.push(toEol().trim());
              break;
            }
          }
        }
        break;
      }
      default:
        out.unknown = true;
        return out;
    }
  }
  return out;
}

// -- awk --

export function awkCall(p: CommandPart): { program: ShellWord | null; files: ShellWord[]; inplace: boolean } {
  const o = getopt(p.words, 1, { short: "fvFilEWe", long: ["file", "assign", "field-separator", "include", "load", "source", "exec"] });
  const inplace = val(o, "i", "include").some((x) => x.text === "inplace" || x.text === "inplace.awk");
  const src = val(o, "source", "e")[0];
  if (src) return { program: src, files: o.operands, inplace };
  if (val(o, "f", "file", "E", "exec").length) return { program: null, files: o.operands, inplace };
  return { program: o.operands[0] ?? null, files: o.operands.slice(1), inplace };
}

// ---- inline code: strings that reach a shell ----

/** Calls that hand a string to a shell or run a program, per language. */
const SHELL_OUT = /\b(os\s*\.\s*(system|popen|exec\w*|spawn\w*|posix_spawn\w*)|subprocess|pty\s*\.\s*spawn|commands\s*\.\s*getoutput|child_process|exec(Sync|FileSync|File)?\s*\(|spawn(Sync)?\s*\(|system\s*\(|popen|shell_exec|passthru|proc_open|IO\s*\.\s*popen|Open3|Kernel\s*\.\s*(system|exec|spawn)|Deno\s*\.\s*(run|Command)|Bun\s*\.\s*spawn|getline|\$\()/;

/** String literals of inline code, plus lists of string literals joined as one command line. */
export function codeStrings(code: string): string[] {
  const out: string[] = [];
  const lit = /'''([\s\S]*?)'''|"""([\s\S]*?)"""|'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`/g;
  const unescape = (s: string) => s.replace(/\\(.)/g, (_m, c: string) => ({ n: "\n", t: "\t" })[c] ?? c);
  for (const m of code.matchAll(lit)) {
    const s = m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5] ?? "";
    out.push(unescape(s));
  }
  // ['sudo', 'id'] / ("rm", "-rf", "/") → one command line
  const list = /[[(]\s*((?:(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\s*,\s*)+(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\s*,?\s*)[\])]/g;
  for (const m of code.matchAll(list)) {
    const items = [...m[1]!.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"/g)].map((x) => unescape(x[1] ?? x[2] ?? ""));
    out.push(items.map((s) => `'${s.replace(/'/g, "'\\''")}'`).join(" "));
  }
  // 'git', ['push'] (execFile/spawn: program, then its arguments) → one command line
  const progThenList = /(?:'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)")\s*,\s*\[\s*((?:(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")\s*,?\s*)*)\]/g;
  for (const m of code.matchAll(progThenList)) {
    const items = [m[1] ?? m[2] ?? "", ...[...m[3]!.matchAll(/'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"/g)].map((x) => x[1] ?? x[2] ?? "")].map(unescape);
    out.push(items.map((s) => `'${s.replace(/'/g, "'\\''")}'`).join(" "));
  }
  return out;
}

/** True when inline code can run a program through a shell (so its strings are worth checking as commands). */
export function shellsOut(code: string, kind: InterpreterKind | "awk"): boolean {
  if (SHELL_OUT.test(code)) return true;
  if ((kind === "perl" || kind === "ruby" || kind === "php") && (code.includes("`") || /\bqx\s*[({[/|!]/.test(code) || /%x[({[]/.test(code))) return true;
  if (kind === "awk" && /\|/.test(code)) return true;
  return false;
}

