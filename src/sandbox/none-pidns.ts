import { spawnSync } from "node:child_process";
import { findProgram } from "./find-program.js";

// Level "none" isolates nothing, but it still promises that a command's processes end with it.
// Process groups, cgroups and the LEDGERLOOP_COMMAND tag can all be left by the command itself: a
// daemon running as root can write its pid into a cgroup's `tasks` file at the top of each
// hierarchy, `setsid`, double-fork and drop the variable from its environment. A PID namespace
// cannot be left: when its first process exits, the kernel kills every process in it, and nothing
// inside can signal the first process (SIGKILL from inside is dropped) or the `unshare` above it
// (not visible from inside). So at "none", where the runner may create one (root), each command
// runs in a fresh PID namespace with its own /proc (hence a mount namespace, receiving the host's
// mounts); files, network, uid and everything else stay the host's.

/**
 * The first process of the namespace is a `sh` that runs the command as its child and exits with
 * its status. Not the command itself: the first process of a PID namespace ignores every signal it
 * has no handler for (`kill $$`, the timeout's SIGTERM), which would change how commands behave.
 * `; exit $?` keeps sh from exec'ing the command in its place.
 */
const INIT_SCRIPT = '"$@"; exit $?';

let cached: { prefix: string[] | null; reason: string } | undefined;

/**
 * The argv prefix that runs a level-"none" command in its own PID namespace, or null where this
 * process cannot create one (not root, no `unshare`, or namespaces refused); checked once.
 */
export function noneNamespacePrefix(sh: string): { prefix: string[] | null; reason: string } {
  if (cached) return cached;
  const unshare = process.platform === "linux" ? findProgram("unshare") : undefined;
  if (!unshare) {
    cached = { prefix: null, reason: process.platform === "linux" ? "unshare (util-linux) not found" : `not Linux (${process.platform})` };
    return cached;
  }
  const prefix = [unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "--propagation", "slave", "--", sh, "-c", INIT_SCRIPT, "ledgerloop-init"];
  const probe = spawnSync(prefix[0]!, [...prefix.slice(1), sh, "-c", "exit 7"], { encoding: "utf8", timeout: 10_000 });
  cached =
    probe.status === 7
      ? {
          prefix,
          reason: "each command runs in its own PID namespace: every process it starts ends with it (not ones a host service such as cron starts for it)",
        }
      : {
          prefix: null,
          reason: `no PID namespace for commands (${(probe.stderr || probe.error?.message || `exit ${probe.status}`).trim().split("\n")[0]}): a process that leaves the command's process group, cgroups and tree, and drops LEDGERLOOP_COMMAND from its environment, can outlive the command`,
        };
  return cached;
}
