import { confined } from "./confined.js";
import path from "node:path";
import { IgnoreChecker } from "./ignore-check.js";
import { diffSnapshots, fileStatsOf, type FileChanges } from "./files.js";
import { statWalk, type StatEntry, type StatWalk } from "./walk.js";

// One walk per step. A step's revision needs a walk after its actions; a command's feedback needs
// the files before and after it. The tracker keeps the newest walk, so the walk after a command is
// the one the step's revision reads, and the walk the previous step's revision made is the state a
// command starts from: a step that runs one command walks the tree once instead of three times.
//
// A kept walk stays true while only the runtime's own tools change files and say which (they call
// `touched`); any other change makes the act node drop it (`invalidate`). What it cannot see is an
// edit made by someone else between the kept walk and a command: a created or modified file is told
// apart by its timestamps (stamped before the command started: not the command's), a deletion is
// not, and is reported as the command's.

/** Changes stamped this long before a command started are not the command's (coarse file-system clocks). */
const BEFORE_COMMAND_SLACK_MS = 2000;

/** A walk the tracker keeps, numbered so a reader can tell whether it was made after some point. */
export interface KeptWalk extends StatWalk {
  seq: number;
}

/** The newest walk of one workspace, shared by command feedback and the revision store. */
export class WorkspaceTracker {
  private kept: KeptWalk | null = null;
  private seqCounter = 0;

  constructor(readonly workspace: string) {}

  /** Number of the newest walk (0 before the first); a later walk has a larger one. */
  get seq(): number {
    return this.seqCounter;
  }

  /** Walks the workspace now and keeps the result. */
  async walk(): Promise<KeptWalk> {
    const w = await statWalk(this.workspace);
    this.kept = { ...w, seq: ++this.seqCounter };
    return this.kept;
  }

  /** The kept walk when it was made after walk number `after` (and not dropped since), else a new walk. */
  async current(after = 0): Promise<KeptWalk & { reused: boolean }> {
    if (this.kept && this.kept.seq > after) return { ...this.kept, reused: true };
    return { ...(await this.walk()), reused: false };
  }

  /** Forgets the kept walk: files may have changed in ways nobody reported. */
  invalidate(): void {
    this.kept = null;
  }

  /**
   * Brings the kept walk up to date for paths the runtime itself just wrote or deleted (edit_file,
   * write_file): each is stat'ed again, without a walk. A changed ignore file changes what a walk
   * lists, so it drops the kept walk instead.
   */
  touched(rels: readonly string[]): void {
    if (!this.kept || rels.length === 0) return;
    if (rels.some((r) => path.posix.basename(r) === ".gitignore" || r.startsWith(".git/"))) {
      this.invalidate();
      return;
    }
    const ignore = new IgnoreChecker(this.workspace);
    const byRel = new Map(this.kept.entries.map((e) => [e.rel, e]));
    const ws = confined(this.workspace, { links: "never" });
    for (const rel of rels) {
      byRel.delete(rel);
      if (ignore.isIgnored(rel)) continue;
      let st;
      try {
        // No link followed on the way either: what the walk would list, nothing it would not.
        st = ws.lstatOrNull(rel) ?? undefined;
      } catch {
        st = undefined;
      }
      if (st?.isSymbolicLink()) byRel.set(rel, { rel, kind: "symlink", st });
      else if (st?.isFile()) byRel.set(rel, { rel, kind: "file", st });
    }
    const entries = [...byRel.values()].sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
    this.kept = { ...this.kept, entries };
  }
}

/**
 * Files a command created, modified and deleted: the files before it (a kept walk when the tracker
 * has one, else a walk now), `run`, then one walk after, which the tracker keeps for the step's
 * revision. Without a tracker, both walks are made here.
 */
export async function trackCommand<T>(
  workspace: string,
  tracker: WorkspaceTracker | undefined,
  run: () => Promise<T>,
): Promise<{ result: T; changes: FileChanges }> {
  const before = tracker ? await tracker.current() : { ...(await statWalk(workspace)), reused: false };
  const startedAt = Date.now();
  let result: T;
  try {
    result = await run();
  } catch (err) {
    // Whatever it did to the files before failing is unknown: the next reader walks again.
    tracker?.invalidate();
    throw err;
  }
  const after = tracker ? await tracker.walk() : await statWalk(workspace);
  const changes = await diffWalks(workspace, before.entries, after.entries);
  return { result, changes: before.reused ? madeSince(changes, fileStatsOf(workspace, after.entries), startedAt) : changes };
}

/** The one stat-level change detector of command feedback: two walks compared as {@link diffSnapshots} does. */
export function diffWalks(workspace: string, before: readonly StatEntry[], after: readonly StatEntry[]): Promise<FileChanges> {
  return diffSnapshots(workspace, fileStatsOf(workspace, before), fileStatsOf(workspace, after));
}

/** Drops created and modified files whose timestamps say they changed before `startedAt`. */
function madeSince(changes: FileChanges, after: Map<string, { mtimeMs: number; ctimeMs?: number }>, startedAt: number): FileChanges {
  const recent = (rel: string) => {
    const st = after.get(rel);
    return !st || Math.max(st.mtimeMs, st.ctimeMs ?? st.mtimeMs) >= startedAt - BEFORE_COMMAND_SLACK_MS;
  };
  return { created: changes.created.filter(recent), modified: changes.modified.filter(recent), deleted: changes.deleted };
}
