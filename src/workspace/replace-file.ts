import { isRunning } from "../proc.js";
import { confined, type ConfinedDir } from "./confined.js";
import { assertWritable } from "./paths.js";

// Why tools never write into an existing file in place: a file's inode can have other names (hard
// links) outside the workspace (pnpm's store links every package file into node_modules), and an
// in-place write changes every name at once. Replacing the name instead (temp file in the same
// directory, fsync, rename over it) gives the workspace name a new inode and leaves the others alone.
// It is also all-or-nothing after a crash, which keeps edit_file's retry guard (hashes of the whole
// file before and after) from ever seeing a half-written file.
//
// And why by descriptor: between the tool's path check and the write, a background process of the
// agent may swap a directory on the way for a symlink to the host. So the path is resolved once
// through the confined reader (links followed while they stay inside: a link's target is what gets
// written, the link stays a link), and the write then goes to that place with no link followed at all.

/**
 * Replaces the content of the file at workspace-relative `rel` (created when missing, with its
 * directories) by renaming a fully written and fsync'd temp file over it, keeping the old file's
 * mode (and owner, where the process may set it). Throws PathEscapeError when a symlink leads out
 * (or was swapped in since), the errno error of the step that failed otherwise (EISDIR, EACCES…).
 */
export async function replaceFile(workspace: string, rel: string, data: string | Buffer): Promise<void> {
  const target = confined(workspace).resolve(rel);
  // The real place may differ from the spelled one (a link inside): it must be writable too.
  assertWritable(target.toString("utf8"));
  const ws = confined(workspace, { links: "never" });
  removeStaleTemps(ws, target);
  ws.writeFile(target, data, { mkdirs: true, keepOwner: true });
}

const tempPrefix = (base: Buffer) => Buffer.concat([Buffer.from("."), base.subarray(0, 180), Buffer.from(".ll-write-")]);

/**
 * Removes the temp files an earlier write of this file left when its process died between writing
 * the temp file and renaming it (a kill -9, a worker taken over): the re-run of that write would
 * otherwise leave a stray `.name.ll-write-…` next to the file. Only temps of processes that are
 * gone are touched (one writer per workspace holds the lease, so a live one is this process).
 */
function removeStaleTemps(ws: ConfinedDir, target: Buffer): void {
  const slash = target.lastIndexOf(0x2f);
  const dir = slash < 0 ? Buffer.from(".") : target.subarray(0, slash);
  const prefix = tempPrefix(target.subarray(slash + 1));
  let names: Buffer[];
  try {
    names = ws
      .readdir(dir)
      .map((e) => e.name)
      .filter((n) => n.subarray(0, prefix.length).equals(prefix));
  } catch {
    return;
  }
  for (const n of names) {
    const pid = Number(/^(\d+)-/.exec(n.subarray(prefix.length).toString("latin1"))?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || isRunning(pid)) continue;
    try {
      ws.rm(Buffer.concat([dir, Buffer.from("/"), n]), { force: true });
    } catch {
      // gone, or a link on the way now: not ours to remove
    }
  }
}
