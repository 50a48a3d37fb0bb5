import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const CLOCK_MARGIN_MS = 20;

/**
 * Clears the set-uid and set-gid bits of workspace files changed since `sinceMs` (by ctime, which
 * chmod moves), and returns their workspace-relative paths. For commands that run as uid 0 without
 * the seccomp filter that refuses such a chmod: a set-uid root program left in the workspace would
 * outlive the sandbox and hand root to anyone on the host who can reach it.
 *
 * `find` walks the whole workspace, ignored directories included (node_modules is where a hostile
 * install script would hide one); it does not cross into other filesystems.
 */
export function clearNewSetid(workspace: string, sinceMs: number): string[] {
  let out = "";
  try {
    out = execFileSync("find", [workspace, "-xdev", "-type", "f", "-perm", "/6000", "-print0"], {
      encoding: "utf8",
      maxBuffer: 16 * 1024 * 1024,
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch (err) {
    // find exits non-zero on an unreadable directory but still lists what it found.
    out = String((err as { stdout?: unknown }).stdout ?? "");
  }
  const cleared: string[] = [];
  for (const file of out.split("\0").filter(Boolean)) {
    try {
      const st = fs.lstatSync(file);
      // Older ones were there before the command (the user's own); leave them alone. File times
      // come from the kernel's coarse clock, up to a tick behind: hence the margin.
      if (!st.isFile() || st.ctimeMs < sinceMs - CLOCK_MARGIN_MS) continue;
      fs.chmodSync(file, st.mode & 0o1777);
      cleared.push(path.relative(workspace, file));
    } catch {
      // vanished
    }
  }
  return cleared;
}
