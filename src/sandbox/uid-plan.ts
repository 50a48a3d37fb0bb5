import fs from "node:fs";
import path from "node:path";

// Which uid a sandboxed command runs as: the runner, the workspace's owner, or uid 0 without
// capabilities in a user namespace. Every isolation level asks this before it wraps a command.

/** uid the sandboxed command runs as; see planUid. */
export interface UidPlan {
  /**
   * - `self`: the runner is not root; the command runs as the runner.
   * - `owner`: the runner is root and the workspace belongs to another user: the command runs as
   *   that user (real uid), so RLIMIT_NPROC applies and new files belong to the owner.
   * - `root-userns`: runner and workspace are root's: the command runs in a user namespace as
   *   uid 65534 inside, which is uid 0 *without any capability* on the host, so files it creates
   *   belong to root like the rest of the workspace.
   */
  kind: "self" | "owner" | "root-userns";
  uid: number;
  gid: number;
  /** Home directory of `uid` (for HOME), when known. */
  home?: string;
  reason: string;
}

/** The uid of the runner (0 on platforms without getuid). */
export function runnerUid(): number {
  return typeof process.getuid === "function" ? process.getuid() : 0;
}

function passwdEntry(uid: number): { home: string } | null {
  try {
    for (const line of fs.readFileSync("/etc/passwd", "utf8").split("\n")) {
      const f = line.split(":");
      if (f.length >= 7 && Number(f[2]) === uid) return { home: f[5]! };
    }
  } catch {
    // no passwd file
  }
  return null;
}

/** Whether `uid` (without supplementary groups) can reach `dir`: every ancestor searchable. */
export function traversable(dir: string, uid: number, gid: number): boolean {
  let cur = path.resolve(dir);
  for (;;) {
    let st: fs.Stats;
    try {
      st = fs.statSync(cur);
    } catch {
      return false;
    }
    const bit = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
    if (!(st.mode & bit)) return false;
    const up = path.dirname(cur);
    if (up === cur) return true;
    cur = up;
  }
}

/**
 * Chooses the uid a command runs as. Running a root runner's commands as a real non-root uid
 * needs someone else to own the workspace: a root-owned workspace is only writable by uid 0 (short
 * of chown-ing it back and forth, which costs a tree walk per command), so there the command keeps
 * uid 0 but loses every capability inside a user namespace. The price is that RLIMIT_NPROC does not
 * bind uid 0, hence the pids cgroup, and that root-owned unix sockets would stay reachable, hence
 * the private /run and the masking of other host sockets.
 */
export function planUid(workspace: string, uid: number = runnerUid()): UidPlan {
  if (uid !== 0) {
    return { kind: "self", uid, gid: process.getgid?.() ?? uid, home: passwdEntry(uid)?.home, reason: `runner is uid ${uid}: commands run as the runner` };
  }
  let st: fs.Stats | null = null;
  try {
    st = fs.statSync(workspace);
  } catch {
    st = null;
  }
  if (st && st.uid !== 0) {
    if (traversable(workspace, st.uid, st.gid)) {
      return {
        kind: "owner",
        uid: st.uid,
        gid: st.gid,
        home: passwdEntry(st.uid)?.home,
        reason: `runner is root, workspace belongs to uid ${st.uid}: commands run as uid ${st.uid}`,
      };
    }
    return {
      kind: "root-userns",
      uid: 0,
      gid: 0,
      reason: `runner is root and the workspace belongs to uid ${st.uid}, who cannot reach it: commands run as uid 0 without capabilities`,
    };
  }
  return {
    kind: "root-userns",
    uid: 0,
    gid: 0,
    reason: "runner and workspace are root's: commands run as uid 0 without capabilities",
  };
}
