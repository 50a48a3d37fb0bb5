import { gitHead, gitRun } from "./git-log.js";

/**
 * One line for `doctor`: what history the search can read in this workspace (how many commits,
 * whether the clone is shallow and so only partly there), or why it is off. Never an error: a
 * workspace without git simply has no history source.
 */
export async function describeHistory(workspace: string): Promise<string> {
  const h = await gitHead(workspace);
  if (h.head === null) return `off: ${h.reason} (search uses the code only)`;
  const count = await gitRun(workspace, ["rev-list", "--count", "HEAD"], 10_000);
  // A damaged .git (a corrupt or missing object) fails the count: the search uses the commits git
  // reads before the damage.
  if ("error" in count && !count.timedOut)
    return `damaged: git cannot walk the history from HEAD ${h.head.slice(0, 12)} (${count.error}); the search uses the newest commits, read before the damage (git fsck names what is broken)`;
  const n = "stdout" in count ? `${count.stdout.trim()} commit(s) readable` : `commit count not known (${count.error})`;
  return h.shallow
    ? `shallow clone: ${n}; only the history present is used (git fetch --unshallow gives the search more to go on)`
    : `${n} from HEAD ${h.head.slice(0, 12)} (read newest first, within the historyMaxCommits cap)`;
}
