import { execa } from "execa";
import { z } from "zod";
import { commandEnv } from "../src/sandbox/executor.js";
import { resolveInWorkspace } from "../src/workspace/paths.js";
import { defineTool, toolError } from "./tool.js";

export const GitCommitArgs = z
  .object({
    message: z.string().trim().min(1).max(5000).describe("The commit message."),
    paths: z
      .array(z.string().min(1))
      .min(1)
      .max(500)
      .optional()
      .describe("Files or directories to stage, relative to the workspace root (default: every change in the workspace)."),
  })
  .strict();
export type GitCommitArgs = z.infer<typeof GitCommitArgs>;

/**
 * Settings every git call of the runtime carries. The repository's configuration is the user's
 * (commands cannot change `.git`), but its hooks would run workspace code the agent wrote on the
 * host, outside the sandbox: the runtime's git runs none.
 */
const HARDENED = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgSign=false"];

async function git(workspace: string, args: string[], extra: string[] = []) {
  return execa("git", [...HARDENED, ...extra, ...args], {
    cwd: workspace,
    // The runner's environment may carry GIT_DIR, GIT_CONFIG_* or credentials: none of it applies.
    env: { ...commandEnv(), GIT_TERMINAL_PROMPT: "0", GIT_OPTIONAL_LOCKS: "0" },
    extendEnv: false,
    reject: false,
    timeout: 60_000,
  });
}

/**
 * Stages and commits in the workspace's repository. Commands cannot (`.git` is read-only to them,
 * so that nothing they do can make the user's git run code): the runtime does it for them, on the
 * host, with hooks off.
 */
export const gitCommitTool = defineTool({
  name: "git_commit",
  description:
    "Stage changes and commit them to the workspace's git repository (hooks are not run). Use this instead of " +
    "`git add`/`git commit` in run_command: the repository is read-only to commands. Without `paths` every " +
    "change in the workspace is staged.",
  schema: GitCommitArgs,
  // A second attempt would find nothing to commit or commit twice: the model decides after a crash.
  idempotent: false,
  async run(args, ctx) {
    const inside = await git(ctx.workspace, ["rev-parse", "--is-inside-work-tree"]);
    if (inside.exitCode !== 0 || String(inside.stdout).trim() !== "true") {
      return toolError("The workspace is not inside a git repository, so there is nothing to commit to.", "not_a_repository");
    }
    // Paths are confined like every file tool's; "." keeps a workspace that is a subdirectory of a
    // larger repository from staging files outside it.
    const paths = (args.paths ?? ["."]).map((p) => resolveInWorkspace(ctx.workspace, p).rel);
    const add = await git(ctx.workspace, ["add", "-A", "--", ...paths]);
    if (add.exitCode !== 0) return toolError(`git add failed: ${String(add.stderr).trim() || `exit ${add.exitCode}`}`, "git_error");
    const staged = await git(ctx.workspace, ["diff", "--cached", "--name-only"]);
    const files = String(staged.stdout).split("\n").filter(Boolean);
    if (files.length === 0) return toolError("Nothing to commit: the given paths have no changes.", "nothing_to_commit");
    const who = await git(ctx.workspace, ["config", "user.email"]);
    const identity = String(who.stdout).trim() ? [] : ["-c", "user.name=ledgerloop agent", "-c", "user.email=ledgerloop@localhost"];
    const commit = await git(ctx.workspace, ["commit", "--no-verify", "-q", "-m", args.message], identity);
    if (commit.exitCode !== 0) return toolError(`git commit failed: ${String(commit.stderr).trim() || `exit ${commit.exitCode}`}`, "git_error");
    const head = await git(ctx.workspace, ["rev-parse", "--short", "HEAD"]);
    return {
      status: "ok",
      output: `Committed ${files.length} file${files.length === 1 ? "" : "s"} as ${String(head.stdout).trim()}: ${files.slice(0, 20).join(", ")}${files.length > 20 ? ", …" : ""}`,
    };
  },
});
