import { gitHead, gitOutput } from "./git-log.js";

/**
 * One line for `doctor`: what history the search can read in this workspace (how many commits,
 * whether the clone is shallow and so only partly there), or why it is off. Never an error: a
 * workspace without git simply has no history source.
 */
export async function describeHistory(workspace: string): Promise<string> {
  const h = await gitHead(workspace);
  if (h.head === null) return `off: ${h.reason} (search uses the code only)`;
  const count = (await gitOutput(workspace, ["rev-list", "--count", "HEAD"], 10_000))?.trim();
  const n = count ? `${count} commit(s) readable` : "commit count not known (git took too long)";
  return h.shallow
    ? `shallow clone: ${n}; only the history present is used (git fetch --unshallow gives the search more to go on)`
    : `${n} from HEAD ${h.head.slice(0, 12)} (read newest first, within the historyMaxCommits cap)`;
}
