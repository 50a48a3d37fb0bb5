import { z } from "zod";
import { hostGit, isRepo, locateRepo, userIdentity, type HostRepo } from "../../workspace/host-git.js";
import { resolveInWorkspace } from "../../workspace/paths.js";
import { builtinTool } from "../../tool-catalogue.js";
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

/** git in the workspace's repository, started the one host-safe way (workspace/host-git.ts). */
async function git(repo: HostRepo, cwd: string, args: string[], config: Array<[string, string]> = []) {
  const r = await hostGit(repo, args, { cwd, config, timeoutMs: 60_000 });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.spawnError ?? r.stderr };
}

/**
 * Stages and commits in the workspace's repository. Commands cannot (`.git` is read-only to them,
 * so that nothing they do can make the user's git run code): the runtime does it for them, on the
 * host, with hooks off.
 */
export const gitCommitTool = defineTool({
  ...builtinTool("git_commit"),
  description:
    "Stage changes and commit them to the workspace's git repository (hooks are not run). Use this instead of " +
    "`git add`/`git commit` in run_command: the repository is read-only to commands. Without `paths` every " +
    "change in the workspace is staged.",
  schema: GitCommitArgs,
  // A second attempt would find nothing to commit or commit twice: the model decides after a crash.
  idempotent: false,
  async run(args, ctx) {
    const repo = locateRepo(ctx.workspace);
    const inside = isRepo(repo) ? await git(repo, ctx.workspace, ["rev-parse", "--is-inside-work-tree"]) : null;
    if (!isRepo(repo) || !inside || inside.exitCode !== 0 || String(inside.stdout).trim() !== "true") {
      return toolError("The workspace is not inside a git repository, so there is nothing to commit to.", "not_a_repository");
    }
    // Paths are confined like every file tool's and taken literally (no pathspec magic: `:(top)` is a
    // file name); "." keeps a workspace that is a subdirectory of a larger repository from staging
    // or committing files outside it.
    const paths = (args.paths ?? ["."]).map((p) => resolveInWorkspace(ctx.workspace, p).rel);
    const add = await git(repo, ctx.workspace, ["add", "-A", "--", ...paths]);
    if (add.exitCode !== 0) return toolError(`git add failed: ${String(add.stderr).trim() || `exit ${add.exitCode}`}`, "git_error");
    const staged = await git(repo, ctx.workspace, ["diff", "--cached", "--name-only", "--", ...paths]);
    const files = String(staged.stdout).split("\n").filter(Boolean);
    if (files.length === 0) return toolError("Nothing to commit: the given paths have no changes.", "nothing_to_commit");
    // The repository's identity, else the user's global one (read from their own file), else ours.
    const who = await git(repo, ctx.workspace, ["config", "user.email"]);
    const user = String(who.stdout).trim() ? null : await userIdentity();
    const identity: Array<[string, string]> = String(who.stdout).trim()
      ? []
      : [
          ["user.name", user?.name ?? "ledgerloop agent"],
          ["user.email", user?.email ?? "ledgerloop@localhost"],
        ];
    // `-- paths` commits only those paths: what the user staged elsewhere in the repository stays staged.
    const commit = await git(repo, ctx.workspace, ["commit", "--no-verify", "-q", "-m", args.message, "--", ...paths], identity);
    if (commit.exitCode !== 0) return toolError(`git commit failed: ${String(commit.stderr).trim() || `exit ${commit.exitCode}`}`, "git_error");
    const head = await git(repo, ctx.workspace, ["rev-parse", "--short", "HEAD"]);
    return {
      status: "ok",
      output: `Committed ${files.length} file${files.length === 1 ? "" : "s"} as ${String(head.stdout).trim()}: ${files.slice(0, 20).join(", ")}${files.length > 20 ? ", …" : ""}`,
    };
  },
});
