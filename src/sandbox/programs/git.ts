/**
 * git. Reading the repository is allowed; `git add`/`commit` are the git_commit tool's (.git is
 * read-only to commands); pushing, configuration (`config`, `-c`, `--exec-path`) and remotes are
 * refused; fetching is a network use; what rewrites the tree or history, runs other programs or is
 * unknown (aliases) is asked. Output files (`archive -o`, `format-patch -o`, `diff --output`) are
 * judged by path.
 */
import type { CommandPart } from "../command-parts.js";
import { getopt, val } from "./options.js";
import { allowed, type Finding, finding, network, type ProgramSpec, q, type RuleEnv } from "./types.js";

const GIT_READ = new Set([
  "status",
  "diff",
  "log",
  "show",
  "blame",
  "annotate",
  "rev-parse",
  "ls-files",
  "ls-tree",
  "cat-file",
  "describe",
  "shortlog",
  "grep",
  "merge-base",
  "name-rev",
  "rev-list",
  "show-ref",
  "for-each-ref",
  "check-ignore",
  "check-attr",
  "check-ref-format",
  "check-mailmap",
  "count-objects",
  "version",
  "help",
  "diff-tree",
  "diff-files",
  "diff-index",
  "whatchanged",
  "var",
  "range-diff",
  "show-branch",
  "cherry",
  "verify-commit",
  "verify-tag",
  "fsck",
  "archive",
  "get-tar-commit-id",
  "column",
  "stripspace",
]);
const GIT_NETWORK = new Set(["fetch", "pull", "clone", "ls-remote", "submodule"]);
const GIT_WRITE = new Set([
  "checkout",
  "switch",
  "restore",
  "reset",
  "merge",
  "rebase",
  "cherry-pick",
  "revert",
  "rm",
  "mv",
  "clean",
  "am",
  "apply",
  "notes",
  "gc",
  "prune",
  "repack",
  "bisect",
  "init",
  "update-index",
  "update-ref",
  "symbolic-ref",
  "filter-branch",
  "filter-repo",
  "replace",
  "commit-tree",
  "write-tree",
  "hash-object",
  "mktag",
  "mktree",
  "read-tree",
  "checkout-index",
  "sparse-checkout",
  "maintenance",
  "lfs",
  "format-patch",
  "difftool",
  "mergetool",
  "citool",
  "gui",
  "pack-refs",
  "commit-graph",
  "multi-pack-index",
  "bundle",
  "fast-import",
  "unpack-objects",
  "merge-file",
  "merge-tree",
  "rerere",
  "backfill",
]);
const BRANCH_LIST_FLAGS = new Set([
  "-a",
  "--all",
  "-r",
  "--remotes",
  "-v",
  "-vv",
  "--verbose",
  "--list",
  "-l",
  "--show-current",
  "-i",
  "--ignore-case",
  "--no-color",
  "--color",
  "--column",
  "--no-column",
  "--no-abbrev",
  "-q",
  "--quiet",
  "--omit-empty",
]);
const BRANCH_LIST_VALUE = new Set(["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"]);

function decideGit(p: CommandPart, env: RuleEnv): Finding {
  const w = p.words;
  let i = 1;
  for (; i < w.length; i++) {
    const t = w[i]!.text;
    if (!w[i]!.literal) return finding("ask", "git.unknown", `${q(p.text)}: the git options are computed at run time, so what it does cannot be checked`);
    if (!t.startsWith("-")) break;
    if (t === "-c" || t.startsWith("--config-env") || /^-c.+/.test(t)) {
      return finding(
        "deny",
        "git.config-override",
        `${q(p.text)} overrides git configuration on the command line (-c can point core.hooksPath, core.sshCommand, aliases or pagers at any program); run git without -c`,
      );
    }
    if (t.startsWith("--exec-path="))
      return finding("deny", "git.config-override", `${q(p.text)} makes git run its helpers from another directory; run git without --exec-path`);
    if (t === "-C" || t.startsWith("--git-dir") || t.startsWith("--work-tree")) {
      const inline = t.includes("=") ? t.slice(t.indexOf("=") + 1) : null;
      const dir = inline !== null ? inline : w[++i]?.text;
      const d = w[i];
      if (dir === undefined || !d?.literal) return finding("ask", "git.outside", `${q(p.text)}: the repository location is computed at run time`);
      const bases = dir.startsWith("/") ? ["/"] : p.cwd;
      if (!bases || bases.some((b) => !env.judge.isInside(env.judge.physical(b, dir)))) {
        return finding("ask", "git.outside", `${q(p.text)} works on a repository outside the workspace, which needs the user's approval`);
      }
      continue;
    }
    if (["--namespace", "--super-prefix", "--list-cmds", "--attr-source"].includes(t)) i++;
  }
  const sub = w[i]?.text;
  if (sub === undefined) return allowed(p, "git.read");
  const args = w.slice(i + 1).map((x) => x.text);
  const readOnly = (why = "reads the repository") => finding("allow", "git.read", `${q(`git ${sub}`)} ${why}`);
  const write = () =>
    finding("ask", "git.write", `${q(p.text)} changes the working tree, branches or history beyond \`git add\`/\`git commit\`; it needs the user's approval`);
  switch (sub) {
    case "add":
    case "stage":
    case "commit":
      // .git is read-only to every command (git-guard.ts): the git_commit tool does this on the host.
      return finding(
        "deny",
        "git.commit",
        `${q(`git ${sub}`)} cannot work here: the repository is read-only to commands. Use the git_commit tool, which stages and commits for you`,
      );
    case "push":
    case "send-email":
    case "request-pull":
      if (sub === "request-pull") return readOnly();
      return finding("deny", "git.push", `${q(p.text)} publishes to a remote; pushing is left to the user. Commit locally and report what to push`);
    case "config": {
      const reads = [
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "-l",
        "get",
        "list",
        "--show-origin",
        "--show-scope",
        "--name-only",
        "--null",
        "-z",
        "--type",
        "--default",
        "--global",
        "--local",
        "--system",
        "--worktree",
        "--file",
        "-f",
        "--includes",
        "--no-includes",
      ];
      const writes = [
        "--unset",
        "--unset-all",
        "--add",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "-e",
        "--edit",
        "set",
        "unset",
        "rename-section",
        "remove-section",
        "edit",
      ];
      const operands = args.filter((a) => !a.startsWith("-"));
      if (args.some((a) => writes.includes(a) || a.startsWith("--edit"))) break;
      if (
        args.some((a) => ["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list"].includes(a)) ||
        (operands.length === 1 && args.every((a) => !a.startsWith("-") || reads.includes(a)))
      ) {
        return readOnly("reads the configuration");
      }
      break;
    }
    case "remote": {
      const op = args.find((a) => !a.startsWith("-"));
      if (op === undefined || op === "get-url") return readOnly();
      if (["add", "set-url", "rename", "remove", "rm"].includes(op)) {
        return finding("deny", "git.remote", `${q(p.text)} changes where the repository fetches from and pushes to; leave remotes to the user`);
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
      if (
        args.length === 0 ||
        args.some((a) => a === "-l" || a === "--list") ||
        args.every((a) => /^(-n\d*|--(contains|no-contains|points-at|merged|no-merged|sort|format|column|no-column|color)(=.*)?|-i|--ignore-case)$/.test(a))
      ) {
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
        return finding("ask", "git.exec", `${q(p.text)} opens the matches with a program named in the command; it needs the user's approval`);
      }
      return readOnly("searches the repository");
    case "hook":
      return finding("ask", "git.exec", `${q(p.text)} runs repository hooks directly; it needs the user's approval`);
    default:
      if (GIT_READ.has(sub)) return readOnly();
      if (GIT_NETWORK.has(sub)) {
        if (sub === "submodule" && (args[0] === undefined || args[0] === "status" || args[0] === "summary" || args[0] === "foreach")) {
          if (args[0] === "foreach") return finding("ask", "git.exec", `${q(p.text)} runs a command in every submodule; it needs the user's approval`);
          return readOnly();
        }
        return network(env, "git.network", `${q(p.text)} contacts a remote repository`);
      }
      if (GIT_WRITE.has(sub)) return write();
      return finding(
        "ask",
        "git.unknown",
        `${q(p.text)}: \`git ${sub}\` is not a git command the policy knows (it may be an alias); it needs the user's approval`,
      );
  }
  return finding(
    "deny",
    "git.config",
    `${q(p.text)} changes git configuration (hooks, pagers, credentials and aliases live there); leave configuration to the user`,
  );
}

const GIT_OUTPUT = { short: "o", long: ["output", "output-directory"] };

export const GIT_SPECS: ProgramSpec[] = [
  {
    names: ["git"],
    options: GIT_OUTPUT,
    decide: decideGit,
    writes(p) {
      const o = getopt(p.words, 1, GIT_OUTPUT);
      const sub = o.operands[0]?.text;
      if (sub === "archive" || sub === "format-patch" || sub === "diff" || sub === "log" || sub === "show")
        return val(o, "o", "output", "output-directory").map((word) => ({ word, kind: {}, rm: false }));
      return [];
    },
  },
];
