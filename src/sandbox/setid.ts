import { execFileSync } from "node:child_process";
import { confined } from "../workspace/confined.js";

const CLOCK_MARGIN_MS = 20;
const SLASH = 0x2f;

/**
 * Clears the set-uid and set-gid bits of workspace files changed since `sinceMs` (by ctime, which
 * chmod moves), and returns their workspace-relative paths. For commands that run as uid 0 without
 * the seccomp filter that refuses such a chmod: a set-uid root program left in the workspace would
 * outlive the sandbox and hand root to anyone on the host who can reach it.
 *
 * `find` walks the whole workspace, ignored directories included (node_modules is where a hostile
 * install script would hide one); it does not cross into other filesystems. A process of the agent
 * may still be running (a background one) and swap any name for a symlink to a host file between
 * the walk and the chmod: so each file is reached through the confined reader (no symlink followed,
 * not even one inside), checked by fstat and changed by fchmod on that descriptor, never by path.
 */
export function clearNewSetid(workspace: string, sinceMs: number): string[] {
  let out: Buffer;
  try {
    out = execFileSync("find", [workspace, "-xdev", "-type", "f", "-perm", "/6000", "-print0"], {
      maxBuffer: 16 * 1024 * 1024,
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch (err) {
    // find exits non-zero on an unreadable directory but still lists what it found.
    const stdout = (err as { stdout?: unknown }).stdout;
    out = Buffer.isBuffer(stdout) ? stdout : Buffer.alloc(0);
  }
  const ws = confined(workspace, { links: "never" });
  const prefix = Buffer.from(workspace.endsWith("/") ? workspace : `${workspace}/`);
  const cleared: string[] = [];
  for (let start = 0; start < out.length;) {
    let end = out.indexOf(0, start);
    if (end < 0) end = out.length;
    const file = out.subarray(start, end);
    start = end + 1;
    if (file.length <= prefix.length || !file.subarray(0, prefix.length).equals(prefix) || file[prefix.length] === SLASH) continue;
    const rel = Buffer.from(file.subarray(prefix.length));
    try {
      let changed = false;
      ws.fchmod(rel, (s) => {
        // Older ones were there before the command (the user's own); leave them alone. File times
        // come from the kernel's coarse clock, up to a tick behind: hence the margin.
        changed = (s.mode & 0o6000) !== 0 && s.ctimeMs >= sinceMs - CLOCK_MARGIN_MS;
        return changed ? s.mode & 0o1777 : null;
      });
      if (changed) cleared.push(rel.toString("utf8"));
    } catch {
      // vanished, or swapped for a symlink or a path through one: nothing of ours to change
    }
  }
  return cleared;
}

/**
 * The set-id clean-up of background processes (start_process) that run as root: each is swept
 * when it ends, and while any runs, every command's sweep reaches back to when the oldest started
 * (what it made between two commands is as recent as anything the command made).
 */
export class BackgroundSetid {
  private live = new Map<string, Map<number, number>>();
  private seq = 0;

  /** Registers one started at `startedAt`; returns what to call once it is gone (the sweep, its result). */
  started(workspace: string, startedAt: number): () => string[] {
    const id = ++this.seq;
    let m = this.live.get(workspace);
    if (!m) this.live.set(workspace, (m = new Map()));
    m.set(id, startedAt);
    return () => {
      m.delete(id);
      if (m.size === 0) this.live.delete(workspace);
      return clearNewSetid(workspace, startedAt);
    };
  }

  /** Where a command's sweep must reach back to: `commandStart`, or earlier while one runs; null when none runs. */
  since(workspace: string, commandStart: number): number | null {
    const m = this.live.get(workspace);
    return m ? Math.min(commandStart, ...m.values()) : null;
  }
}

/** The note a command's (or background process's) output gets for what {@link clearNewSetid} cleared. */
export function setidNote(cleared: readonly string[]): string {
  return (
    `cleared the set-uid/set-gid bits of ${cleared.slice(0, 10).join(", ")}` +
    `${cleared.length > 10 ? ` and ${cleared.length - 10} more` : ""} (a command running as root may not leave privileged programs behind)`
  );
}
